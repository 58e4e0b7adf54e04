"""Writing new memories into one namespace: one at a time, or in bulk.

:class:`Ingester` checks what comes in (the pydantic model, the size limits,
the privacy ceiling, the doors of lifecycle records and protected memories),
computes vectors outside the transaction where it can, and writes: one memory
in one round trip (memstore/graph/remember.sql), many by binary COPY in one
transaction (memstore/graph/nodes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from memstore.db.transaction import in_one_round_trip, transaction
from memstore.embedding import cache
from memstore.errors import InvalidInputError
from memstore.graph.content import checked_content, checked_data
from memstore.graph.nodes import QUERIES as NODE_QUERIES
from memstore.graph.nodes import analyze_nodes, copy_nodes, may_copy_directly, remember_params
from memstore.graph.rows import to_node
from memstore.inputs import validated
from memstore.models import MemoryInput, Node, NodeStatus
from memstore.services.confirmation import confirm_again
from memstore.services.scope import Scope
from memstore.tx import NamespaceTransaction, check_direct, check_kind

ANALYZE_AFTER = 1000  # rows loaded by one remember_many
REMEMBER_NODE = NODE_QUERIES["remember_node"]


def check_privacy(item: MemoryInput, ceiling: int) -> None:
    """Refuse a memory above the ceiling a write runs under: its writer could never read it
    back (row-level security refuses even the RETURNING of such a row)."""
    if item.privacy > ceiling:
        raise InvalidInputError(
            f"privacy {item.privacy} is above the privacy ceiling {ceiling} this write runs"
            " under (the privacy_ceiling setting, or the transaction's)",
            field="privacy",
        )


class Ingester:
    """The writing verbs of one namespace that create memories."""

    def __init__(self, scope: Scope):
        self.scope = scope

    def remember(self, content: str, fields: dict[str, Any]) -> Node:
        """See :meth:`memstore.namespace.Namespace.remember` (``fields``: its keywords)."""
        scope = self.scope
        # data first: a 50 MB document is refused after reading about the limit.
        checked_data(fields.get("data"), limit=scope.settings.max_data_bytes)
        item = validated(MemoryInput, content=content, **fields)
        check_direct(item)  # lifecycle records and protected memories have their own doors
        text = checked_content(item.content, limit=scope.settings.max_content_bytes)
        ceiling = scope.ceiling(None)
        check_privacy(item, ceiling)
        vector = scope.vectors([item], [text])  # outside the transaction: keep it short
        if not scope.exists():
            # The first write creates the namespace, in its own transaction.
            with scope.transaction() as tx:
                return tx.remember_item(item, vector=vector)
        # One round trip: BEGIN, the namespace scope, the one statement that
        # writes node and vector (memstore/graph/remember.sql), COMMIT.
        # The kept id's name is checked inside the statement (a namespace an owner
        # renamed writes nothing here, and the checked transaction below sees why).
        params = remember_params(
            scope.id, item, text, scope.embedder.name, vector[0], namespace_name=scope.name
        )
        rows = in_one_round_trip(
            scope.engine,
            scope.id,
            REMEMBER_NODE,
            params,
            privacy_ceiling=ceiling,
            prepare=scope.settings.prepared_statements,
        )
        if rows:
            node = to_node(rows[0], scope.name)
            if rows[0]["created"] or node.status is not NodeStatus.CURRENT:
                return node
            # Already stored as a current memory: that memory observed again,
            # a confirmation (memstore/services/confirmation.py). Only then a
            # second transaction: a new memory stays one round trip.
            with scope.transaction() as tx:
                return confirm_again(tx, node, False)
        # A concurrent writer stored the same memory after the statement's
        # snapshot: a new transaction sees its node (and confirms it). Or the
        # namespace policy refuses the kind: the statement wrote nothing, and
        # this raises. Or the kept id no longer has this name: the transaction
        # looks the name up again (and creates the namespace if nobody has it).
        with scope.transaction() as tx:
            return confirm_again(tx, *tx.store_item(item, vector=vector))

    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any] | MemoryInput],
        *,
        batch_size: int,
        progress: Callable[[int], None] | None,
    ) -> list[int]:
        """See :meth:`memstore.namespace.Namespace.remember_many`."""
        scope = self.scope
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(
                "batch_size must be an integer of at least 1", field="batch_size"
            )
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InvalidInputError(
                "items must be an iterable of texts, mappings or MemoryInputs", field="items"
            )
        parsed = [self._as_input(i, item) for i, item in enumerate(items)]
        ceiling = scope.ceiling(None)
        for i, p in enumerate(parsed):
            check_privacy(p, ceiling)
            check_direct(p, field=f"items[{i}].tier")
        limit = scope.settings.max_content_bytes
        texts = [
            checked_content(p.content, limit=limit, field=f"items[{i}].content")
            for i, p in enumerate(parsed)
        ]
        for i, p in enumerate(parsed):  # MemoryInputs given as such were not checked yet
            checked_data(p.data, limit=scope.settings.max_data_bytes, field=f"items[{i}].data")
        build_index_after = False
        ids: list[int] = []
        if not parsed:
            return ids  # nothing to write: no namespace to create
        model, dims = scope.embedder.name, scope.embedder.dims
        with scope.transaction() as tx:
            conn = tx.conn
            build_index_after = not cache.index_exists(conn, model, dims)
            policy = NamespaceTransaction(scope, conn).policy()
            for i, p in enumerate(parsed):
                check_kind(p, policy, field=f"items[{i}].kind")
            # The owner COPYs straight into the tables; a confined role cannot.
            direct = may_copy_directly(conn)
            for start in range(0, len(parsed), batch_size):
                batch, batch_texts = (
                    parsed[start : start + batch_size],
                    texts[start : start + batch_size],
                )
                vectors = scope.vectors(batch, batch_texts)
                ids += copy_nodes(conn, scope.id, batch, batch_texts, model, vectors, direct=direct)
                if progress is not None:
                    progress(len(batch))
        if len(ids) >= ANALYZE_AFTER:
            with transaction(scope.engine) as conn:
                analyze_nodes(conn)
        if build_index_after and ids:
            cache.ensure_index(scope.engine, model, dims)
        return ids

    def _as_input(self, position: int, item: object) -> MemoryInput:
        if isinstance(item, MemoryInput):
            return item
        if isinstance(item, str):
            return validated(MemoryInput, content=item)
        if isinstance(item, Mapping):
            if not all(isinstance(key, str) for key in item):
                raise InvalidInputError(
                    f"items[{position}] has a key that is not text", field="items"
                )
            checked_data(
                item.get("data"),
                limit=self.scope.settings.max_data_bytes,
                field=f"items[{position}].data",
            )
            try:
                return validated(MemoryInput, **item)
            except InvalidInputError as exc:
                raise InvalidInputError(f"items[{position}]: {exc}", field=exc.field) from None
        raise InvalidInputError(
            f"items[{position}] must be text, a mapping or a MemoryInput", field="items"
        )
