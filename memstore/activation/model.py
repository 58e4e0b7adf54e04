"""What an activation takes (its parameters) and gives back (working memory, background, stats)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Annotated, Any

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    computed_field,
    model_validator,
)

from memstore.activation.projection import project
from memstore.models import LAYER_MAX, Node, Privacy, RowId, TagFilter, Unit

# Types that fire easily (a safety rule should surface on a faint cue) and
# types that need a stronger cue (plain memories and notes are many).
DEFAULT_THRESHOLDS: dict[str, float] = {
    "Safety": 0.01,
    "Constraint": 0.01,
    "Identity": 0.02,
    "Value": 0.02,
    "Lesson": 0.04,
    "Procedure": 0.04,
    "Fact": 0.05,
    "Memory": 0.08,
    "Note": 0.08,
}
# Bookkeeping types: activation reaches them (they may carry edges), but they
# are never handed to the agent as working memory.
NEVER_WORKING_MEMORY = frozenset({"InternalStateEvent", "Tag"})
# Given seed ids per activation; node types named in thresholds and never_working_memory.
MAX_SEEDS = 1000
MAX_NODE_TYPES = 1000
NodeTypeName = Annotated[str, Field(min_length=1, max_length=64)]


class ActivationParams(BaseModel):
    """The tunable constants of spreading activation (docs/activation.md).

    Every default is documented there with the formula it enters.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed_count: Annotated[int, Field(ge=1, le=100)] = 10
    """How many hybrid-recall hits of the query seed the activation."""
    similarity_floor: Unit = 0.25
    """sim(query, node) never drops below this, so an association can reach a
    node that does not resemble the query (the point of following edges)."""
    missing_similarity: Unit = 0.5
    """sim for a node without a vector for the store's embedder."""
    importance_weight: Unit = 0.5
    """salience = importance_weight × importance + (1 − importance_weight) × recency."""
    actr_threshold: Annotated[float, Field(ge=-50, le=50, allow_inf_nan=False)] = -5.0
    """τ: the base-level activation B at which recency is 0.5."""
    actr_scale: Annotated[float, Field(gt=0, le=50, allow_inf_nan=False)] = 1.0
    """s: recency = 1 / (1 + exp(−(B − τ) / s))."""
    thresholds: Annotated[dict[NodeTypeName, Unit], Field(max_length=MAX_NODE_TYPES)] = Field(
        default_factory=lambda: dict(DEFAULT_THRESHOLDS)
    )
    """Per node type: the activation a node needs to enter working memory."""
    default_threshold: Unit = 0.05
    """The threshold of a node type not in ``thresholds``."""
    never_working_memory: Annotated[frozenset[NodeTypeName], Field(max_length=MAX_NODE_TYPES)] = (
        NEVER_WORKING_MEMORY
    )
    non_suppressible_layers: frozenset[Annotated[int, Field(ge=0, le=LAYER_MAX)]] = frozenset({0})
    """Layers that a higher layer's inhibitory edge cannot suppress (0 = SAFETY)."""
    neighbour_share: Annotated[float, Field(ge=0.0, le=2.0, allow_inf_nan=False)] = 0.0
    """λ: add λ × Σ w_eff × activation of each node's excitatory in-neighbours to its
    activation (0: plain max-product spreading). On LoCoMo, where a turn's
    neighbours carry the context that answers, λ = 0.3 measured best."""
    hebbian_rate: Unit = 0.1
    """η in hebb ← hebb + η(1 − hebb), for each co-activated edge."""
    access_ring_size: Annotated[int, Field(ge=1, le=64)] = 32
    """K: the accesses remembered per node for ACT-R (the newest K)."""

    def threshold(self, node_type: str) -> float:
        return self.thresholds.get(node_type, self.default_threshold)


class ActivateRequest(BaseModel):
    """What :meth:`memstore.namespace.Namespace.activate` accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: Annotated[str, Field(min_length=1, max_length=10_000)] | None = None
    seeds: Annotated[list[RowId], Field(max_length=MAX_SEEDS)] | None = None
    depth: Annotated[int, Field(ge=0, le=6)] = 2
    fanout: Annotated[int, Field(ge=1, le=10_000)] = 16
    limit: Annotated[int, Field(ge=1, le=1000)] = 20
    learn: bool = False
    as_of: AwareDatetime | None = None
    privacy_ceiling: Privacy | None = None
    both_directions: bool = False
    session_id: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    params: ActivationParams = Field(default_factory=ActivationParams)
    tags: TagFilter = None
    """Seeds from the query and working memory carry every one of these tags."""

    @model_validator(mode="after")
    def _has_a_start(self) -> ActivateRequest:
        if self.query is None and not self.seeds:
            raise ValueError("give a query, seed node ids, or both")
        if self.query is not None and not self.query.strip():
            raise ValueError("the query must not be blank")
        return self


class PathStep(BaseModel):
    """One hop of the strongest path that activated a node: ``edge`` led into ``node_id``."""

    model_config = ConfigDict(frozen=True)

    node_id: int
    edge_id: int | None = None
    """None for the seed the path starts from."""
    relation: str | None = None
    reverse: bool = False
    """True when the edge was followed against its direction."""
    activation: float


class ActivatedItem(BaseModel):
    """A working-memory item: the node, its activation and how activation got there."""

    model_config = ConfigDict(frozen=True)

    node: Node
    score: float
    """The activation after inhibition (what working memory is ranked by)."""
    raw_score: float
    """The activation before inhibition."""
    depth: int
    """Hops from the nearest seed (0 for a seed)."""
    seed: bool
    path: list[PathStep]
    """seed → edge → … → this node, along the strongest path."""


class Reached(BaseModel):
    """A node the activation reached (the background), with its activation."""

    model_config = ConfigDict(frozen=True)

    id: int
    activation: float
    raw_activation: float
    depth: int
    layer: int
    node_type: str
    label: str | None
    tier: str | None
    seed: bool
    in_working_memory: bool
    via_edge: int | None
    """The edge of the strongest path into this node (None for a seed)."""
    via_relation: str | None
    via_node: int | None


class ActivationStats(BaseModel):
    """How big the pull was and where the time went."""

    model_config = ConfigDict(frozen=True)

    seeds: int
    nodes: int
    """Nodes reached (seeds included)."""
    edges: int
    """Edges pulled (an edge followed both ways counts twice)."""
    timings_ms: dict[str, float]
    """Per stage: seed (embed + recall), pull, score, fetch, learn."""


class Activation(BaseModel):
    """The result of :meth:`memstore.namespace.Namespace.activate`."""

    model_config = ConfigDict(frozen=True)

    query: str | None
    working_memory: list[ActivatedItem]
    """The items that crossed their type's threshold, strongest first, at most ``limit``."""
    stats: ActivationStats
    missing_vectors: int = 0
    """Current memories without a vector for the store's embedder, when the query seeded
    the activation: its recall found them by text only (docs/recall.md)."""
    missing_ids: list[int] = Field(default_factory=list)
    """The first of them (at most ten); ``memstore embed rebuild`` computes them."""
    # Builds the background on first use: a 3-hop neighbourhood has thousands
    # of nodes, and most callers read working memory only.
    _build_background: Callable[[], list[Reached]] | None = PrivateAttr(default=None)

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def background(self) -> list[Reached]:
        """Every reached node with its activation, strongest first."""
        return self._build_background() if self._build_background is not None else []

    def project(
        self, top_k: int = 12, snippet_chars: int = 600, max_bytes: int = 32768
    ) -> dict[str, Any]:
        """A compact, JSON-ready view whose serialised size never exceeds ``max_bytes``.

        The top ``top_k`` working-memory items carry UTF-8-safe snippets of at
        most ``snippet_chars`` characters; every other reached node is a
        pointer stub ``{id, label, node_type, tier, edge, pointer: true}``.
        What does not fit is counted in ``omitted``. See
        :func:`memstore.activation.projection.project`.
        """
        return project(self, top_k=top_k, snippet_chars=snippet_chars, max_bytes=max_bytes)
