"""The conditions every recall applies to nodes: namespace, kinds, time, privacy, status."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from memstore.db.schema import supersessions, tombstones
from memstore.recall.query import RecallQuery


def node_filters(n: sa.FromClause, namespace_id: int, q: RecallQuery) -> list[Any]:
    """WHERE conditions on the nodes alias ``n`` for query ``q``."""
    conditions: list[Any] = [n.c.namespace_id == namespace_id]
    if q.kinds:
        conditions.append(n.c.kind.in_(q.kinds))
    if q.node_types:
        conditions.append(n.c.node_type.in_(q.node_types))
    if q.tiers:
        conditions.append(n.c.tier.in_(q.tiers))
    if q.privacy_ceiling is not None:
        conditions.append(n.c.privacy <= q.privacy_ceiling)
    if q.valid_at is not None:
        conditions.append(sa.or_(n.c.valid_from.is_(None), n.c.valid_from <= q.valid_at))
        conditions.append(sa.or_(n.c.valid_to.is_(None), n.c.valid_to > q.valid_at))
    if q.as_of is not None:
        conditions.append(n.c.recorded_at <= q.as_of)
    if not q.include_superseded:
        superseded = sa.exists().where(
            supersessions.c.namespace_id == namespace_id, supersessions.c.old_id == n.c.id
        )
        if q.as_of is not None:
            superseded = superseded.where(supersessions.c.at <= q.as_of)
        conditions.append(~superseded)
    if not q.include_tombstoned:
        tombstoned = sa.exists().where(
            tombstones.c.namespace_id == namespace_id, tombstones.c.node_id == n.c.id
        )
        if q.as_of is not None:
            tombstoned = tombstoned.where(tombstones.c.at <= q.as_of)
        conditions.append(~tombstoned)
    return conditions
