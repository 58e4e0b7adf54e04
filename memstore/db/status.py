"""What the store reports about its database: the server, pgvector, every table's size
and every namespace's (memstore/store.py, ``memstore status``)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.schema import SECRET_TABLES, metadata, namespaces, nodes


def server_versions(conn: Connection) -> tuple[str, str]:
    """The PostgreSQL server's version and the installed pgvector's."""
    server = conn.execute(sa.text("SHOW server_version")).scalar_one()
    pgvector = conn.execute(
        sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    ).scalar_one()
    return str(server), str(pgvector)


def row_counts(conn: Connection, ceiling: int) -> dict[str, int]:
    """Rows of every memstore table the service may read, by table; ``nodes`` counts only
    nodes up to ``ceiling``, the others are counted whole."""
    return {
        table.name: int(
            conn.execute(
                sa.select(sa.func.count())
                .select_from(table)
                .where(table.c.privacy <= ceiling if table is nodes else sa.true())
            ).scalar_one()
        )
        for table in metadata.sorted_tables
        if table.name not in SECRET_TABLES  # the service may not read them
    }


def namespace_sizes(conn: Connection, ceiling: int) -> list[tuple[str, datetime, int]]:
    """(name, created at, nodes up to ``ceiling``) of every namespace the role may list, by
    name."""
    counts = (
        sa.select(nodes.c.namespace_id, sa.func.count().label("nodes"))
        .where(nodes.c.privacy <= ceiling)
        .group_by(nodes.c.namespace_id)
        .subquery()
    )
    query = (
        sa.select(
            namespaces.c.name,
            namespaces.c.created_at,
            sa.func.coalesce(counts.c.nodes, 0).label("nodes"),
        )
        .select_from(namespaces.outerjoin(counts, counts.c.namespace_id == namespaces.c.id))
        .order_by(namespaces.c.name)
    )
    return [(row.name, row.created_at, int(row.nodes)) for row in conn.execute(query)]
