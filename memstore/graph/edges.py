"""Writing edges: typed, weighted links inside one namespace."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.schema import edges


def insert_edge(conn: Connection, namespace_id: int, values: dict[str, Any]) -> int:
    """Insert an edge; the composite foreign keys refuse an endpoint of another namespace."""
    statement = sa.insert(edges).values(namespace_id=namespace_id, **values).returning(edges.c.id)
    return int(conn.execute(statement).scalar_one())
