"""A namespace at a glance (counts per tier and status, vector freshness, last activity),
and clearing a namespace with tombstones."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict

from memstore.embedding import cache
from memstore.inputs import checked_reason
from memstore.models import EmbeddingStatus

if TYPE_CHECKING:
    from memstore.services.scope import Scope

STATUSES = ("current", "superseded", "tombstoned", "redacted")

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


class NamespaceSummary(BaseModel):
    """What :meth:`memstore.namespace.Namespace.summary` reports."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    by_status: dict[str, int]
    """Nodes per status: current, superseded, tombstoned, redacted."""
    by_tier: dict[str, dict[str, int]]
    """Per tier ('' for nodes outside the tiers), nodes per status."""
    embeddings: EmbeddingStatus
    last_activity: datetime | None

    def text(self) -> str:
        """The summary as a few lines of plain text."""
        lines = [f"namespace {self.namespace!r}"]
        lines.append("  " + ", ".join(f"{self.by_status[s]} {s}" for s in STATUSES))
        for tier, counts in sorted(self.by_tier.items()):
            parts = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
            lines.append(f"  {tier or '(no tier)'}: {parts or 'empty'}")
        e = self.embeddings
        lines.append(
            f"  embeddings ({e.model}): {e.fresh} fresh, {e.missing} missing, {e.stale} stale,"
            f" index {'built' if e.index else 'absent'}"
        )
        when = f"{self.last_activity:%Y-%m-%d %H:%M:%S %Z}" if self.last_activity else "never"
        lines.append(f"  last activity: {when}")
        return "\n".join(lines)


def summarise(ns: Scope, privacy_ceiling: int | None = None) -> NamespaceSummary:
    """Count the namespace's nodes per tier and status; read vector freshness.

    Only nodes up to ``privacy_ceiling`` (default: the store's) are counted:
    a count must not tell a caller that a memory above it exists.
    """
    with ns.reading(privacy_ceiling=privacy_ceiling) as tx:
        rows = tx.conn.execute(COUNTS, {"ns": ns.id}).all()
        last = tx.conn.execute(LAST_ACTIVITY, {"ns": ns.id}).scalar_one()
        embeddings = cache.status(tx.conn, ns.id, ns.name, ns.embedder.name, ns.embedder.dims)
    by_status = dict.fromkeys(STATUSES, 0)
    by_tier: dict[str, dict[str, int]] = {}
    for tier, status, count in rows:
        by_status[status] += int(count)
        by_tier.setdefault(tier, dict.fromkeys(STATUSES, 0))[status] += int(count)
    return NamespaceSummary(
        namespace=ns.name,
        by_status=by_status,
        by_tier=by_tier,
        embeddings=embeddings,
        last_activity=last,
    )


def clear(ns: Scope, reason: str, actor: str | None) -> int:
    """Tombstone every current node of the namespace; returns how many. Nothing is deleted.

    Protected nodes (identity, values) stay: only ``ns.cultivate(...)`` retires them.
    """
    reason = checked_reason(reason)
    if not ns.exists():
        return 0  # nothing written yet: nothing to retire, no namespace to create
    with ns.transaction() as tx:
        # Every memory at once: wait for each writer of one (lineage locks).
        tx.locks.lock_namespace()
        done = tx.conn.execute(
            CLEAR, {"ns": ns.id, "reason": reason, "actor": actor or ns.settings.actor}
        )
        return int(done.rowcount)
