"""Writing edges: typed, weighted links inside one namespace."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.schema import edges, tombstones

# The columns that make two links "the same link": everything a caller gives
# (memstore.inputs.LinkInput); the id and recorded_at are the store's own.
IDENTITY_FIELDS = (
    "src", "dst", "relation", "weight", "inhibitory", "confidence", "layer",
    "source", "actor", "run_id",
)  # fmt: skip


def insert_edge(conn: Connection, namespace_id: int, values: dict[str, Any]) -> int:
    """Insert an edge; the composite foreign keys refuse an endpoint of another namespace."""
    statement = sa.insert(edges).values(namespace_id=namespace_id, **values).returning(edges.c.id)
    return int(conn.execute(statement).scalar_one())


def find_edge(conn: Connection, namespace_id: int, values: dict[str, Any]) -> int | None:
    """The oldest edge that is not forgotten and has every one of ``values``, else None.

    weight and confidence are ``real`` columns: the given floats are compared
    as ``real`` too (0.3 as a double is not the 0.3 a real column stored).
    Nulls match nulls. The caller holds both ends' lineage locks, so a link
    racing this one has committed (and is seen) or has not started.
    """
    conditions = [edges.c.namespace_id == namespace_id]
    for name in IDENTITY_FIELDS:
        column, value = edges.c[name], values[name]
        if value is None:
            conditions.append(column.is_(None))
        elif name in ("weight", "confidence"):
            conditions.append(column == sa.cast(sa.bindparam(None, value, sa.Float), sa.REAL))
        else:
            conditions.append(column == value)
    forgotten = sa.exists().where(
        tombstones.c.namespace_id == namespace_id, tombstones.c.edge_id == edges.c.id
    )
    query = sa.select(edges.c.id).where(*conditions, ~forgotten).order_by(edges.c.id).limit(1)
    found = conn.execute(query).scalar_one_or_none()
    return None if found is None else int(found)
