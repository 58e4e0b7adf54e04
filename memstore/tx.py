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

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.transaction import CEILING_SETTING, set_local
from memstore.embedding import cache
from memstore.errors import (
    EdgeNotFoundError,
    InvalidInputError,
    NodeNotFoundError,
    NodeRedactedError,
    NodeSupersededError,
    NodeTombstonedError,
    ProtectedNodeError,
)
from memstore.graph import lineage as lineage_sql
from memstore.graph.content import checked_content, checked_data
from memstore.graph.edges import insert_edge
from memstore.graph.nodes import remember_node, remember_params
from memstore.graph.rows import fetch_edges, fetch_nodes, to_node
from memstore.inputs import LinkInput, checked_id, checked_reason, checked_text, validated
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
    from memstore.namespace import Namespace


class NamespaceTransaction:
    """The verbs of one namespace on one connection; committed or rolled back as a whole."""

    def __init__(
        self, namespace: Namespace, conn: Connection, *, privacy_ceiling: int | None = None
    ):
        self.namespace = namespace
        self.conn = conn
        self.id = namespace.id
        self.name = namespace.name
        # The ceiling the transaction declared (None: read it back when needed).
        # Every read of nodes in it filters by the declared ceiling
        # (memstore.graph.rows.within_ceiling), as row-level security does.
        self.privacy_ceiling = privacy_ceiling
        # Set only by Namespace.cultivate, the one sanctioned door into
        # protected nodes (it records its actor and reason).
        self.cultivating = False

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
        text = checked_content(item.content, limit=self.namespace.settings.max_content_bytes)
        # Every write of a node passes here or revise (tiers, lifecycle operations).
        checked_data(item.data, limit=self.namespace.settings.max_data_bytes)
        row = self._remember(item, text, vector)
        return to_node(row, self.name), bool(row["created"])

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
        raw = self.conn.connection.driver_connection
        row = remember_node(raw, remember_params(self.id, item, text, embedder.name, vector))
        if row["created"] and vector is None:
            vector = self.namespace.vectors([item], [text])
            cache.upsert_vectors(self.conn, self.id, embedder.name, [row["id"]], [text], vector)
        return row

    def link(self, src: int, dst: int, **fields: Any) -> Edge:
        """See :meth:`memstore.namespace.Namespace.link`."""
        link = validated(LinkInput, src=src, dst=dst, **fields)
        if link.src == link.dst:
            raise InvalidInputError("an edge needs two different nodes", field="dst")
        ends = fetch_nodes(self.conn, self.id, self.name, [link.src, link.dst])
        for end in (link.src, link.dst):
            if end not in ends:
                self.raise_missing(end, edge=True)
            if ends[end].status in (NodeStatus.TOMBSTONED, NodeStatus.REDACTED):
                raise NodeTombstonedError(
                    f"node {end} is {ends[end].status.value}: it cannot be linked",
                    node_id=end,
                )
        if ends[link.dst].protected and not self.cultivating:
            raise ProtectedNodeError(
                f"node {link.dst} is protected: only ns.cultivate(...) may link into it",
                node_id=link.dst,
            )
        edge_id = insert_edge(self.conn, self.id, link.model_dump())
        return fetch_edges(self.conn, self.id, self.name, [edge_id])[edge_id]

    def revise(self, node_id: int, content: str, *, reason: str, **changes: Any) -> Node:
        """See :meth:`memstore.namespace.Namespace.revise`."""
        reason = checked_reason(reason)
        checked_data(changes.get("data"), limit=self.namespace.settings.max_data_bytes)
        old = self.current(node_id)
        if old.protected and not self.cultivating:
            raise ProtectedNodeError(
                f"node {node_id} is protected: only ns.cultivate(...) may revise it",
                node_id=node_id,
            )
        carried = old.model_dump(include=set(MemoryInput.model_fields) - {"embedding"})
        carried.update(changes, content=content)
        item = validated(MemoryInput, **carried)
        text = checked_content(item.content, limit=self.namespace.settings.max_content_bytes)
        checked_data(item.data, limit=self.namespace.settings.max_data_bytes)
        new_id = self._remember(item, text, None)["id"]
        if new_id == old.id:
            raise InvalidInputError(
                f"the revision of node {old.id} is identical to it", field="content"
            )
        lineage_sql.supersede(
            self.conn,
            self.id,
            old.id,
            new_id,
            reason=reason,
            actor=item.actor or self.namespace.settings.actor,
        )
        return self.node(new_id)

    def forget(
        self,
        target_id: int,
        *,
        reason: str,
        target: TargetKind = "node",
        actor: str | None = None,
    ) -> int:
        """See :meth:`memstore.namespace.Namespace.forget`."""
        reason = checked_reason(reason)
        target_id = checked_id(target_id, "target_id")
        if target not in ("node", "edge"):
            raise InvalidInputError("target must be 'node' or 'edge'", field="target")
        if target == "node":
            found = fetch_nodes(self.conn, self.id, self.name, [target_id])
            if not found:
                self.raise_missing(target_id)
            if found[target_id].protected and not self.cultivating:
                raise ProtectedNodeError(
                    f"node {target_id} is protected: it cannot be forgotten "
                    "(ns.cultivate(...) revises it; ns.redact(...) erases it)",
                    node_id=target_id,
                )
        elif not fetch_edges(self.conn, self.id, self.name, [target_id]):
            raise EdgeNotFoundError(
                f"edge {target_id} does not exist in namespace {self.name!r}",
                namespace=self.name,
                target_id=target_id,
            )
        return lineage_sql.tombstone(
            self.conn,
            self.id,
            target,
            target_id,
            reason=reason,
            actor=self._actor(actor),
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
        if self.privacy_ceiling is None:
            value = self.conn.execute(
                sa.text("SELECT current_setting(:name, true)"), {"name": CEILING_SETTING}
            ).scalar_one()
            self.privacy_ceiling = int(value) if value else PRIVACY_MAX
        return self.privacy_ceiling

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
        raw = self.conn.connection.driver_connection
        assert raw is not None
        (narrow,) = set_local({CEILING_SETTING: str(privacy_ceiling)})
        (restore,) = set_local({CEILING_SETTING: str(declared)})
        raw.execute(narrow)
        try:
            yield
        finally:
            if not raw.closed and raw.info.transaction_status.name == "INTRANS":
                raw.execute(restore)


__all__ = ["NamespaceTransaction"]
