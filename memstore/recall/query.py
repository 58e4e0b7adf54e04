"""What a recall asks for, validated."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from memstore.models import MAX_FILTER_ITEMS, PRIVACY_MAX, Kind, Privacy, RecallMode, TagFilter

NodeTypeName = Annotated[str, Field(min_length=1, max_length=64)]
TierName = Annotated[str, Field(min_length=1, max_length=200)]

Fusion = Literal["weighted", "rrf"]
# Share of the similarity signal in weighted fusion when the embedder does not
# say (an embedder may carry a ``semantic_weight`` attribute: a weak one should
# lean on full text). Calibrated on LoCoMo with MiniLM (docs/benchmark-notes.md)
# for plain fused recall; under graph evidence ranking.GRAPH_SEMANTIC_FACTOR
# scales whichever weight applies (MiniLM 0.5 -> 0.3).
DEFAULT_SEMANTIC_WEIGHT = 0.5
# Share of graph evidence in hybrid recall: a candidate's fused score gains this
# share of its neighbours' fused scores, each times the edge's weight
# (memstore/recall/ranking.py). Chosen on LoCoMo conversations 0-4 through the
# timeline, hashing embedder, among 0.1-1.0 (docs/benchmark-notes.md, "LoCoMo:
# graph-aware default recall (issue 22)"); checked again with both embedders
# beside speaker and date evidence (0.3 and 0.7 no better on the tuning half,
# "third pass").
DEFAULT_NEIGHBOUR_SHARE = 0.5


class RecallQuery(BaseModel):
    """The arguments of :meth:`memstore.namespace.Namespace.recall`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str | None = Field(default=None, min_length=1, max_length=10_000)
    """None: a recall by a given vector alone (semantic only)."""
    k: int = Field(default=10, ge=1, le=1000)
    mode: RecallMode = "hybrid"
    # Filters: at most MAX_FILTER_ITEMS values each, as long as the fields they match.
    kinds: Annotated[list[Kind], Field(max_length=MAX_FILTER_ITEMS)] | None = None
    node_types: Annotated[list[NodeTypeName], Field(max_length=MAX_FILTER_ITEMS)] | None = None
    tiers: Annotated[list[TierName], Field(max_length=MAX_FILTER_ITEMS)] | None = None
    as_of: AwareDatetime | None = None
    valid_at: AwareDatetime | None = None
    include_superseded: bool = False
    include_tombstoned: bool = False
    privacy_ceiling: Privacy | None = None
    fusion: Fusion = "weighted"
    semantic_weight: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    """None: the embedder's own ``semantic_weight``, else DEFAULT_SEMANTIC_WEIGHT."""
    tags: TagFilter = None
    """Only memories carrying every one of these tags (normalised as stored); [] is None."""
    neighbour_share: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    """Graph evidence in hybrid recall (0: none, the plain fused ranking); None:
    DEFAULT_NEIGHBOUR_SHARE."""

    @property
    def graph_evidence(self) -> float:
        """The share of neighbours' scores this recall adds (0 unless hybrid)."""
        if self.mode != "hybrid":
            return 0.0
        if self.neighbour_share is None:
            return DEFAULT_NEIGHBOUR_SHARE
        return self.neighbour_share

    @model_validator(mode="after")
    def _text_for_lexical(self) -> RecallQuery:
        if self.text is None and self.mode != "semantic":
            raise ValueError(
                f"a {self.mode} recall needs query text: without it only mode='semantic'"
                " (by the given vector) can answer"
            )
        return self

    @property
    def filtered(self) -> bool:
        """Whether a filter narrows the candidates beyond current memories.

        A privacy ceiling of every level (the default the services fill in) narrows
        nothing: counting it made every recall search with the widened beam (ef_search
        400 for k=10), 3x the time of raw pgvector at 100k (docs/benchmark-notes.md).
        """
        return any(
            value is not None
            for value in (
                self.kinds,
                self.node_types,
                self.tiers,
                self.as_of,
                self.valid_at,
                self.tags or None,
            )
        ) or (self.privacy_ceiling is not None and self.privacy_ceiling < PRIVACY_MAX)

    @property
    def pool(self) -> int:
        """Candidates fetched per signal before fusion."""
        return max(3 * self.k, 50)
