"""A namespace counted and cleared: nodes per tier and status, its last activity, and a
tombstone for every current node (memstore/tiers/summary.py)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

COUNTS = sa.text(
    """
    SELECT coalesce(n.tier, '') AS tier,
           CASE WHEN EXISTS (SELECT 1 FROM memstore.redactions r
                             WHERE r.namespace_id = :ns AND r.node_id = n.id) THEN 'redacted'
                WHEN EXISTS (SELECT 1 FROM memstore.tombstones t
                             WHERE t.namespace_id = :ns AND t.node_id = n.id) THEN 'tombstoned'
                WHEN EXISTS (SELECT 1 FROM memstore.supersessions s
                             WHERE s.namespace_id = :ns AND s.old_id = n.id) THEN 'superseded'
                ELSE 'current' END AS status,
           count(*) AS nodes
    FROM memstore.nodes n
    WHERE n.namespace_id = :ns
      AND n.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
    GROUP BY 1, 2
    """
)

LAST_ACTIVITY = sa.text(
    """
    SELECT greatest(
        (SELECT max(recorded_at) FROM memstore.nodes
         WHERE namespace_id = :ns
           AND privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint),
        (SELECT max(recorded_at) FROM memstore.edges WHERE namespace_id = :ns),
        (SELECT max(at) FROM memstore.tombstones WHERE namespace_id = :ns),
        (SELECT max(at) FROM memstore.supersessions WHERE namespace_id = :ns),
        (SELECT max(at) FROM memstore.activations WHERE namespace_id = :ns))
    """
)

# Every current node up to the transaction's privacy ceiling gets a tombstone
# (a caller cannot retire what it cannot see); superseded versions are already
# hidden behind their current one, redacted ones hold nothing.
CLEAR = sa.text(
    """
    INSERT INTO memstore.tombstones (namespace_id, target_kind, node_id, reason, actor)
    SELECT :ns, 'node', n.id, :reason, :actor
    FROM memstore.nodes n
    WHERE n.namespace_id = :ns
      AND NOT n.protected
      AND n.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
      AND NOT EXISTS (SELECT 1 FROM memstore.tombstones t
                      WHERE t.namespace_id = :ns AND t.node_id = n.id)
      AND NOT EXISTS (SELECT 1 FROM memstore.supersessions s
                      WHERE s.namespace_id = :ns AND s.old_id = n.id)
      AND NOT EXISTS (SELECT 1 FROM memstore.redactions r
                      WHERE r.namespace_id = :ns AND r.node_id = n.id)
    """
)


def status_counts(conn: Connection, namespace_id: int) -> list[tuple[str, str, int]]:
    """(tier, status, nodes) of the namespace's nodes up to the transaction's privacy
    ceiling; tier ``''`` for nodes outside the tiers."""
    rows = conn.execute(COUNTS, {"ns": namespace_id}).all()
    return [(str(tier), str(status), int(count)) for tier, status, count in rows]


def last_activity(conn: Connection, namespace_id: int) -> datetime | None:
    """When the namespace last changed (a node up to the ceiling, an edge, a tombstone, a
    supersession, an activation); None when nothing happened yet."""
    found: datetime | None = conn.execute(LAST_ACTIVITY, {"ns": namespace_id}).scalar_one()
    return found


def tombstone_every_node(conn: Connection, namespace_id: int, reason: str, actor: str) -> int:
    """Tombstone every current, unprotected node up to the transaction's ceiling; returns
    how many."""
    done = conn.execute(CLEAR, {"ns": namespace_id, "reason": reason, "actor": actor})
    return int(done.rowcount)
