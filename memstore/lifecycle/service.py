"""The namespace verbs of the lifecycle law: apply, sleep, cultivate, and the policy.

:class:`~memstore.namespace.Namespace` delegates here; each verb is one
transaction. docs/lifecycle.md is the guide.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from memstore.embedding import cache
from memstore.errors import InvalidInputError, SleepResidueError
from memstore.graph.entries import current_entries
from memstore.graph.proposals import write_operations
from memstore.inputs import checked_reason, checked_text
from memstore.law.consolidate import (
    Consolidator,
    Distiller,
    ShortTermRecord,
    SleepInput,
    normalised,
)
from memstore.law.law import PHASES
from memstore.law.ops import ANCHOR_MISSING, Anatomy, Phase
from memstore.law.policy import (
    INCUBATION,
    MAX_BATCH_CEILING,
    POLICY,
    POLICY_LABEL,
    SHORT_TERM,
    Policy,
)
from memstore.law.receipt import Receipt
from memstore.models import MemoryInput, Node
from memstore.tx import Rights

from ..tiers.common import lock_key, remember_fresh
from .apply import Rejected, apply_in, digest
from .rights import LAW, sanction

if TYPE_CHECKING:
    from memstore.services.scope import Scope
    from memstore.tx import NamespaceTransaction

POLICY_TYPE = "NamespacePolicy"


def checked_actor(actor: object, default: str | None = None) -> str:
    """A non-blank actor name of at most 200 characters."""
    if actor is None and default is not None:
        return default
    name = checked_text(actor, "actor").strip()  # the check every verb's actor gets
    if not name:
        raise InvalidInputError("actor must not be blank", field="actor")
    return name


def _checked_batch(ns: Scope, ops: object, limit: int = MAX_BATCH_CEILING) -> list[Any]:
    """``ops`` as a list, refused before any operation is parsed when it holds more than
    ``limit`` operations or an operation given as JSON text is longer than
    :func:`operation_bytes_limit`: a million operations cost one ``len``, not a million parses."""
    if isinstance(ops, str | bytes | dict) or not isinstance(ops, Sequence):
        raise InvalidInputError("ops must be a list of operations (models or dicts)", field="ops")
    if len(ops) > limit:
        raise InvalidInputError(
            f"a batch holds at most {limit} operations; this one has {len(ops)}", field="ops"
        )
    most = operation_bytes_limit(ns)
    batch = list(ops)
    for i, op in enumerate(batch):
        if isinstance(op, str | bytes) and len(op) > most:
            raise InvalidInputError(
                f"ops[{i}] is {len(op)} characters of JSON; an operation may be at most {most}"
                " (4 x (MEMSTORE_MAX_CONTENT_BYTES + MEMSTORE_MAX_DATA_BYTES))",
                field="ops",
            )
    return batch


def operation_bytes_limit(ns: Scope) -> int:
    """The longest JSON text one operation may be: room for its content and data at their
    limits, escaped (``\\uXXXX`` makes text longer), and its other fields."""
    return 4 * (ns.settings.max_content_bytes + ns.settings.max_data_bytes)


def _within_policy(batch: list[Any], policy: Policy) -> None:
    """Refuse a batch over the namespace's ``max_batch`` before it is parsed."""
    if len(batch) > policy.max_batch:
        raise InvalidInputError(
            f"a batch holds at most {policy.max_batch} operations (the namespace policy's"
            f" max_batch); this one has {len(batch)}",
            field="ops",
        )


def _checked_phase(phase: object) -> Phase:
    if phase not in PHASES:
        raise InvalidInputError(f"phase must be one of {', '.join(PHASES)}", field="phase")
    return phase  # type: ignore[return-value]


def apply(
    ns: Scope, ops: Sequence[Any], *, phase: Phase, actor: str | None, atomic: bool
) -> Receipt:
    """See :meth:`memstore.namespace.Namespace.apply`."""
    batch = _checked_batch(ns, ops)
    phase = _checked_phase(phase)
    who = checked_actor(actor, ns.settings.actor)
    # An empty batch writes nothing, so it must not create the namespace either.
    opened = ns.transaction() if batch else ns.reading()
    try:
        with opened as tx:
            policy = read_policy(tx)
            _within_policy(batch, policy)
            return apply_in(tx, batch, phase=phase, actor=who, policy=policy, atomic=atomic)
    except Rejected as rejected:
        return rejected.receipt


# --- sleep -------------------------------------------------------------------------------


class _Residue(Exception):
    def __init__(self, receipt: Receipt, residue: list[int]):
        super().__init__()
        self.receipt = receipt
        self.residue = residue


def sleep(
    ns: Scope,
    ops: Sequence[Any] | None,
    *,
    forced: bool,
    actor: str | None,
    distiller: Distiller | None,
    older_than: timedelta | None,
) -> Receipt:
    """See :meth:`memstore.namespace.Namespace.sleep`."""
    who = checked_actor(actor, ns.settings.actor)
    if older_than is not None and (
        not isinstance(older_than, timedelta) or older_than < timedelta(0)
    ):
        raise InvalidInputError("older_than must be a non-negative timedelta", field="older_than")
    batch = None if ops is None else _checked_batch(ns, ops)

    def account(_parsed: Sequence[Any], receipt: Receipt) -> None:
        residue = sorted(pressure - _accounted(receipt))
        if forced and residue:
            raise _Residue(receipt, residue)

    pressure: set[int] = set()
    # A namespace nobody has written to has no short-term memory: a pass with
    # no operations of its own writes nothing, so, like an empty apply, it must
    # not create the namespace either.
    quiet = not batch and distiller is None and not ns.exists()
    try:
        with ns.reading() if quiet else ns.transaction() as tx:
            lock_key(tx, "lifecycle")
            records = short_term_records(tx, older_than)
            pressure = {record.id for record in records}
            policy = read_policy(tx)
            if batch is None:
                given = SleepInput(records=records, incubations=incubations(tx))
                batch = list((distiller or Consolidator())(given))
            else:
                _within_policy(batch, policy)
            receipt = apply_in(
                tx, batch, phase="sleep", actor=who, policy=policy, on_judged=account
            )
    except Rejected as rejected:
        if forced:
            raise SleepResidueError(
                f"forced sleep wrote nothing: {rejected.receipt.summary()}",
                receipt=rejected.receipt,
                residue=sorted(pressure),
            ) from None
        return rejected.receipt.model_copy(update={"residue": sorted(pressure)})
    except _Residue as left:
        raise SleepResidueError(
            f"forced sleep wrote nothing: {len(left.residue)} short-term memories were not "
            f"accounted for (distilled, merged into incubation or pruned): {left.residue[:20]}",
            receipt=left.receipt,
            residue=left.residue,
        ) from None
    return receipt.model_copy(update={"residue": sorted(pressure - _accounted(receipt))})


def _accounted(receipt: Receipt) -> set[int]:
    return {node for result in receipt.results if result.applied for node in result.accounted}


def short_term_records(
    tx: NamespaceTransaction, older_than: timedelta | None = None
) -> list[ShortTermRecord]:
    """The short-term memories under pressure (alive; recorded before ``older_than`` ago)."""
    found = current_entries(tx.conn, tx.namespace, SHORT_TERM, older_than=older_than)
    vectors = cache.stored_vectors(
        tx.conn, tx.id, tx.namespace.embedder.name, [node.id for node in found]
    )
    return [
        ShortTermRecord(
            id=node.id,
            content=node.content,
            anatomy=_anatomy(node),
            salience=float(node.data.get("salience", node.importance)),
            confidence=node.confidence,
            vector=vectors.get(node.id),
        )
        for node in found
    ]


def _anatomy(node: Node) -> Anatomy:
    try:
        return Anatomy.model_validate(node.data.get("anatomy"))
    except ValidationError:
        # A record written outside the law (plain remember with tier short_term).
        return Anatomy(
            target=(node.label or node.subject or "unsorted")[:200],
            claim_or_question=node.content[:2000],
            tension="not recorded",
            action_implication="not recorded",
            anchors=[ANCHOR_MISSING],
        )


def incubations(tx: NamespaceTransaction) -> dict[str, int]:
    """Target (normalised) → its current incubation node."""
    found = current_entries(tx.conn, tx.namespace, INCUBATION)
    return {normalised(node.label or ""): node.id for node in reversed(found)}


# --- cultivate ----------------------------------------------------------------------------


def cultivate(
    ns: Scope,
    node_id: int,
    content: str | None,
    *,
    reason: str,
    actor: str,
    retire: bool,
    changes: dict[str, Any],
) -> Node:
    """See :meth:`memstore.namespace.Namespace.cultivate`."""
    reason = checked_reason(reason)
    who = checked_actor(actor)
    if retire and (content is not None or changes):
        raise InvalidInputError("cultivate either retires a node or revises it, not both")
    if not retire and content is None:
        raise InvalidInputError("cultivate needs the new content (or retire=True)", field="content")
    # Digests, not text: redaction must be able to erase the words (see apply.digest).
    payload = {
        "node_id": node_id,
        "content": None if content is None else digest(content),
        "retire": retire,
        "changes": digest(changes) if changes else None,
    }
    with ns.transaction() as tx:
        node = tx.current(node_id)
        if not node.protected:
            raise InvalidInputError(
                f"node {node_id} is not protected: use revise or forget", field="node_id"
            )

        def audit(verb: str, target: int, result: int) -> None:
            # The override records itself: no protected write without its row,
            # written through memstore.record_operations like every audit row.
            row = {
                "op": "cultivate",
                "phase": "cultivate",
                "actor": who,
                "outcome": "accepted",
                "reason": reason,
                "payload": payload,
                "receipt": {"nodes": [result if verb == "revise" else target], "applied": True},
            }
            write_operations(tx.conn, tx.id, [row])

        # Cultivating an identity node writes a protected lifecycle record.
        cultivating = sanction(tx, Rights.PROTECTED | Rights.LIFECYCLE, audit=audit)
        if retire:
            cultivating.forget(node_id, reason=reason, actor=who)
            return tx.node(node_id)
        assert content is not None
        return cultivating.revise(node_id, content, reason=reason, actor=who, **changes)


# --- the namespace policy -------------------------------------------------------------------


def read_policy(tx: NamespaceTransaction) -> Policy:
    """The namespace's current policy (the default when none was set)."""
    return tx.policy()


def set_policy(
    ns: Scope, policy: Policy | dict[str, Any], *, reason: str, actor: str | None
) -> Policy:
    """See :meth:`memstore.namespace.Namespace.set_policy`."""
    reason = checked_reason(reason)
    who = checked_actor(actor, ns.settings.actor)
    try:
        given = policy if isinstance(policy, Policy) else Policy.model_validate(policy)
    except ValidationError as exc:
        raise InvalidInputError(
            f"invalid policy: {exc.errors()[0]['msg']}", field="policy"
        ) from None
    data = {"policy": given.model_dump(mode="json")}
    content = "namespace policy: " + json.dumps(data["policy"], sort_keys=True)
    with ns.transaction() as plain:
        tx = sanction(plain, LAW)  # the policy node is written by this verb only
        lock_key(tx, POLICY, POLICY_LABEL)
        current = current_entries(tx.conn, ns, POLICY, label=POLICY_LABEL, limit=1)
        if current and Policy.model_validate(current[0].data["policy"]) == given:
            return given
        if current:
            tx.revise(
                current[0].id,
                content,
                reason=reason,
                actor=who,
                data=data,
                # A policy may return to an earlier one: each version is its own node.
                dedupe_key=f"policy:{current[0].id}",
            )
        else:
            remember_fresh(
                tx,
                MemoryInput(
                    content=content,
                    kind="working",
                    node_type=POLICY_TYPE,
                    tier=POLICY,
                    label=POLICY_LABEL,
                    data=data,
                    actor=who,
                ),
            )
    return given


__all__ = ["apply", "checked_actor", "cultivate", "read_policy", "set_policy", "sleep"]
