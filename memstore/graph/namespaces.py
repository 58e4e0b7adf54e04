"""Finding and creating namespaces by name (memstore.find_namespace and
memstore.open_namespace, sql/07)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, Engine

from memstore.db.transaction import Statement, in_one_round_trip
from memstore.embedding.base import Embedder

# The id of a namespace by its exact name (memstore.find_namespace: SECURITY DEFINER,
# so a role confined by row-level security may look up a name it knows).
LOOKUP_SQL = "SELECT memstore.find_namespace(%(name)s::text) AS id"

# The name of the namespace a transaction declared: sent beside a read that uses an id
# the store kept for a name, so the read's rows count only while that id still has
# that name (row-level security shows a confined role its declared namespace only).
NAME_SQL = "SELECT ns.name FROM memstore.namespaces ns WHERE ns.id = %(ns)s"


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


def lookup_namespace(engine: Engine, name: str) -> int | None:
    """:func:`find_namespace` in one round trip (its own transaction, the statement,
    BEGIN and COMMIT sent together)."""
    (row,) = in_one_round_trip(engine, 0, LOOKUP_SQL, {"name": name})
    return None if row["id"] is None else int(row["id"])


def name_check(namespace_id: int) -> Statement:
    """:data:`NAME_SQL` for ``namespace_id``, to send beside a read of it."""
    return (NAME_SQL, {"ns": namespace_id})
