"""What a namespace allows: its policy, and what the law knows about the store.

Both are plain data. The service layer reads them from the database before a
batch is judged; the law itself (:mod:`memstore.law.law`) never touches the
database, so it can be tested, and reasoned about, on its own.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from memstore.models import DEFAULT_MAX_DATA_BYTES, Kind, NodeStatus

from .ops import Disposition, EpistemicTier

# Tiers of the lifecycle records (the ``tier`` column of their nodes).
SHORT_TERM = "short_term"
DURABLE = "durable"
INCUBATION = "incubation"
IDENTITY = "identity"
INTERVENTION = "intervention"
AGENCY = "agency"
CLUSTER = "cluster"
POLICY = "policy"
# The label of the namespace policy's node (tier ``policy``).
POLICY_LABEL = "law"
LIFECYCLE_TIERS = (SHORT_TERM, DURABLE, INCUBATION, IDENTITY, INTERVENTION, AGENCY, CLUSTER)
# The most operations any batch may hold, whatever a policy says (checked before
# a batch is parsed); a policy's max_batch may only lower it.
MAX_BATCH_CEILING = 10_000
# Operation names a policy may list (refused_ops, review_required).
MAX_POLICY_OPS = 100
OpName = Annotated[str, Field(min_length=1, max_length=64)]


class Policy(BaseModel):
    """A namespace's own rules, on top of the law that holds everywhere.

    Set it with :meth:`~memstore.namespace.Namespace.set_policy`; it is kept as
    a versioned node, so every change of policy has a reason and a history.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    refused_kinds: frozenset[Kind] = frozenset()
    """Memory kinds this namespace does not store (e.g. ``{"episodic"}``)."""
    refused_ops: Annotated[frozenset[OpName], Field(max_length=MAX_POLICY_OPS)] = frozenset()
    """Operations this namespace never accepts."""
    review_required: Annotated[frozenset[OpName], Field(max_length=MAX_POLICY_OPS)] = frozenset(
        {"crystallize_identity"}
    )
    """Operations applied only through an accepted proposal."""
    max_batch: Annotated[int, Field(ge=1, le=MAX_BATCH_CEILING)] = 1000
    """Operations in one batch."""
    max_content_bytes: Annotated[int, Field(ge=1)] | None = None
    """Content limit for operations; by default the store's ``max_content_bytes``."""


class NodeFacts(BaseModel):
    """What the law needs to know about one node an operation names."""

    model_config = ConfigDict(frozen=True)

    id: int
    status: NodeStatus
    tier: str | None
    node_type: str
    protected: bool
    label: str | None = None
    epistemic_tier: EpistemicTier | None = None
    disposition: Disposition | None = None
    spoken: bool = False
    kind: str | None = None
    current_id: int | None = None
    """The current version of a superseded node."""


class ProposalFacts(BaseModel):
    """What the law needs to know about one proposal an operation names."""

    model_config = ConfigDict(frozen=True)

    id: int
    status: str
    operation: dict[str, Any]


class Facts(BaseModel):
    """The store as the law sees it for one batch: the nodes, keys and proposals named."""

    model_config = ConfigDict(frozen=True)

    nodes: dict[int, NodeFacts] = Field(default_factory=dict)
    pressure_keys: dict[str, int] = Field(default_factory=dict)
    """Agency-pressure key → its current node."""
    proposals: dict[int, ProposalFacts] = Field(default_factory=dict)
    edges: dict[int, bool] = Field(default_factory=dict)
    """Edge id → whether it is alive (not tombstoned)."""
    content_limit: int = 64 * 1024
    data_limit: int = DEFAULT_MAX_DATA_BYTES
    """The store's ``max_data_bytes``: the largest data document an operation may write."""


__all__ = [
    "AGENCY",
    "CLUSTER",
    "DURABLE",
    "IDENTITY",
    "INCUBATION",
    "INTERVENTION",
    "LIFECYCLE_TIERS",
    "MAX_BATCH_CEILING",
    "POLICY",
    "POLICY_LABEL",
    "SHORT_TERM",
    "Facts",
    "NodeFacts",
    "Policy",
    "ProposalFacts",
]
