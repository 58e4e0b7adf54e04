"""A namespace's verbs inside one open database transaction.

:meth:`memstore.namespace.Namespace.transaction` hands one out; every
single-call verb of the namespace is a transaction of its own built on it. Use
it to make several writes all-or-nothing:

>>> with ns.transaction() as tx:                                 # doctest: +SKIP
...     dinner = tx.remember("Team dinner on Friday", node_type="Fact")
...     allergy = tx.remember("Maya is allergic to peanuts", node_type="Safety")
...     tx.link(dinner.id, allergy.id, relation="constrained_by", weight=0.9)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy.engine import Connection

from memstore.db.transaction import declared_ceiling, narrowed_ceiling
from memstore.embedding import cache
from memstore.embedding.hashing import forget_words
from memstore.errors import (
    EdgeNotFoundError,
    InvalidInputError,
    LifecycleRecordError,
    NodeNotFoundError,
    NodeRedactedError,
    NodeSupersededError,
    NodeTombstonedError,
    PolicyRefusedError,
    ProtectedNodeError,
)
from memstore.graph import lineage as lineage_sql
from memstore.graph.content import checked_content, checked_data, normalise
from memstore.graph.edges import find_edge, insert_edge
from memstore.graph.entries import current_entries
from memstore.graph.locks import LineageLocks
from memstore.graph.nodes import remember_node, remember_params
from memstore.graph.rows import fetch_edges, fetch_nodes, to_node
from memstore.inputs import (
    LinkInput,
    checked_id,
    checked_reason,
    checked_tags,
    checked_text,
    validated,
)
from memstore.law.law import PROTECTED_DOOR, lifecycle_door
from memstore.law.policy import POLICY, POLICY_LABEL, Policy
from memstore.models import (
    PRIVACY_MAX,
    Edge,
    MemoryInput,
    Node,
    NodeStatus,
    RedactVersions,
    TargetKind,
)

if TYPE_CHECKING:
    from memstore.services.scope import Scope


def check_direct(item: MemoryInput, *, field: str = "tier") -> None:
    """Refuse what a direct ``remember`` may not write: a lifecycle record, a protected memory.

    The error names the lifecycle operation to use (docs/lifecycle.md); the law
    refuses the ``remember`` operation for the same reasons.
    """
    door = lifecycle_door(item.tier, "remember")
    if door is not None:
        raise LifecycleRecordError(
            f"tier {item.tier!r} is written only by lifecycle operations: use {door}",
            field=field,
            use=door,
        )
    if item.protected:
        raise LifecycleRecordError(PROTECTED_DOOR, field="protected", use="crystallize_identity")


def check_kind(item: MemoryInput, policy: Policy, *, field: str = "kind") -> None:
    """Refuse a kind the namespace policy refuses."""
    if item.kind in policy.refused_kinds:
        raise PolicyRefusedError(
            f"this namespace's policy refuses {item.kind} memories", field=field
        )


class Rights(enum.Flag):
    """What a write may do beyond the rules of the direct verbs (docs/lifecycle.md)."""

    NONE = 0
    PROTECTED = enum.auto()
    """Revise, retire or link into protected memories: ``ns.cultivate`` only."""
    LIFECYCLE = enum.auto()
    """Write lifecycle records and the namespace policy: the law's appliers, ``set_policy``."""


# The key that creates a transaction with rights. It is handed out once, to
# memstore.lifecycle when it is imported (memstore imports it with the
# package), so no other caller can ask for it: rights are granted by the
# lifecycle package, never switched on by setting an attribute.
_SANCTION_KEY = object()
_sanction_key_claimed = False

# Called after each write that used the PROTECTED right: (verb, node_id, result_id).
Audit = Callable[[str, int, int], None]


def claim_sanction_key() -> object:
    """The key of :meth:`NamespaceTransaction.sanctioned`; only its first caller gets it.

    That caller is :mod:`memstore.lifecycle` (at import); every later call raises.
    """
    global _sanction_key_claimed
    if _sanction_key_claimed:
        raise RuntimeError("the sanction key belongs to memstore.lifecycle")
    _sanction_key_claimed = True
    return _SANCTION_KEY


class NamespaceTransaction:
    """The verbs of one namespace on one connection; committed or rolled back as a whole.

    Its attributes are fixed once it is built: no flag switches a rule off.
    Protected memories and lifecycle records are changed only through a
    transaction the lifecycle package sanctions (:meth:`sanctioned`).
    """

    namespace: Scope
    conn: Connection
    id: int
    name: str
    locks: LineageLocks

    def __init__(
        self,
        namespace: Scope,
        conn: Connection,
        *,
        privacy_ceiling: int | None = None,
        locks: LineageLocks | None = None,
        _rights: Rights = Rights.NONE,
        _audit: Audit | None = None,
        _key: object = None,
        _memo: dict[str, Any] | None = None,
    ):
        if _rights and _key is not _SANCTION_KEY:
            raise PermissionError("rights are granted by memstore.lifecycle only")
        set_ = object.__setattr__
        set_(self, "namespace", namespace)
        set_(self, "conn", conn)
        set_(self, "id", namespace.id)
        set_(self, "name", namespace.name)
        # The lineage locks this transaction holds (memstore/graph/locks.py).
        set_(self, "locks", locks or LineageLocks(conn, namespace.id))
        set_(self, "_rights", _rights)
        set_(self, "_audit", _audit)
        # Read once per transaction (shared with its sanctioned twins).
        memo: dict[str, Any] = _memo if _memo is not None else {}
        if privacy_ceiling is not None:
            # The ceiling the transaction declared (absent: read back when
            # needed). Every read of nodes in it filters by the declared
            # ceiling (memstore.graph.rows.within_ceiling), as row-level
            # security does.
            memo["privacy_ceiling"] = privacy_ceiling
        set_(self, "_memo", memo)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"a transaction's attributes are fixed ({name!r}): rights come from "
            "the lifecycle package (ns.cultivate, ns.apply), not from a flag"
        )

    def sanctioned(
        self, rights: Rights, *, key: object, audit: Audit | None = None
    ) -> NamespaceTransaction:
        """This transaction (same connection, same locks) with ``rights``.

        Only the holder of the key (:func:`claim_sanction_key`: the lifecycle
        package) gets one. The PROTECTED right needs ``audit``, called after
        each write that used it (the cultivate row of ``memstore.operations``).
        """
        if key is not _SANCTION_KEY:
            raise PermissionError("rights are granted by memstore.lifecycle only")
        if Rights.PROTECTED in rights and audit is None:
            raise ValueError("the PROTECTED right needs an audit callback")
        return NamespaceTransaction(
            self.namespace,
            self.conn,
            locks=self.locks,
            _rights=rights,
            _audit=audit,
            _key=key,
            _memo=object.__getattribute__(self, "_memo"),
        )

    def _may(self, right: Rights) -> bool:
        rights: Rights = object.__getattribute__(self, "_rights")
        return right in rights

    def _audited(self, verb: str, node_id: int, result_id: int, *, protected: bool) -> None:
        audit: Audit | None = object.__getattribute__(self, "_audit")
        if protected and audit is not None:
            audit(verb, node_id, result_id)

    # --- writing ----------------------------------------------------------------

    def remember(
        self, content: str, *, vector: np.ndarray[Any, Any] | None = None, **fields: Any
    ) -> Node:
        """See :meth:`memstore.namespace.Namespace.remember`.

        ``vector``: the embedder's vector of the content, when the caller
        computed it outside the transaction.
        """
        checked_data(fields.get("data"), limit=self.namespace.settings.max_data_bytes)
        item = validated(MemoryInput, content=content, **fields)
        return self.remember_item(item, vector=vector)

    def remember_item(
        self, item: MemoryInput, *, vector: np.ndarray[Any, Any] | None = None
    ) -> Node:
        """Store one validated memory (idempotent) and its vector."""
        return self.store_item(item, vector=vector)[0]

    def store_item(
        self, item: MemoryInput, *, vector: np.ndarray[Any, Any] | None = None
    ) -> tuple[Node, bool]:
        """Like :meth:`remember_item`, and whether this call created the node."""
        self._check_new(item)
        text = checked_content(item.content, limit=self.namespace.settings.max_content_bytes)
        # Every write of a node passes here or revise (tiers, lifecycle operations).
        checked_data(item.data, limit=self.namespace.settings.max_data_bytes)
        row = self._remember(item, text, vector)
        return to_node(row, self.name), bool(row["created"])

    def _check_new(self, item: MemoryInput, *, field: str = "tier") -> None:
        """The rules of a direct write of ``item``: no lifecycle record, no protected
        memory (unless sanctioned), no kind the namespace policy refuses."""
        if not (self._may(Rights.LIFECYCLE) or self._may(Rights.PROTECTED)):
            check_direct(item, field=field)
        check_kind(item, self.policy())
        if item.tier == POLICY:  # set_policy: the next read sees the new policy
            object.__getattribute__(self, "_memo").pop("policy", None)

    def policy(self) -> Policy:
        """The namespace's current law policy (the default when none was set)."""
        memo: dict[str, Any] = object.__getattribute__(self, "_memo")
        if "policy" not in memo:
            found = current_entries(self.conn, self.namespace, POLICY, label=POLICY_LABEL, limit=1)
            memo["policy"] = Policy.model_validate(found[0].data["policy"]) if found else Policy()
        policy: Policy = memo["policy"]
        return policy

    def _remember(
        self, item: MemoryInput, text: str, vector: np.ndarray[Any, Any] | None
    ) -> dict[str, Any]:
        """The node row of ``item`` (created, or the identical one stored) and its vector.

        With ``vector`` given, node and vector are one statement; without, the
        embedder runs only when the node is new. An existing node keeps the
        vector of its own text.
        """
        ceiling = self._declared_ceiling()
        if item.privacy > ceiling:
            raise InvalidInputError(
                f"privacy {item.privacy} is above the privacy ceiling {ceiling} this"
                " transaction runs under",
                field="privacy",
            )
        embedder = self.namespace.embedder
        row = remember_node(self.conn, remember_params(self.id, item, text, embedder.name, vector))
        if row["created"] and vector is None:
            vector = self.namespace.vectors([item], [text])
            cache.upsert_vectors(self.conn, self.id, embedder.name, [row["id"]], [text], vector)
        return row

    def link(self, src: int, dst: int, **fields: Any) -> Edge:
        """See :meth:`memstore.namespace.Namespace.link`.

        Both ends are locked (memstore/graph/locks.py) before their status is
        read: a forget or revise of either end waits for this link, or this
        link sees what it wrote. The same locks make an identical link
        idempotent under concurrency: a second one waits, then finds the first.
        """
        link = validated(LinkInput, src=src, dst=dst, **fields)
        if link.src == link.dst:
            raise InvalidInputError("an edge needs two different nodes", field="dst")
        self.locks.lock([link.src, link.dst])
        ends = fetch_nodes(self.conn, self.id, self.name, [link.src, link.dst])
        for end in (link.src, link.dst):
            if end not in ends:
                self.raise_missing(end, edge=True)
        values = link.model_dump()
        existing = find_edge(self.conn, self.id, values)
        if existing is not None:
            # The same link again (a script run twice, two agents recording one
            # association) is the edge already written, not a second one — even
            # when an end has been revised or forgotten since: nothing is written,
            # and a re-run of the script that made it must succeed.
            return fetch_edges(self.conn, self.id, self.name, [existing])[existing]
        for end in (link.src, link.dst):
            if ends[end].status in (NodeStatus.TOMBSTONED, NodeStatus.REDACTED):
                raise NodeTombstonedError(
                    f"node {end} is {ends[end].status.value}: it cannot be linked",
                    node_id=end,
                )
            if ends[end].status is NodeStatus.SUPERSEDED:
                self._raise_superseded(end, "link")
        protected = ends[link.dst].protected
        if protected and not self._may(Rights.PROTECTED):
            raise ProtectedNodeError(
                f"node {link.dst} is protected: only ns.cultivate(...) may link into it",
                node_id=link.dst,
            )
        edge_id = insert_edge(self.conn, self.id, values)
        self._audited("link", link.dst, edge_id, protected=protected)
        return fetch_edges(self.conn, self.id, self.name, [edge_id])[edge_id]

    def revise(self, node_id: int, content: str, *, reason: str, **changes: Any) -> Node:
        """See :meth:`memstore.namespace.Namespace.revise`.

        The version is locked before its status is read, so a concurrent
        forget, redact or revise of it either waits for this one or makes it
        fail with the error that says what became of the version.
        """
        reason = checked_reason(reason)
        checked_data(changes.get("data"), limit=self.namespace.settings.max_data_bytes)
        if "tags" in changes:  # as stored, so an identical revision is recognised
            changes["tags"] = checked_tags(changes["tags"])
        node_id = checked_id(node_id)
        self.locks.lock([node_id])
        try:
            old = self.current(node_id)
        except NodeSupersededError as stale:
            # A script that remembers a fact and revises it, run again: the
            # memory already says this, so the revision is done, not refused.
            done = self._already_revised(stale.current_id, content, changes)
            if done is None:
                raise
            return done
        if old.protected and not self._may(Rights.PROTECTED):
            raise ProtectedNodeError(
                f"node {node_id} is protected: only ns.cultivate(...) may revise it",
                node_id=node_id,
            )
        self._check_lifecycle(old, "revise")
        carried = old.model_dump(include=set(MemoryInput.model_fields) - {"embedding"})
        carried.update(changes, content=content)
        item = validated(MemoryInput, **carried)
        if item.protected and not old.protected:
            raise LifecycleRecordError(
                PROTECTED_DOOR, field="protected", use="crystallize_identity", node_id=node_id
            )
        self._check_new(item)
        text = checked_content(item.content, limit=self.namespace.settings.max_content_bytes)
        checked_data(item.data, limit=self.namespace.settings.max_data_bytes)
        row = self._remember(item, text, None)
        new_id = int(row["id"])
        if new_id == old.id:
            if self._holds(old, text, changes):
                return old  # nothing to revise: it already says this
            raise InvalidInputError(
                f"the revision of node {old.id} is identical to it", field="content"
            )
        if not row["created"]:
            # An identical memory was stored before: it becomes the next
            # version only while it is current (and nobody changes it meanwhile).
            self.locks.lock([new_id])
            self.current(new_id)
        lineage_sql.supersede(
            self.conn,
            self.id,
            old.id,
            new_id,
            reason=reason,
            actor=item.actor or self.namespace.settings.actor,
        )
        self._audited("revise", old.id, new_id, protected=old.protected)
        return self.node(new_id)

    def _already_revised(
        self, current_id: int | None, content: str, changes: dict[str, Any]
    ) -> Node | None:
        """The current version ``current_id`` if it already holds ``content`` and ``changes``."""
        if current_id is None:
            return None
        text = checked_content(content, limit=self.namespace.settings.max_content_bytes)
        self.locks.lock([current_id])
        latest = self.node(current_id)
        if latest.status is not NodeStatus.CURRENT or not self._holds(latest, text, changes):
            return None
        return latest

    @staticmethod
    def _holds(node: Node, text: str, changes: dict[str, Any]) -> bool:
        """Whether ``node`` already says ``text`` with every field of ``changes``."""
        if normalise(node.content) != normalise(text):
            return False
        fields = type(node).model_fields
        return all(
            key in fields and getattr(node, key) == value
            for key, value in changes.items()
            if key != "actor"  # who asked is recorded on a supersession, not on the node
        )

    def forget(
        self,
        target_id: int,
        *,
        reason: str,
        target: TargetKind = "node",
        actor: str | None = None,
    ) -> int:
        """See :meth:`memstore.namespace.Namespace.forget`.

        A node is locked before its status is read. A superseded version is
        not forgotten (its current version would stay alive):
        :class:`NodeSupersededError` names the current version.
        """
        reason = checked_reason(reason)
        target_id = checked_id(target_id, "target_id")
        if target not in ("node", "edge"):
            raise InvalidInputError("target must be 'node' or 'edge'", field="target")
        protected = False
        if target == "node":
            self.locks.lock([target_id])
            found = fetch_nodes(self.conn, self.id, self.name, [target_id])
            if not found:
                self.raise_missing(target_id)
            node = found[target_id]
            if node.superseded_by is not None:  # whatever else became of it (redacted)
                self._raise_superseded(target_id, "forget")
            protected = node.protected
            if protected and not self._may(Rights.PROTECTED):
                raise ProtectedNodeError(
                    f"node {target_id} is protected: it cannot be forgotten "
                    "(ns.cultivate(...) revises it; ns.redact(...) erases it)",
                    node_id=target_id,
                )
            self._check_lifecycle(node, "forget")
        elif not fetch_edges(self.conn, self.id, self.name, [target_id]):
            raise EdgeNotFoundError(
                f"edge {target_id} does not exist in namespace {self.name!r}",
                namespace=self.name,
                target_id=target_id,
            )
        tombstone = lineage_sql.tombstone(
            self.conn,
            self.id,
            target,
            target_id,
            reason=reason,
            actor=self._actor(actor),
        )
        self._audited("forget", target_id, tombstone, protected=protected)
        return tombstone

    def _check_lifecycle(self, node: Node, verb: str) -> None:
        """Refuse ``verb`` on a lifecycle record or the policy, naming the operation to use."""
        if self._may(Rights.LIFECYCLE):
            return
        door = None if node.protected else lifecycle_door(node.tier, verb)
        if door is not None:
            raise LifecycleRecordError(
                f"node {node.id} is a {node.tier} record: lifecycle records change through "
                f"lifecycle operations only; use {door}",
                field="node_id",
                use=door,
                node_id=node.id,
            )

    def _raise_superseded(self, node_id: int, verb: str) -> None:
        latest = lineage_sql.current_version(self.conn, self.id, node_id)
        raise NodeSupersededError(
            f"node {node_id} was superseded; its current version is node {latest}"
            f" ({verb} the current version)",
            node_id=node_id,
            current_id=latest,
        )

    def redact(
        self,
        node_id: int,
        *,
        reason: str,
        actor: str | None = None,
        versions: RedactVersions = "all",
    ) -> Node:
        """See :meth:`memstore.namespace.Namespace.redact`."""
        reason = checked_reason(reason)
        node_id = checked_id(node_id)
        if versions not in ("all", "one"):
            raise InvalidInputError(
                f"versions must be 'all' (every version of the memory) or 'one', not {versions!r}",
                field="versions",
            )
        # Every version of the lineage, locked before anything is read: a
        # revise, link or forget of any of them waits for the erasure, then
        # sees it (memstore/graph/locks.py).
        self.locks.lock_lineage(node_id)
        if not fetch_nodes(self.conn, self.id, self.name, [node_id]):
            self.raise_missing(node_id)
        lineage_sql.redact(
            self.conn,
            self.id,
            node_id,
            reason=reason,
            actor=self._actor(actor),
            all_versions=versions == "all",
        )
        forget_words()  # the erased words, hashed by this process, leave its caches too
        return self.node(node_id)

    def _actor(self, actor: object) -> str:
        """The given actor (text of 1 to 200 characters), else (None or "") the configured one."""
        if actor is None or actor == "":
            return self.namespace.settings.actor
        return checked_text(actor, "actor")

    # --- reading ----------------------------------------------------------------

    def node(self, node_id: int, *, privacy_ceiling: int | None = None) -> Node:
        """The node with its status, or :class:`NodeNotFoundError` (also for a node above
        ``privacy_ceiling``, or above the transaction's ceiling: a lower one narrows it)."""
        node_id = checked_id(node_id)
        with self._narrowed(privacy_ceiling):
            found = fetch_nodes(self.conn, self.id, self.name, [node_id])
        if node_id not in found:
            self.raise_missing(node_id)
        return found[node_id]

    def lineage(self, node_id: int, *, privacy_ceiling: int | None = None) -> list[Node]:
        """See :meth:`memstore.namespace.Namespace.lineage` (versions above the ceiling are
        left out)."""
        with self._narrowed(privacy_ceiling):
            self.node(node_id)
            ids = lineage_sql.lineage_ids(self.conn, self.id, node_id)
            found = fetch_nodes(self.conn, self.id, self.name, ids)
        return [found[i] for i in ids if i in found]

    def current(self, node_id: int, *, privacy_ceiling: int | None = None) -> Node:
        """The node if it is current; otherwise the error that says what became of it."""
        node = self.node(node_id, privacy_ceiling=privacy_ceiling)
        if node.status is NodeStatus.SUPERSEDED:
            latest = lineage_sql.current_version(self.conn, self.id, node_id)
            if latest not in fetch_nodes(self.conn, self.id, self.name, [latest]):
                # The newer version is above the ceiling: its id must not be told.
                raise NodeSupersededError(f"node {node_id} was superseded", node_id=node_id)
            raise NodeSupersededError(
                f"node {node_id} was superseded; its current version is node {latest}",
                node_id=node_id,
                current_id=latest,
            )
        if node.status is NodeStatus.TOMBSTONED:
            raise NodeTombstonedError(f"node {node_id} was forgotten", node_id=node_id)
        if node.status is NodeStatus.REDACTED:
            raise NodeRedactedError(f"node {node_id} was redacted", node_id=node_id)
        return node

    def raise_missing(self, node_id: int, *, edge: bool = False) -> None:
        """Raise the error for a node id this transaction cannot see.

        The same error, with the same message, whether the id was never used,
        belongs to another namespace or is above the privacy ceiling: a caller
        must not learn that an invisible memory exists (docs/security.md).
        ``edge`` (the id is an edge's end) changes nothing, for that reason.
        """
        raise NodeNotFoundError(
            f"node {node_id} does not exist in namespace {self.name!r}",
            namespace=self.name,
            target_id=node_id,
        )

    def _declared_ceiling(self) -> int:
        """The privacy ceiling this transaction declared with ``SET LOCAL``."""
        memo: dict[str, Any] = object.__getattribute__(self, "_memo")
        if memo.get("privacy_ceiling") is None:
            memo["privacy_ceiling"] = declared_ceiling(self.conn)
        ceiling: int = memo["privacy_ceiling"]
        return ceiling

    @contextmanager
    def _narrowed(self, privacy_ceiling: int | None) -> Iterator[None]:
        """Run the block under a lower privacy ceiling than the transaction's, if given.

        The block's reads filter by the declared ceiling, so the narrower one is
        declared (``SET LOCAL``) for the block and the transaction's restored
        after it. A ceiling above the transaction's does not widen it.
        """
        if privacy_ceiling is None:
            yield
            return
        if (
            isinstance(privacy_ceiling, bool)
            or not isinstance(privacy_ceiling, int)
            or not 0 <= privacy_ceiling <= PRIVACY_MAX
        ):
            raise InvalidInputError(
                f"privacy_ceiling must be an integer from 0 to {PRIVACY_MAX}",
                field="privacy_ceiling",
            )
        declared = self._declared_ceiling()
        if privacy_ceiling >= declared:
            yield
            return
        with narrowed_ceiling(self.conn, privacy_ceiling, declared):
            yield


__all__ = [
    "Audit",
    "NamespaceTransaction",
    "Rights",
    "check_direct",
    "check_kind",
    "claim_sanction_key",
]
