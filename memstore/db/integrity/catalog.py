"""Reading the live catalog, and building what is expected beside it to compare.

The check never compares text it wrote itself with what the server stores:
the expected object is created from sql/'s own statement (or the metadata)
in ``pg_temp`` inside a savepoint that :func:`scratch` always rolls back, so
both sides are deparsed by the same server and nothing is left behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection

LIVE = "'memstore'::regnamespace"
"""The namespace the catalog queries read the live objects from."""
SCRATCH = "pg_my_temp_schema()"
"""The namespace they read the expected objects from, built in :func:`scratch`."""


def rows(conn: Connection, query: str, **params: Any) -> list[tuple[Any, ...]]:
    """The rows of a catalog query, with bound parameters."""
    return [tuple(row) for row in conn.execute(sa.text(query), params)]


@contextmanager
def scratch(conn: Connection) -> Iterator[Any]:
    """The driver connection inside a savepoint rolled back at the end, whatever happens.

    The statements run on it are sql/'s own, composed with :mod:`psycopg.sql`;
    never input.
    """
    raw = conn.connection.driver_connection
    assert raw is not None
    savepoint = conn.begin_nested()
    try:
        yield raw
    finally:
        savepoint.rollback()


def attempt(raw: Any, statement: Any) -> str | None:
    """Run one of sql/'s statements in its own savepoint; the server's reason if it cannot.

    Building an expected object needs what it refers to: a policy is built on
    a copy of its live table, a view or SQL function reads live tables. When
    one of those is gone (a dropped table is reported as ``table-missing``)
    the expected object cannot be built; the caller names it instead of the
    check failing. Only "no such object" errors (SQLSTATE class 42) are
    caught: anything else is a fault of the check and raised.
    """
    try:
        with raw.transaction():
            raw.execute(statement)
    except psycopg.errors.ProgrammingError as error:
        return str(error.diag.message_primary or error).strip()
    return None


def object_key(conn: Connection, kind: str, name: str) -> str | None:
    """An object named in sql/ as the catalog queries name it (a function by its signature)."""
    if kind in ("FUNCTION", "PROCEDURE", "ROUTINE"):
        found = conn.execute(sa.text("SELECT to_regprocedure(:s)::text"), {"s": name}).scalar()
        return None if found is None else str(found)
    if kind == "SCHEMA":
        return name
    return name if name.startswith("memstore.") else f"memstore.{name}"


__all__ = ["LIVE", "SCRATCH", "attempt", "object_key", "rows", "scratch"]
