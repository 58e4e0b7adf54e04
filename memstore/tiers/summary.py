"""A namespace at a glance (counts per tier and status, vector freshness, last activity),
and clearing a namespace with tombstones."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from memstore.embedding import cache
from memstore.graph.census import last_activity, status_counts, tombstone_every_node
from memstore.inputs import checked_reason
from memstore.models import EmbeddingStatus

if TYPE_CHECKING:
    from memstore.services.scope import Scope

STATUSES = ("current", "superseded", "tombstoned", "redacted")


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
        rows = status_counts(tx.conn, ns.id)
        last = last_activity(tx.conn, ns.id)
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
        return tombstone_every_node(tx.conn, ns.id, reason, actor or ns.settings.actor)
