"""Finding and creating namespaces by name (memstore.find_namespace and
memstore.open_namespace, sql/07)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection

from memstore.embedding.base import Embedder


def find_namespace(conn: Connection, name: str) -> int | None:
    """The id of the namespace called ``name``, or None; never creates it.

    memstore.find_namespace (sql/07) compares the name exactly, never with
    LIKE, so '_' and '%' are just characters; SECURITY DEFINER, so a role
    confined by row-level security can look up a name it knows (and only that).
    """
    found = conn.execute(sa.select(sa.func.memstore.find_namespace(name))).scalar_one()
    return None if found is None else int(found)


def open_namespace(conn: Connection, name: str, embedder: Embedder) -> int:
    """The namespace's id, creating it (and recording its embedder) in ``conn``'s
    transaction if it does not exist: a rollback undoes the creation too. ``name`` has
    been checked (memstore.services.scope.check_namespace_name)."""
    settings = {"embedder": embedder.name, "dims": embedder.dims}
    found = conn.execute(
        sa.select(
            sa.func.memstore.open_namespace(name, sa.cast(sa.literal(settings, JSONB), JSONB))
        )
    ).scalar_one()
    return int(found)
