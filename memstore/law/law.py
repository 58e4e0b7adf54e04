"""The law: which operations a batch may apply, judged before anything is written.

Pure Python over plain data (:class:`~memstore.law.policy.Facts` read from the
store, the namespace :class:`~memstore.law.policy.Policy`, the phase), so every
rule can be tested without a database. :func:`judge` walks a batch in order and
keeps a small model of what the accepted operations so far have changed: a
short-term memory pruned by the first operation cannot be distilled by the
third, a proposal accepted once cannot be accepted again.

The rules (docs/lifecycle.md explains each):

- phases: ``rumination`` only records short-term memory, queues candidate
  interventions and upserts agency pressure; ``sleep`` clusters, distills,
  merges, prunes, revises and retires (and may propose); ``review`` accepts and
  rejects proposals; ``wake`` (the agent at work) uses the generic verbs and
  the in-the-moment lifecycle operations;
- operations that need review (``crystallize_identity`` always) are applied
  only through an accepted proposal;
- every text is valid Unicode without NUL, contents fit the size limit,
  anatomy is complete (the operation models enforce it), agency pressure
  carries no speech;
- protected nodes are never revised, retired, forgotten or linked into (only
  :meth:`~memstore.namespace.Namespace.cultivate` may change them);
- the epistemic tier moves note → lesson → canonical and the disposition
  experimental → provisional → stable → deprecated, one step at a time and
  never back (deprecated may be reached from any disposition);
- lifecycle records are changed only by lifecycle operations, never by the
  generic ``revise`` / ``forget`` / ``remember``;
- the namespace policy may refuse kinds and operations;
- it fails closed: checks (:func:`_check`) and appliers are exhaustive matches
  over the operation union ending in ``assert_never``, and anything that is not
  one of the union's own types is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from memstore.models import MAX_DATA_DEPTH, DataTooLarge, MemoryInput, NodeStatus, json_size

from .ops import (
    OP_NAMES,
    AcceptProposal,
    ClusterShortTerm,
    CrystallizeIdentity,
    Disposition,
    Distill,
    EpistemicTier,
    Forget,
    Link,
    MarkCandidateSpoken,
    MergeIntoIncubation,
    Operation,
    Phase,
    Propose,
    PruneShortTerm,
    QueueCandidateIntervention,
    RecordShortTerm,
    RejectProposal,
    Remember,
    RetireAgencyPressure,
    RetireCandidateIntervention,
    RetireDurable,
    Revise,
    ReviseDurable,
    Unparsed,
    UpsertAgencyPressure,
    parse_operation,
)
from .policy import (
    AGENCY,
    CLUSTER,
    DURABLE,
    IDENTITY,
    INCUBATION,
    INTERVENTION,
    POLICY,
    SHORT_TERM,
    Facts,
    NodeFacts,
    Policy,
)

PERMITTED: dict[str, frozenset[str]] = {
    "rumination": frozenset(
        {"record_short_term", "queue_candidate_intervention", "upsert_agency_pressure"}
    ),
    "sleep": frozenset(
        {
            "cluster_short_term",
            "distill",
            "merge_into_incubation",
            "prune_short_term",
            "revise_durable",
            "retire_durable",
            "propose",
        }
    ),
    "review": frozenset({"accept_proposal", "reject_proposal"}),
    "wake": frozenset(
        {
            "remember",
            "link",
            "revise",
            "forget",
            "record_short_term",
            "queue_candidate_intervention",
            "retire_candidate_intervention",
            "mark_candidate_spoken",
            "upsert_agency_pressure",
            "retire_agency_pressure",
            "propose",
        }
    ),
}
PHASES: tuple[str, ...] = tuple(PERMITTED)
# Applied only through an accepted proposal, in no phase of its own.
PROPOSAL_ONLY = frozenset({"crystallize_identity"})
# Every operation type the law judges: the members of the discriminated union.
OPERATION_TYPES: frozenset[type[Any]] = frozenset(get_args(get_args(Operation)[0]))
# What a proposal may carry: anything but the review verbs themselves.
PROPOSABLE = frozenset(OP_NAMES) - {"propose", "accept_proposal", "reject_proposal"}

# The door into each kind of lifecycle record: the one operation (or verb)
# that writes, revises or retires it. The generic verbs, direct or as
# operations, refuse these tiers and name the door instead.
_DOORS: dict[str, dict[str, tuple[str, str]]] = {
    SHORT_TERM: {
        "remember": ("record_short_term", "rumination"),
        "revise": ("distill", "sleep"),
        "forget": ("prune_short_term", "sleep"),
    },
    DURABLE: {
        "remember": ("distill", "sleep"),
        "revise": ("revise_durable", "sleep"),
        "forget": ("retire_durable", "sleep"),
    },
    INCUBATION: {
        "remember": ("merge_into_incubation", "sleep"),
        "revise": ("merge_into_incubation", "sleep"),
        "forget": ("distill", "sleep"),
    },
    CLUSTER: {
        "remember": ("cluster_short_term", "sleep"),
        "revise": ("cluster_short_term", "sleep"),
        "forget": ("cluster_short_term", "sleep"),
    },
    INTERVENTION: {
        "remember": ("queue_candidate_intervention", "wake"),
        "revise": ("mark_candidate_spoken", "wake"),
        "forget": ("retire_candidate_intervention", "wake"),
    },
    AGENCY: {
        "remember": ("upsert_agency_pressure", "wake"),
        "revise": ("upsert_agency_pressure", "wake"),
        "forget": ("retire_agency_pressure", "wake"),
    },
}


def lifecycle_door(tier: str | None, verb: str) -> str | None:
    """What to use instead of ``verb`` (remember, revise, forget) on a record of ``tier``.

    None when ``tier`` is not a lifecycle tier (the generic verb may write it).

    >>> lifecycle_door("short_term", "revise")
    "ns.apply([{'op': 'distill', ...}], phase='sleep')"
    >>> lifecycle_door("notes", "revise") is None
    True
    """
    if tier == POLICY:
        return "ns.set_policy(...)"
    if tier == IDENTITY:
        return {
            "remember": "ns.apply([{'op': 'propose', 'operation': "
            "{'op': 'crystallize_identity', ...}, ...}], phase='wake') and its review",
            "revise": "ns.cultivate(node_id, content, ...)",
            "forget": "ns.cultivate(node_id, retire=True, ...)",
        }[verb]
    door = _DOORS.get(tier or "", {}).get(verb)
    if door is None:
        return None
    op, phase = door
    return f"ns.apply([{{'op': '{op}', ...}}], phase='{phase}')"


PROTECTED_DOOR = (
    "protected memories are written only by crystallize_identity (through an accepted "
    "proposal) and changed only by ns.cultivate(...)"
)

EPISTEMIC_ORDER: tuple[EpistemicTier, ...] = ("note", "lesson", "canonical")
DISPOSITION_NEXT: dict[Disposition, frozenset[Disposition]] = {
    "experimental": frozenset({"provisional", "deprecated"}),
    "provisional": frozenset({"stable", "deprecated"}),
    "stable": frozenset({"deprecated"}),
    "deprecated": frozenset(),
}

# Agency pressure is a number and a reason, not words to say: a quoted
# passage, or a rationale that opens as an utterance, is speech.
_QUOTED = re.compile(r"[\"“”«»„]\s*\w+(?:\W+\w+)+\s*[\"“”«»„]")
_UTTERANCE = re.compile(r"^\s*(?:say|tell|reply|respond|answer|ask|speak|write)\b", re.IGNORECASE)


class Verdict(BaseModel):
    """The law's answer for one operation of a batch."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    reason: str | None = None
    """Why it was rejected."""


def transition_error(
    kind: str, order: Sequence[str] | dict[Any, frozenset[Any]], old: str | None, new: str | None
) -> str | None:
    """Why ``old → new`` is not a legal step of the state machine ``kind``, or None."""
    if new is None or new == old:
        return None
    if isinstance(order, dict):
        allowed = order.get(old, frozenset()) if old is not None else frozenset(order)
        if new in allowed:
            return None
    elif old is None or order.index(new) == order.index(old) + 1:
        return None
    return f"{kind} cannot move from {old} to {new}"


@dataclass
class _World:
    """What the law knows, updated by each accepted operation of the batch."""

    facts: Facts
    nodes: dict[int, NodeFacts]
    pressure_keys: set[str]
    edges: dict[int, bool]
    decided: set[int] = field(default_factory=set)
    accounted: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, facts: Facts) -> _World:
        """The world as the facts describe it, before the batch."""
        return cls(facts, dict(facts.nodes), set(facts.pressure_keys), dict(facts.edges))

    def copy(self) -> _World:
        """An independent copy (to judge a proposal without applying it)."""
        return _World(
            self.facts,
            dict(self.nodes),
            set(self.pressure_keys),
            dict(self.edges),
            set(self.decided),
            set(self.accounted),
        )

    def mark(self, node_id: int, status: NodeStatus, **changes: Any) -> None:
        """Record that an accepted operation changed a node's status (and facts)."""
        self.nodes[node_id] = self.nodes[node_id].model_copy(update={"status": status, **changes})


def judge(
    ops: Sequence[Operation | Unparsed],
    *,
    phase: Phase,
    facts: Facts,
    policy: Policy,
    via_proposal: bool = False,
) -> list[Verdict]:
    """A verdict for each operation, in order.

    ``via_proposal``: the operations come from a proposal a reviewer accepted,
    so any proposable operation may run whatever the phase.
    """
    world = _World.of(facts)
    verdicts: list[Verdict] = []
    if phase not in PERMITTED:
        reason = f"unknown phase {phase!r}: one of {', '.join(PHASES)}"
        return [Verdict(accepted=False, reason=reason) for _ in ops]
    if len(ops) > policy.max_batch:
        reason = f"a batch holds at most {policy.max_batch} operations; this one has {len(ops)}"
        return [Verdict(accepted=False, reason=reason) for _ in ops]
    for op in ops:
        why = _judge_one(op, phase, world, policy, via_proposal)
        verdicts.append(Verdict(accepted=why is None, reason=why))
    return verdicts


def _judge_one(
    op: Operation | Unparsed, phase: str, world: _World, policy: Policy, via_proposal: bool
) -> str | None:
    if isinstance(op, Unparsed):
        return f"not a valid operation: {op.reason}"
    if type(op) not in OPERATION_TYPES:
        # Only the union's own types are judged (a subclass or a look-alike
        # could carry any op name): anything else is refused.
        return f"{type(op).__name__} is not an operation of the law"
    if reason := _data_error(op, world.facts.data_limit):
        return reason
    if reason := _text_error(op, world.facts.content_limit, policy):
        return reason
    if op.op in policy.refused_ops:
        return f"this namespace's policy refuses {op.op}"
    if via_proposal:
        if op.op not in PROPOSABLE:
            return f"{op.op} cannot be proposed"
    elif op.op in policy.review_required:
        return f"{op.op} needs review: submit it with op 'propose' and have it accepted"
    elif op.op not in PERMITTED[phase]:
        return f"phase {phase!r} does not permit {op.op} (it permits {_listed(PERMITTED[phase])})"
    return _check(op, world, policy, phase)


def _listed(names: frozenset[str]) -> str:
    return ", ".join(sorted(names))


# --- text -----------------------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _strings(item)


def _text_error(op: Operation, content_limit: int, policy: Policy) -> str | None:
    for text in _strings(op.model_dump()):
        if "\x00" in text:
            return "text must not contain NUL characters"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "text must be valid Unicode (no lone surrogates)"
    limit = policy.max_content_bytes or content_limit
    content = getattr(op, "content", None)
    if isinstance(content, str):
        if not content.strip():
            return "content must not be blank"
        size = len(content.encode("utf-8"))
        if size > limit:
            return f"content is {size} bytes; the limit is {limit}"
    return None


def _data_error(op: Operation, limit: int) -> str | None:
    """Why the data document an operation would write is refused (MEMSTORE_MAX_DATA_BYTES)."""
    data = op.changes.get("data") if isinstance(op, Revise) else getattr(op, "data", None)
    if data is None:
        return None
    try:
        json_size(data, limit=limit, max_depth=MAX_DATA_DEPTH)
    except DataTooLarge:
        return f"data is more than {limit} bytes as JSON; the limit is {limit}"
    except ValueError as exc:
        return f"data {exc}"
    return None


# --- nodes ----------------------------------------------------------------------------


def _node(world: _World, node_id: int) -> NodeFacts | str:
    """The node's facts, or why it cannot be the subject of an operation."""
    node = world.nodes.get(node_id)
    if node is None:
        return f"node {node_id} does not exist in this namespace"
    return node


def _current(world: _World, node_id: int, *, tier: str | None = None) -> NodeFacts | str:
    """A current node (of ``tier``), or why not."""
    node = _node(world, node_id)
    if isinstance(node, str):
        return node
    if node.status is NodeStatus.SUPERSEDED and node.current_id is not None:
        return f"node {node_id} is superseded: its current version is node {node.current_id}"
    if node.status is not NodeStatus.CURRENT:
        return f"node {node_id} is {node.status.value}"
    if tier is not None and node.tier != tier:
        return f"node {node_id} is not a {tier.replace('_', '-')} record (tier {node.tier})"
    return node


def _mutable(world: _World, node_id: int, *, tier: str | None = None) -> NodeFacts | str:
    node = _current(world, node_id, tier=tier)
    if isinstance(node, NodeFacts) and node.protected:
        return f"node {node_id} is protected: only ns.cultivate(...) may change it"
    return node


def _short_term_sources(world: _World, ids: Sequence[int]) -> str | None:
    if len(set(ids)) != len(ids):
        return "a short-term memory is named twice"
    for node_id in ids:
        if node_id in world.accounted:
            return f"short-term memory {node_id} is already accounted for in this batch"
        node = _current(world, node_id, tier=SHORT_TERM)
        if isinstance(node, str):
            return node
    return None


def _account(world: _World, ids: Sequence[int]) -> None:
    for node_id in ids:
        world.accounted.add(node_id)
        world.mark(node_id, NodeStatus.TOMBSTONED)


def _kind_refused(kind: str, policy: Policy) -> str | None:
    if kind in policy.refused_kinds:
        return f"this namespace's policy refuses {kind} memories"
    return None


# --- one check per operation ----------------------------------------------------------


def _record_short_term(
    op: RecordShortTerm, world: _World, policy: Policy, phase: str
) -> str | None:
    return _kind_refused("working", policy)


def _cluster(op: ClusterShortTerm, world: _World, policy: Policy, phase: str) -> str | None:
    if len(set(op.ids)) != len(op.ids):
        return "a short-term memory is named twice"
    for node_id in op.ids:
        node = _current(world, node_id, tier=SHORT_TERM)
        if isinstance(node, str):
            return node
    return None


def _prune(op: PruneShortTerm, world: _World, policy: Policy, phase: str) -> str | None:
    if reason := _short_term_sources(world, op.ids):
        return reason
    _account(world, op.ids)
    return None


def _distill(op: Distill, world: _World, policy: Policy, phase: str) -> str | None:
    if reason := _kind_refused("semantic", policy) or _short_term_sources(world, op.sources):
        return reason
    _account(world, op.sources)
    return None


def _merge(op: MergeIntoIncubation, world: _World, policy: Policy, phase: str) -> str | None:
    if op.incubation_id is not None:
        incubation = _current(world, op.incubation_id, tier=INCUBATION)
        if isinstance(incubation, str):
            return incubation
    if reason := _short_term_sources(world, op.sources):
        return reason
    _account(world, op.sources)
    return None


def _revise_durable(op: ReviseDurable, world: _World, policy: Policy, phase: str) -> str | None:
    node = _mutable(world, op.node_id, tier=DURABLE)
    if isinstance(node, str):
        return node
    changes = op.model_dump(exclude={"op", "node_id", "reason"}, exclude_none=True)
    if not changes:
        return "revise_durable changes nothing: give content, anatomy or a new state"
    reason = transition_error(
        "the epistemic tier", EPISTEMIC_ORDER, node.epistemic_tier, op.epistemic_tier
    ) or transition_error("the disposition", DISPOSITION_NEXT, node.disposition, op.disposition)
    if reason:
        return reason
    world.mark(op.node_id, NodeStatus.SUPERSEDED)
    return None


def _retire_in(
    tier: str,
) -> Callable[[RetireDurable | RetireCandidateIntervention, _World, Policy, str], str | None]:
    """The check of an operation that retires one current, unprotected node of ``tier``."""

    def retire(
        op: RetireDurable | RetireCandidateIntervention, world: _World, policy: Policy, phase: str
    ) -> str | None:
        node = _mutable(world, op.node_id, tier=tier)
        if isinstance(node, str):
            return node
        world.mark(op.node_id, NodeStatus.TOMBSTONED)
        return None

    return retire


def _crystallize(op: CrystallizeIdentity, world: _World, policy: Policy, phase: str) -> str | None:
    return _kind_refused("semantic", policy)


def _queue(op: QueueCandidateIntervention, world: _World, policy: Policy, phase: str) -> str | None:
    return _kind_refused("working", policy)


def _mark_spoken(op: MarkCandidateSpoken, world: _World, policy: Policy, phase: str) -> str | None:
    node = _mutable(world, op.node_id, tier=INTERVENTION)
    if isinstance(node, str):
        return node
    if node.spoken:
        return f"candidate intervention {op.node_id} was already spoken"
    world.mark(op.node_id, NodeStatus.SUPERSEDED)
    return None


def _upsert_pressure(
    op: UpsertAgencyPressure, world: _World, policy: Policy, phase: str
) -> str | None:
    if _QUOTED.search(op.rationale) or _UTTERANCE.match(op.rationale):
        return (
            "agency pressure carries no speech: give the pressure and why, and queue "
            "what to say as a candidate intervention"
        )
    world.pressure_keys.add(op.key)
    return None


def _retire_pressure(
    op: RetireAgencyPressure, world: _World, policy: Policy, phase: str
) -> str | None:
    if op.key not in world.pressure_keys:
        return f"there is no agency pressure with key {op.key!r}"
    world.pressure_keys.discard(op.key)
    return None


def _propose(op: Propose, world: _World, policy: Policy, phase: str) -> str | None:
    inner = op.operation
    if inner.op not in PROPOSABLE:
        return f"{inner.op} cannot be proposed"
    if inner.op in policy.refused_ops:
        return f"this namespace's policy refuses {inner.op}"
    # Judge the proposed operation against a copy of the world: it is not
    # applied now, but a proposal that could never be accepted is refused early.
    preview = world.copy()
    reason = _check(inner, preview, policy, "review")
    return f"the proposed {inner.op} would be rejected: {reason}" if reason else None


def _decide(
    op: AcceptProposal | RejectProposal, world: _World, policy: Policy, phase: str
) -> str | None:
    proposal = world.facts.proposals.get(op.proposal_id)
    if proposal is None:
        return f"proposal {op.proposal_id} does not exist in this namespace"
    if proposal.status != "pending" or op.proposal_id in world.decided:
        status = proposal.status if proposal.status != "pending" else "decided in this batch"
        return f"proposal {op.proposal_id} was already {status}"
    if isinstance(op, AcceptProposal):
        inner = parse_operation(proposal.operation)
        if isinstance(inner, Unparsed):
            return f"proposal {op.proposal_id} holds no valid operation: {inner.reason}"
        if reason := _judge_one(inner, "review", world, policy, via_proposal=True):
            return f"the proposed {inner.op} is rejected now: {reason}"
    world.decided.add(op.proposal_id)
    return None


def _remember(op: Remember, world: _World, policy: Policy, phase: str) -> str | None:
    if reason := _kind_refused(op.kind, policy):
        return reason
    if door := lifecycle_door(op.tier, "remember"):
        return f"tier {op.tier!r} is written only by lifecycle operations: use {door}"
    if op.protected:
        return PROTECTED_DOOR
    return None


def _link(op: Link, world: _World, policy: Policy, phase: str) -> str | None:
    for end in (op.src, op.dst):
        node = _node(world, end)
        if isinstance(node, str):
            return node
        if node.status in (NodeStatus.TOMBSTONED, NodeStatus.REDACTED):
            return f"node {end} is {node.status.value}: it cannot be linked"
        if node.status is NodeStatus.SUPERSEDED:
            current = f": its current version is node {node.current_id}" if node.current_id else ""
            return f"node {end} is superseded{current} (both ends of an edge are current)"
    if world.nodes[op.dst].protected:
        return f"node {op.dst} is protected: nothing links into it but ns.cultivate(...)"
    return None


_REVISABLE = frozenset(MemoryInput.model_fields) - {"content", "embedding", "protected", "tier"}


def _revise(op: Revise, world: _World, policy: Policy, phase: str) -> str | None:
    node = _mutable(world, op.node_id)
    if isinstance(node, str):
        return node
    if door := lifecycle_door(node.tier, "revise"):
        return f"node {op.node_id} is a {node.tier} record: use {door}"
    if unknown := set(op.changes) - _REVISABLE:
        return f"revise cannot change {', '.join(sorted(unknown))}"
    if reason := _kind_refused(str(op.changes.get("kind", node.kind or "")), policy):
        return reason
    try:
        MemoryInput.model_validate({"content": op.content, **op.changes})
    except ValidationError as exc:
        return f"invalid changes: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
    world.mark(op.node_id, NodeStatus.SUPERSEDED)
    return None


def _forget(op: Forget, world: _World, policy: Policy, phase: str) -> str | None:
    if op.target == "edge":
        if op.target_id not in world.edges:
            return f"edge {op.target_id} does not exist in this namespace"
        if not world.edges[op.target_id]:
            return f"edge {op.target_id} was already forgotten"
        world.edges[op.target_id] = False
        return None
    node = _mutable(world, op.target_id)
    if isinstance(node, str):
        return node
    if door := lifecycle_door(node.tier, "forget"):
        return f"node {op.target_id} is a {node.tier} record: use {door}"
    world.mark(op.target_id, NodeStatus.TOMBSTONED)
    return None


def _check(op: Operation, world: _World, policy: Policy, phase: str) -> str | None:
    """The check of ``op``'s type: why it is rejected, or None.

    Exhaustive over the operation union: a new operation type without a case
    here fails mypy (``assert_never``), and at run time raises rather than
    passes (tests/unit/test_law.py walks the union).
    """
    match op:
        case RecordShortTerm():
            return _record_short_term(op, world, policy, phase)
        case ClusterShortTerm():
            return _cluster(op, world, policy, phase)
        case PruneShortTerm():
            return _prune(op, world, policy, phase)
        case Distill():
            return _distill(op, world, policy, phase)
        case MergeIntoIncubation():
            return _merge(op, world, policy, phase)
        case ReviseDurable():
            return _revise_durable(op, world, policy, phase)
        case RetireDurable():
            return _retire_in(DURABLE)(op, world, policy, phase)
        case CrystallizeIdentity():
            return _crystallize(op, world, policy, phase)
        case QueueCandidateIntervention():
            return _queue(op, world, policy, phase)
        case RetireCandidateIntervention():
            return _retire_in(INTERVENTION)(op, world, policy, phase)
        case MarkCandidateSpoken():
            return _mark_spoken(op, world, policy, phase)
        case UpsertAgencyPressure():
            return _upsert_pressure(op, world, policy, phase)
        case RetireAgencyPressure():
            return _retire_pressure(op, world, policy, phase)
        case Propose():
            return _propose(op, world, policy, phase)
        case AcceptProposal() | RejectProposal():
            return _decide(op, world, policy, phase)
        case Remember():
            return _remember(op, world, policy, phase)
        case Link():
            return _link(op, world, policy, phase)
        case Revise():
            return _revise(op, world, policy, phase)
        case Forget():
            return _forget(op, world, policy, phase)
        case _:
            assert_never(op)


__all__ = [
    "DISPOSITION_NEXT",
    "EPISTEMIC_ORDER",
    "PERMITTED",
    "PHASES",
    "PROPOSABLE",
    "Verdict",
    "judge",
    "transition_error",
]
