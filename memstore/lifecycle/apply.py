"""Apply a batch of operations: parse, read the facts, judge, write, record the receipt.

Everything happens in the caller's transaction (:func:`apply_in`), so a batch is
all-or-nothing with whatever else that transaction does; sleep and review build
on it. docs/lifecycle.md describes what each operation writes.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, assert_never

from memstore.graph.entries import current_entries
from memstore.graph.proposals import (
    decide_proposal,
    insert_proposal,
    pending_proposal,
    write_operations,
)
from memstore.graph.rows import fetch_nodes
from memstore.law.law import judge
from memstore.law.ops import (
    ANCHOR_MISSING,
    AcceptProposal,
    Anatomy,
    ClusterShortTerm,
    CrystallizeIdentity,
    Distill,
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
from memstore.law.policy import (
    AGENCY,
    CLUSTER,
    DURABLE,
    IDENTITY,
    INCUBATION,
    INTERVENTION,
    SHORT_TERM,
    Policy,
)
from memstore.law.receipt import OpResult, Receipt
from memstore.models import MemoryInput, Node
from memstore.services.confirmation import confirm_again

from ..tiers.common import lock_key, remember_fresh
from .facts import load_facts, lock_proposals
from .rights import LAW, sanction

if TYPE_CHECKING:
    from memstore.tx import NamespaceTransaction

# Node types of the lifecycle records.
SHORT_TERM_TYPE = "ShortTermMemory"
DURABLE_TYPE = "DurableMemory"
INCUBATION_TYPE = "Incubation"
IDENTITY_TYPE = "Identity"
INTERVENTION_TYPE = "CandidateIntervention"
AGENCY_TYPE = "AgencyPressure"
CLUSTER_TYPE = "ShortTermCluster"


@dataclass
class Written:
    """What one operation wrote."""

    nodes: list[int]
    edges: list[int]
    tombstones: list[int]
    accounted: list[int]
    proposal_id: int | None = None

    @classmethod
    def of(
        cls,
        nodes: Sequence[int] = (),
        edges: Sequence[int] = (),
        tombstones: Sequence[int] = (),
        accounted: Sequence[int] = (),
        proposal_id: int | None = None,
    ) -> Written:
        """What an operation wrote, from any sequences."""
        return cls(list(nodes), list(edges), list(tombstones), list(accounted), proposal_id)

    def merged(self, other: Written) -> Written:
        """This and ``other`` together (an accepted proposal and its operation)."""
        return Written(
            self.nodes + other.nodes,
            self.edges + other.edges,
            self.tombstones + other.tombstones,
            self.accounted + other.accounted,
            self.proposal_id or other.proposal_id,
        )


class Rejected(Exception):
    """Raised inside the batch's transaction to roll it back; carries the receipt."""

    def __init__(self, receipt: Receipt):
        super().__init__(receipt.summary())
        self.receipt = receipt


def apply_in(
    tx: NamespaceTransaction,
    ops: Sequence[Any],
    *,
    phase: Phase,
    actor: str,
    policy: Policy,
    atomic: bool = True,
    on_judged: Callable[[Sequence[Operation | Unparsed], Receipt], None] | None = None,
) -> Receipt:
    """Judge and apply ``ops`` on ``tx``; raises :class:`Rejected` when nothing may be written.

    ``atomic``: one rejected operation rejects the batch (the default); False
    applies the accepted operations and records the rejected ones.
    """
    parsed = [parse_operation(op) for op in ops]
    lock_key(tx, "lifecycle")  # batches of one namespace are judged one at a time
    settings = tx.namespace.settings
    facts = load_facts(
        tx,
        parsed,
        content_limit=settings.max_content_bytes,
        data_limit=settings.max_data_bytes,
    )
    verdicts = judge(parsed, phase=phase, facts=facts, policy=policy)
    batch_id = uuid.uuid4().hex
    results = [
        OpResult(
            index=i,
            op=op.op,
            outcome="accepted" if verdict.accepted else "rejected",
            reason=verdict.reason,
        )
        for i, (op, verdict) in enumerate(zip(parsed, verdicts, strict=True))
    ]
    receipt = Receipt(batch_id=batch_id, phase=phase, actor=actor, applied=False, results=results)
    if atomic and any(r.outcome == "rejected" for r in results):
        raise Rejected(receipt)
    applying = Applying(tx, actor=actor, batch_id=batch_id, phase=phase)
    done: list[OpResult] = []
    for op, result in zip(parsed, results, strict=True):
        if result.outcome == "accepted":
            assert not isinstance(op, Unparsed)
            written = applying.apply(op)
            result = result.model_copy(update={"applied": True, **written.__dict__})
        done.append(result)
    receipt = receipt.model_copy(update={"applied": True, "results": done})
    if on_judged is not None:
        on_judged(parsed, receipt)  # may still raise (a forced sleep's residue)
    return record(tx, receipt, parsed) if results else receipt


def record(tx: NamespaceTransaction, receipt: Receipt, parsed: Sequence[Any]) -> Receipt:
    """Store one ``memstore.operations`` row per operation; returns the receipt with their ids."""
    rows = [
        {
            "batch_id": receipt.batch_id,
            "op": result.op or "?",
            "phase": receipt.phase,
            "actor": receipt.actor,
            "outcome": result.outcome,
            "reason": result.reason,
            "payload": _payload(op),
            "receipt": result.model_dump(mode="json"),
        }
        for op, result in zip(parsed, receipt.results, strict=True)
    ]
    ids = write_operations(tx.conn, tx.id, rows)
    results = [
        r.model_copy(update={"operation_id": i}) for r, i in zip(receipt.results, ids, strict=True)
    ]
    return receipt.model_copy(update={"results": results})


# Fields of an operation that carry memory text. The log keeps their digest, not
# the text: the text lives in nodes, where a redaction can erase it, and the
# log still proves what was written (docs/lifecycle.md, docs/security.md).
TEXT_FIELDS = frozenset(
    {"content", "anatomy", "rationale", "note", "label", "data", "evidence", "changes", "subject"}
)


def digest(value: Any) -> dict[str, Any]:
    """What the log keeps of a text (or structure of texts): its sha256 and size."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    encoded = text.encode("utf-8", "surrogatepass")
    return {"sha256": hashlib.sha256(encoded).hexdigest(), "chars": len(text)}


def _payload(op: Any) -> Any:
    """The operation as the audit log keeps it: its shape, ids and numbers, text digested."""
    if isinstance(op, Unparsed):
        # Its size, not its digest: what does not parse names no memory, so an
        # erasure cannot find it, and a plain sha256 of text an erasure leaves
        # would let anyone confirm a guess of the erased words.
        shape = op.payload if isinstance(op.payload, dict) else {}
        size = digest(op.payload)["chars"]
        return {"unparsed": {"op": op.op, "keys": sorted(shape)[:50], "chars": size}}
    return _scrubbed(op.model_dump(mode="json", exclude={"embedding"}))


def _scrubbed(dumped: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in dumped.items():
        if key == "operation" and isinstance(value, dict):
            out[key] = _scrubbed(value)
        elif key in TEXT_FIELDS and value is not None:
            out[key] = digest(value)
        else:
            out[key] = value
    return out


class Applying:
    """Writes accepted operations on one transaction."""

    def __init__(self, tx: NamespaceTransaction, *, actor: str, batch_id: str, phase: str):
        # Lifecycle records are written by the law's appliers only: a
        # sanctioned transaction (memstore/lifecycle/rights.py).
        self.tx = sanction(tx, LAW)
        self.actor = actor
        self.batch_id = batch_id
        self.phase = phase

    def apply(self, op: Operation) -> Written:
        """Write one accepted operation; returns what it wrote.

        Exhaustive over the operation union: a type without an applier fails
        mypy (``assert_never``) and raises at run time, so nothing is written.
        """
        match op:
            case RecordShortTerm():
                return self.record_short_term(op)
            case ClusterShortTerm():
                return self.cluster_short_term(op)
            case PruneShortTerm():
                return self.prune_short_term(op)
            case Distill():
                return self.distill(op)
            case MergeIntoIncubation():
                return self.merge_into_incubation(op)
            case ReviseDurable():
                return self.revise_durable(op)
            case RetireDurable() | RetireCandidateIntervention():
                return self.retire(op)
            case CrystallizeIdentity():
                return self.crystallize_identity(op)
            case QueueCandidateIntervention():
                return self.queue_candidate_intervention(op)
            case MarkCandidateSpoken():
                return self.mark_candidate_spoken(op)
            case UpsertAgencyPressure():
                return self.upsert_agency_pressure(op)
            case RetireAgencyPressure():
                return self.retire_agency_pressure(op)
            case Propose():
                return self.propose(op)
            case AcceptProposal():
                return self.accept_proposal(op)
            case RejectProposal():
                return self.reject_proposal(op)
            case Remember():
                return self.remember(op)
            case Link():
                return self.link(op)
            case Revise():
                return self.revise(op)
            case Forget():
                return self.forget(op)
            case _:
                assert_never(op)

    # --- helpers ------------------------------------------------------------------

    def _store(self, **fields: Any) -> Node:
        return remember_fresh(self.tx, MemoryInput(actor=self.actor, **fields))

    def _link(self, src: int, dst: int, relation: str, weight: float = 1.0) -> int:
        return self.tx.link(src, dst, relation=relation, weight=weight, actor=self.actor).id

    def _tombstone(self, node_id: int, reason: str) -> int:
        # Locked, and its status read again, like every forget.
        return self.tx.forget(node_id, reason=reason, actor=self.actor)

    def _account(self, ids: Sequence[int], reason: str) -> list[int]:
        return [self._tombstone(node_id, reason) for node_id in ids]

    def _record(self, anatomy: Anatomy, **extra: Any) -> dict[str, Any]:
        return {"anatomy": anatomy.model_dump(mode="json"), **extra}

    # --- short-term memory ---------------------------------------------------------

    def record_short_term(self, op: RecordShortTerm) -> Written:
        """A short-term memory: tier short_term, the anatomy in ``data``."""
        node = self._store(
            content=op.content or op.anatomy.claim_or_question,
            kind="working",
            node_type=SHORT_TERM_TYPE,
            tier=SHORT_TERM,
            label=op.anatomy.target,
            data=self._record(op.anatomy, salience=op.salience),
            importance=op.salience,
            confidence=op.confidence,
            privacy=op.privacy,
        )
        return Written.of(nodes=[node.id])

    def cluster_short_term(self, op: ClusterShortTerm) -> Written:
        """A cluster node with ``groups`` edges to its (still alive) members."""
        cluster = self._store(
            content=f"{op.label}: {len(op.ids)} short-term memories",
            kind="working",
            node_type=CLUSTER_TYPE,
            tier=CLUSTER,
            label=op.label,
            data={"members": list(op.ids)},
            # Each cluster is its own node, even with the same label and size.
            dedupe_key=f"cluster:{self.batch_id}:{min(op.ids)}",
        )
        edges = [self._link(cluster.id, member, "groups") for member in op.ids]
        return Written.of(nodes=[cluster.id], edges=edges)

    def prune_short_term(self, op: PruneShortTerm) -> Written:
        """A tombstone on each short-term memory, with the reason."""
        tombstones = self._account(op.ids, f"pruned: {op.reason}")
        return Written.of(tombstones=tombstones, accounted=op.ids)

    def distill(self, op: Distill) -> Written:
        """A durable memory citing its sources (``distills``), which are tombstoned."""
        sources = fetch_nodes(self.tx.conn, self.tx.id, self.tx.name, op.sources)
        anchors = dict.fromkeys(a for a in op.anatomy.anchors if a != ANCHOR_MISSING)
        for source in sources.values():
            for anchor in source.data.get("anatomy", {}).get("anchors", []):
                if anchor != ANCHOR_MISSING:
                    anchors.setdefault(anchor)
        anatomy = op.anatomy.model_copy(update={"anchors": list(anchors)[:64] or [ANCHOR_MISSING]})
        durable = self._store(
            content=op.content or op.anatomy.claim_or_question,
            kind="semantic",
            node_type=DURABLE_TYPE,
            tier=DURABLE,
            label=op.anatomy.target,
            data=self._record(
                anatomy,
                salience=op.salience,
                support=len(op.sources),
                sources=list(op.sources),
                epistemic_tier=op.epistemic_tier,
                disposition=op.disposition,
            ),
            importance=op.salience,
            confidence=op.confidence,
            # It carries its sources' anchors (their words): never readable
            # below the most private of them.
            privacy=max((source.privacy for source in sources.values()), default=0),
        )
        edges = [self._link(durable.id, source, "distills") for source in op.sources]
        tombstones = self._account(op.sources, f"distilled into durable memory {durable.id}")
        return Written.of(
            nodes=[durable.id], edges=edges, tombstones=tombstones, accounted=op.sources
        )

    def merge_into_incubation(self, op: MergeIntoIncubation) -> Written:
        """The target's incubation (found or created); its sources tombstoned."""
        lock_key(self.tx, INCUBATION, op.target)
        incubation_id = op.incubation_id
        if incubation_id is None:
            existing = current_entries(
                self.tx.conn, self.tx.namespace, INCUBATION, label=op.target, limit=1
            )
            incubation_id = existing[0].id if existing else None
        nodes: list[int] = []
        if incubation_id is None:
            incubation = self._store(
                content=f"Incubating: {op.target}",
                kind="semantic",
                node_type=INCUBATION_TYPE,
                tier=INCUBATION,
                label=op.target,
                data={"target": op.target},
            )
            incubation_id = incubation.id
            nodes.append(incubation_id)
        edges = [self._link(incubation_id, source, "incubates") for source in op.sources]
        tombstones = self._account(op.sources, f"merged into incubation {incubation_id}")
        return Written.of(
            nodes=nodes or [incubation_id], edges=edges, tombstones=tombstones, accounted=op.sources
        )

    # --- durable memory and identity -------------------------------------------------

    def revise_durable(self, op: ReviseDurable) -> Written:
        """A new version of a durable memory, superseding the old with the reason."""
        old = self.tx.node(op.node_id)
        data = dict(old.data)
        if op.anatomy is not None:
            data["anatomy"] = op.anatomy.model_dump(mode="json")
        for key in ("salience", "epistemic_tier", "disposition"):
            if getattr(op, key) is not None:
                data[key] = getattr(op, key)
        changes: dict[str, Any] = {"data": data}
        if op.salience is not None:
            changes["importance"] = op.salience
        if op.confidence is not None:
            changes["confidence"] = op.confidence
        new = self.tx.revise(
            op.node_id,
            op.content or old.content,
            reason=op.reason,
            actor=self.actor,
            dedupe_key=f"revision:{op.node_id}",
            **changes,
        )
        return Written.of(nodes=[new.id])

    def retire(self, op: RetireDurable | RetireCandidateIntervention) -> Written:
        """A tombstone on a durable memory or a candidate intervention."""
        return Written.of(tombstones=[self._tombstone(op.node_id, op.reason)])

    def crystallize_identity(self, op: CrystallizeIdentity) -> Written:
        """A protected identity node on layer 0."""
        node = self._store(
            content=op.content,
            kind="semantic",
            node_type=IDENTITY_TYPE,
            tier=IDENTITY,
            layer=0,
            label=op.label or op.anatomy.target,
            data=self._record(op.anatomy),
            importance=1.0,
            confidence=1.0,
            protected=True,
        )
        return Written.of(nodes=[node.id])

    # --- what the agent might do or say ------------------------------------------------

    def queue_candidate_intervention(self, op: QueueCandidateIntervention) -> Written:
        """Something the agent might say or do, status queued."""
        node = self._store(
            content=op.content,
            kind="working",
            node_type=INTERVENTION_TYPE,
            tier=INTERVENTION,
            label=op.anatomy.target,
            data=self._record(op.anatomy, salience=op.salience, status="queued"),
            importance=op.salience,
            confidence=op.confidence,
        )
        return Written.of(nodes=[node.id])

    def mark_candidate_spoken(self, op: MarkCandidateSpoken) -> Written:
        """A new version of the intervention with status spoken."""
        old = self.tx.node(op.node_id)
        data = {**old.data, "status": "spoken", "note": op.note}
        new = self.tx.revise(
            op.node_id,
            old.content,
            reason=f"spoken{': ' + op.note if op.note else ''}",
            actor=self.actor,
            data=data,
            dedupe_key=f"spoken:{op.node_id}",
        )
        return Written.of(nodes=[new.id])

    def upsert_agency_pressure(self, op: UpsertAgencyPressure) -> Written:
        """The key's pressure: a new node, or a new version when it changed."""
        lock_key(self.tx, AGENCY, op.key)
        current = current_entries(self.tx.conn, self.tx.namespace, AGENCY, label=op.key, limit=1)
        data = {
            "key": op.key,
            "target": op.target,
            "pressure": op.pressure,
            "rationale": op.rationale,
        }
        content = f"{op.target}: {op.rationale}"
        if current and current[0].data == data:
            return Written.of(nodes=[current[0].id])
        if current:
            new = self.tx.revise(
                current[0].id,
                content,
                reason=f"pressure on {op.key!r} is now {op.pressure:g}",
                actor=self.actor,
                data=data,
                importance=op.pressure,
                dedupe_key=f"pressure:{current[0].id}",
            )
            return Written.of(nodes=[new.id])
        node = self._store(
            content=content,
            kind="working",
            node_type=AGENCY_TYPE,
            tier=AGENCY,
            label=op.key,
            data=data,
            importance=op.pressure,
        )
        return Written.of(nodes=[node.id])

    def retire_agency_pressure(self, op: RetireAgencyPressure) -> Written:
        """A tombstone on the key's current pressure."""
        current = current_entries(self.tx.conn, self.tx.namespace, AGENCY, label=op.key, limit=1)
        return Written.of(tombstones=[self._tombstone(current[0].id, op.reason)])

    # --- review ---------------------------------------------------------------------------

    def propose(self, op: Propose) -> Written:
        """A pending row of memstore.proposals, or the one already waiting.

        The same operation proposed again while it waits (a nightly sleep
        that sees the same pattern) is the queued proposal, not a second one.
        Batches of a namespace are applied one at a time, so two identical
        proposals cannot both pass this look.
        """
        operation = op.operation.model_dump(mode="json", exclude={"embedding"})
        waiting = pending_proposal(self.tx.conn, self.tx.id, operation)
        if waiting is not None:
            return Written.of(proposal_id=waiting)
        proposal_id = insert_proposal(
            self.tx.conn,
            self.tx.id,
            operation=operation,
            rationale=op.rationale,
            evidence=list(op.evidence),
            proposed_by=self.actor,
        )
        return Written.of(proposal_id=int(proposal_id))

    def accept_proposal(self, op: AcceptProposal) -> Written:
        """The proposal's operation applied, and the proposal accepted."""
        proposal = lock_proposals(self.tx, [op.proposal_id])[op.proposal_id]
        inner = parse_operation(proposal.operation)
        assert not isinstance(inner, Unparsed)  # the law parsed it before accepting
        written = self.apply(inner)
        self._decide(op.proposal_id, "accepted", op.note)
        return written.merged(Written.of(proposal_id=op.proposal_id))

    def reject_proposal(self, op: RejectProposal) -> Written:
        """The proposal rejected, with the reason."""
        self._decide(op.proposal_id, "rejected", op.reason)
        return Written.of(proposal_id=op.proposal_id)

    def _decide(self, proposal_id: int, status: str, reason: str | None) -> None:
        decide_proposal(
            self.tx.conn,
            self.tx.id,
            proposal_id,
            status=status,
            decided_by=self.actor,
            reason=reason,
        )

    # --- the generic verbs -------------------------------------------------------------------

    def remember(self, op: Remember) -> Written:
        """What :meth:`Namespace.remember` writes."""
        fields = op.model_dump(exclude={"op"}, exclude_unset=True)
        fields.setdefault("actor", self.actor)
        # As ns.remember: content already stored as a current memory is confirmed.
        node = confirm_again(self.tx, *self.tx.store_item(MemoryInput(**fields)))
        return Written.of(nodes=[node.id])

    def link(self, op: Link) -> Written:
        """What :meth:`Namespace.link` writes."""
        fields = op.model_dump(exclude={"op", "src", "dst"})
        fields["actor"] = fields.get("actor") or self.actor
        return Written.of(edges=[self.tx.link(op.src, op.dst, **fields).id])

    def revise(self, op: Revise) -> Written:
        """What :meth:`Namespace.revise` writes."""
        changes = {"actor": self.actor, **op.changes}
        new = self.tx.revise(op.node_id, op.content, reason=op.reason, **changes)
        return Written.of(nodes=[new.id])

    def forget(self, op: Forget) -> Written:
        """What :meth:`Namespace.forget` writes."""
        tombstone = self.tx.forget(
            op.target_id, reason=op.reason, target=op.target, actor=self.actor
        )
        return Written.of(tombstones=[tombstone])


__all__ = ["Applying", "Rejected", "Written", "apply_in", "record"]
