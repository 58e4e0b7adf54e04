"""Typed memory operations: every write memstore makes, as JSON an LLM can emit.

An operation is a pydantic model discriminated by its ``op`` field. A batch of
them goes to :meth:`memstore.namespace.Namespace.apply`, which parses each one
(:func:`parse_operation`), judges the batch with the law (:mod:`memstore.law.law`)
and applies the accepted ones in one transaction. docs/lifecycle.md lists every
operation with an example.

Lifecycle records (short-term memories, durable memories, incubations,
identity, candidate interventions) carry a :class:`Anatomy`: what the record is
about, what it claims or asks, the tension that makes it matter, what it implies
for action, and the anchors it rests on.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from memstore.inputs import LinkInput
from memstore.models import (
    MAX_DATA_BYTES_CEILING,
    MAX_DATA_DEPTH,
    MemoryInput,
    Privacy,
    Reason,
    TargetKind,
    Unit,
    json_size,
)

# The explicit marker for a record that rests on nothing it can point to.
ANCHOR_MISSING = "anchor:missing"
ANCHORS_MAX = 64

Target = Annotated[str, Field(min_length=1, max_length=200)]
Prose = Annotated[str, Field(min_length=1, max_length=2000)]
Anchor = Annotated[str, Field(min_length=1, max_length=500)]
NodeId = Annotated[int, Field(ge=1, le=2**63 - 1)]
NodeIds = Annotated[list[NodeId], Field(min_length=1, max_length=1000)]
Content = Annotated[str, Field(min_length=1)]

EpistemicTier = Literal["note", "lesson", "canonical"]
Disposition = Literal["experimental", "provisional", "stable", "deprecated"]
Phase = Literal["wake", "rumination", "sleep", "review"]


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Anatomy(_Op):
    """What a lifecycle record is made of; every part is required.

    ``anchors`` are the evidence it rests on (node ids, quotes, URLs, as text):
    a non-empty list, or exactly ``["anchor:missing"]`` (the string alone is
    accepted too) to say plainly that there is none.
    """

    target: Target
    claim_or_question: Prose
    tension: Prose
    action_implication: Prose
    anchors: Annotated[list[Anchor], Field(min_length=1, max_length=ANCHORS_MAX)]

    @field_validator("anchors", mode="before")
    @classmethod
    def _missing_marker(cls, value: object) -> object:
        return [value] if value == ANCHOR_MISSING else value

    @field_validator("anchors")
    @classmethod
    def _marker_alone(cls, anchors: list[str]) -> list[str]:
        if ANCHOR_MISSING in anchors and len(anchors) > 1:
            raise ValueError(f"{ANCHOR_MISSING!r} stands alone: it says there are no anchors")
        return anchors

    @property
    def anchored(self) -> bool:
        """False when the record says it has no anchors."""
        return self.anchors != [ANCHOR_MISSING]


# --- short-term memory (rumination, wake) and its consolidation (sleep) ---------


class RecordShortTerm(_Op):
    """Write a short-term memory: a thought to be consolidated by the next sleep."""

    op: Literal["record_short_term"] = "record_short_term"
    anatomy: Anatomy
    content: Content | None = None
    """The text stored and searched; defaults to the anatomy's claim or question."""
    salience: Unit = 0.5
    confidence: Unit = 0.5
    privacy: Privacy = 0


class ClusterShortTerm(_Op):
    """Group short-term memories that belong together (they stay alive)."""

    op: Literal["cluster_short_term"] = "cluster_short_term"
    ids: Annotated[list[NodeId], Field(min_length=2, max_length=1000)]
    label: Target


class PruneShortTerm(_Op):
    """Retire short-term memories that are not worth keeping, with the reason."""

    op: Literal["prune_short_term"] = "prune_short_term"
    ids: NodeIds
    reason: Reason


class Distill(_Op):
    """Turn short-term memories into one durable memory that cites them."""

    op: Literal["distill"] = "distill"
    sources: NodeIds
    anatomy: Anatomy
    content: Content | None = None
    salience: Unit = 0.5
    confidence: Unit = 0.5
    epistemic_tier: EpistemicTier = "note"
    disposition: Disposition = "experimental"


class MergeIntoIncubation(_Op):
    """Hold weak short-term memories in an incubation (one per target) until they grow."""

    op: Literal["merge_into_incubation"] = "merge_into_incubation"
    sources: NodeIds
    target: Target
    incubation_id: NodeId | None = None
    """An existing incubation; by default the target's current one, or a new one."""


class ReviseDurable(_Op):
    """A new version of a durable memory; the old one is superseded with the reason."""

    op: Literal["revise_durable"] = "revise_durable"
    node_id: NodeId
    reason: Reason
    content: Content | None = None
    anatomy: Anatomy | None = None
    salience: Unit | None = None
    confidence: Unit | None = None
    epistemic_tier: EpistemicTier | None = None
    disposition: Disposition | None = None


class RetireDurable(_Op):
    """Retire a durable memory (a tombstone with the reason)."""

    op: Literal["retire_durable"] = "retire_durable"
    node_id: NodeId
    reason: Reason


class CrystallizeIdentity(_Op):
    """Write a protected identity or value node; only through an accepted proposal."""

    op: Literal["crystallize_identity"] = "crystallize_identity"
    anatomy: Anatomy
    content: Content
    label: Target | None = None


# --- what the agent might do or say ---------------------------------------------


class QueueCandidateIntervention(_Op):
    """Queue something the agent might say or do later."""

    op: Literal["queue_candidate_intervention"] = "queue_candidate_intervention"
    anatomy: Anatomy
    content: Content
    salience: Unit = 0.5
    confidence: Unit = 0.5


class RetireCandidateIntervention(_Op):
    """Drop a queued candidate intervention, with the reason."""

    op: Literal["retire_candidate_intervention"] = "retire_candidate_intervention"
    node_id: NodeId
    reason: Reason


class MarkCandidateSpoken(_Op):
    """Record that a queued candidate intervention was said or done."""

    op: Literal["mark_candidate_spoken"] = "mark_candidate_spoken"
    node_id: NodeId
    note: Prose | None = None


class UpsertAgencyPressure(_Op):
    """Set the pressure (0 to 1) towards acting on a target, by key.

    Pressure is a number and a short rationale, never words to say: speech
    belongs in a candidate intervention.
    """

    op: Literal["upsert_agency_pressure"] = "upsert_agency_pressure"
    key: Target
    target: Target
    pressure: Unit
    rationale: Annotated[str, Field(min_length=1, max_length=500)]


class RetireAgencyPressure(_Op):
    """Release the pressure of a key (a tombstone)."""

    op: Literal["retire_agency_pressure"] = "retire_agency_pressure"
    key: Target
    reason: Reason


# --- review -------------------------------------------------------------------------


class Propose(_Op):
    """Ask a human to review an operation; it is applied only if accepted."""

    op: Literal["propose"] = "propose"
    operation: Operation
    rationale: Prose
    evidence: Annotated[list[Anchor], Field(min_length=1, max_length=ANCHORS_MAX)]


class AcceptProposal(_Op):
    """Accept a pending proposal: its operation is judged again and applied."""

    op: Literal["accept_proposal"] = "accept_proposal"
    proposal_id: NodeId
    note: Prose | None = None


class RejectProposal(_Op):
    """Reject a pending proposal, with the reason."""

    op: Literal["reject_proposal"] = "reject_proposal"
    proposal_id: NodeId
    reason: Reason


# --- the generic verbs ----------------------------------------------------------------


class Remember(MemoryInput):
    """:meth:`~memstore.namespace.Namespace.remember` as an operation."""

    op: Literal["remember"] = "remember"


class Link(LinkInput):
    """:meth:`~memstore.namespace.Namespace.link` as an operation."""

    op: Literal["link"] = "link"


class Revise(_Op):
    """:meth:`~memstore.namespace.Namespace.revise` as an operation."""

    op: Literal["revise"] = "revise"
    node_id: NodeId
    content: Content
    reason: Reason
    changes: dict[str, Any] = Field(default_factory=dict)
    """Other fields of the new version (any :class:`~memstore.models.MemoryInput` field)."""

    @field_validator("changes", mode="after")
    @classmethod
    def _bounded(cls, changes: dict[str, Any]) -> dict[str, Any]:
        # JSON within the data document's depth (one level more: changes holds data) and
        # ceiling, before the law walks it; the store's own limit is the law's check.
        json_size(changes, limit=2 * MAX_DATA_BYTES_CEILING, max_depth=MAX_DATA_DEPTH + 1)
        return changes


class Forget(_Op):
    """:meth:`~memstore.namespace.Namespace.forget` as an operation."""

    op: Literal["forget"] = "forget"
    target_id: NodeId
    reason: Reason
    target: TargetKind = "node"


Operation = Annotated[
    RecordShortTerm
    | ClusterShortTerm
    | PruneShortTerm
    | Distill
    | MergeIntoIncubation
    | ReviseDurable
    | RetireDurable
    | CrystallizeIdentity
    | QueueCandidateIntervention
    | RetireCandidateIntervention
    | MarkCandidateSpoken
    | UpsertAgencyPressure
    | RetireAgencyPressure
    | Propose
    | AcceptProposal
    | RejectProposal
    | Remember
    | Link
    | Revise
    | Forget,
    Field(discriminator="op"),
]
Propose.model_rebuild()

OPERATION: TypeAdapter[Operation] = TypeAdapter(Operation)
OP_NAMES: tuple[str, ...] = tuple(
    model.model_fields["op"].default
    for model in (
        RecordShortTerm,
        ClusterShortTerm,
        PruneShortTerm,
        Distill,
        MergeIntoIncubation,
        ReviseDurable,
        RetireDurable,
        CrystallizeIdentity,
        QueueCandidateIntervention,
        RetireCandidateIntervention,
        MarkCandidateSpoken,
        UpsertAgencyPressure,
        RetireAgencyPressure,
        Propose,
        AcceptProposal,
        RejectProposal,
        Remember,
        Link,
        Revise,
        Forget,
    )
)


def operation_schema() -> dict[str, Any]:
    """The JSON Schema of one operation: give it to a model that emits operations.

    A ``oneOf`` over the twenty operations, discriminated by ``op``.
    """
    return OPERATION.json_schema()


class Unparsed(BaseModel):
    """An operation that is not valid JSON for any operation: rejected with the reason."""

    model_config = ConfigDict(frozen=True)

    op: str | None
    payload: Any
    reason: str


def parse_operation(value: object) -> Operation | Unparsed:
    """``value`` (a dict, a JSON string or an operation model) as an operation.

    Never raises for bad input: what does not parse comes back as
    :class:`Unparsed`, so one malformed operation is rejected with its reason
    and the rest of the batch is still judged.
    """
    if isinstance(value, BaseModel) and not isinstance(value, Unparsed):
        value = value.model_dump(mode="json", exclude_unset=False)
    try:
        if isinstance(value, str | bytes):
            return OPERATION.validate_json(value)
        return OPERATION.validate_python(value)
    except ValidationError as exc:
        op = value.get("op") if isinstance(value, dict) else None
        return Unparsed(
            op=op if isinstance(op, str) else None,
            payload=_jsonable(value),
            reason=_problems(exc),
        )


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc']) or 'operation'}: {error['msg']}"
        for error in exc.errors()[:5]
    )


# How deep a rejected payload is kept in the audit log: deeper parts become "...".
PAYLOAD_DEPTH = 8


def _jsonable(value: object, depth: int = 0) -> Any:
    """What of a rejected payload can be stored in the audit log: bounded in depth and
    breadth, so a payload nested 100,000 levels deep or a million items long costs little."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value[:2000]
    if isinstance(value, dict | list) and depth >= PAYLOAD_DEPTH:
        return "..."
    if isinstance(value, dict):
        return {
            str(k)[:200]: _jsonable(v, depth + 1) for k, v in itertools.islice(value.items(), 50)
        }
    if isinstance(value, list):
        return [_jsonable(v, depth + 1) for v in value[:50]]
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    return repr(value)[:200]


__all__ = [
    "ANCHOR_MISSING",
    "OPERATION",
    "OP_NAMES",
    "AcceptProposal",
    "Anatomy",
    "ClusterShortTerm",
    "CrystallizeIdentity",
    "Disposition",
    "Distill",
    "EpistemicTier",
    "Forget",
    "Link",
    "MarkCandidateSpoken",
    "MergeIntoIncubation",
    "Operation",
    "Phase",
    "Propose",
    "PruneShortTerm",
    "QueueCandidateIntervention",
    "RecordShortTerm",
    "RejectProposal",
    "Remember",
    "RetireAgencyPressure",
    "RetireCandidateIntervention",
    "RetireDurable",
    "Revise",
    "Unparsed",
    "UpsertAgencyPressure",
    "operation_schema",
    "parse_operation",
]
