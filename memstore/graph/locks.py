"""Lineage locks: one writer at a time per memory, taken before its status is read.

Revise, link, forget, redact, cultivate and the lifecycle law's writes all
check a memory's status and then write. Without a lock held between the two,
a revise racing a forget leaves a live successor of a forgotten memory, and a
link racing a forget records an edge into a tombstone. :class:`LineageLocks`
takes transaction-scoped advisory locks (``locks.sql``) keyed by (namespace,
node) before the check; they are held until COMMIT or ROLLBACK.

Rules that keep them deadlock-free and bounded:

- every transaction takes the namespace's key (shared) before any node key, and
  node keys in ascending order within one call;
- a transaction that would hold more than :data:`MAX_NODE_LOCKS` node keys takes
  the namespace's key exclusively instead (one lock for all its memories: the
  lock table is shared memory, and a batch may name thousands of memories);
- a verb re-reads what it checks after locking (READ COMMITTED: each statement
  sees what committed before it).

A memory locked later than the first call (the new version a redaction finds
after re-reading a lineage) can still meet another transaction locking in the
opposite order; PostgreSQL then detects the deadlock and rolls one back, which
leaves as a :class:`~memstore.errors.DatabaseError` and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.resources import files

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.queries import named_queries
from memstore.graph import lineage as lineage_sql

QUERIES = named_queries(files("memstore.graph").joinpath("locks.sql").read_text())
LOCK_NODES = sa.text(QUERIES["lock_nodes"])
LOCK_NAMESPACE = sa.text(QUERIES["lock_namespace"])
# More node keys than this in one transaction: lock the whole namespace instead.
MAX_NODE_LOCKS = 64


def int4_key(value: int) -> int:
    """``value`` folded into int4 (two's complement): ids below 2**32 never collide.

    >>> int4_key(7), int4_key(2**31), int4_key(2**32 + 7)
    (7, -2147483648, 7)
    """
    return (value + 2**31) % 2**32 - 2**31


class LineageLocks:
    """The lineage locks one transaction holds on one namespace.

    Keep one per transaction (``NamespaceTransaction.locks``): it remembers what
    is held, so locking a memory twice costs nothing and the namespace's shared
    key is taken once.
    """

    def __init__(self, conn: Connection, namespace_id: int):
        self.conn = conn
        self.namespace_id = namespace_id
        self.held: set[int] = set()
        self.whole = False
        self._shared = False

    def lock(self, node_ids: Iterable[int]) -> None:
        """Lock these memories (of this namespace) until the transaction ends."""
        wanted = sorted({int(i) for i in node_ids} - self.held)
        if self.whole or not wanted:
            return
        if len(self.held) + len(wanted) > MAX_NODE_LOCKS:
            self.lock_namespace()
            return
        self.conn.execute(
            LOCK_NODES,
            {
                "ns": self.namespace_id,
                "first": not self._shared,
                "ns_key": int4_key(self.namespace_id),
                "keys": [int4_key(i) for i in wanted],
            },
        )
        self._shared = True
        self.held.update(wanted)

    def lock_namespace(self) -> None:
        """Lock every memory of the namespace: wait for each writer of one to finish."""
        if not self.whole:
            self.conn.execute(LOCK_NAMESPACE, {"ns": self.namespace_id})
            self.whole = True

    def lock_lineage(self, node_id: int) -> list[int]:
        """Lock every version of ``node_id``'s lineage; returns them, oldest first.

        The lineage is read again after locking, until no version appeared in
        between (a revise that committed while this waited adds one).
        """
        ids = lineage_sql.lineage_ids(self.conn, self.namespace_id, node_id) or [node_id]
        while True:
            self.lock(ids)
            again = lineage_sql.lineage_ids(self.conn, self.namespace_id, node_id) or [node_id]
            if self.whole or set(again) <= self.held:
                return again
            ids = again


__all__ = ["MAX_NODE_LOCKS", "LineageLocks", "int4_key"]
