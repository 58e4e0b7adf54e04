"""Engines, pgvector registration, and the server requirements check."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import sqlalchemy as sa
from pgvector.psycopg import register_vector
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from memstore.db.urls import sqlalchemy_url
from memstore.errors import DatabaseUnavailableError, UnsupportedServerError

MIN_SERVER_VERSION = 150000  # PostgreSQL 15
MIN_PGVECTOR = (0, 8)

INSTALL_PGVECTOR = (
    "install pgvector >= 0.8 on the server (Debian/Ubuntu: apt install"
    " postgresql-<major>-pgvector; Docker: the pgvector/pgvector image, see"
    " docker-compose.yml; managed services: enable the 'vector' extension), or"
    " unset MEMSTORE_DATABASE_URL to use the embedded server"
)


def _register_vector(dbapi_connection: Any, _record: Any) -> None:
    # The vector type exists only once the first migration has created the
    # extension; until then the connection simply has no vector adapter.
    try:
        register_vector(dbapi_connection)
    except psycopg.ProgrammingError:
        pass
    finally:
        dbapi_connection.rollback()


# A pooled connection idle for longer than this is pinged before reuse (a
# server restart or a dropped socket shows there, not mid-statement); one used
# within it is not: a ping is a round trip, and recall is one round trip in all.
PING_AFTER_IDLE_S = 1.0
_IDLE_SINCE = "memstore_idle_since"


def _mark_idle(_dbapi_connection: Any, record: Any) -> None:
    record.info[_IDLE_SINCE] = time.monotonic()


def _ping_if_idle(engine: Engine) -> Any:
    def checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.pop(_IDLE_SINCE, None)
        stale = idle_since is None or time.monotonic() - idle_since > PING_AFTER_IDLE_S
        try:
            if dbapi_connection.broken or (stale and not engine.dialect.do_ping(dbapi_connection)):
                raise sa.exc.InvalidatePoolError("the connection was closed")
        except psycopg.Error as exc:
            # The pool retries with a new connection (and drops the older ones).
            raise sa.exc.InvalidatePoolError(str(exc)) from exc

    return checkout


# psycopg prepares a statement after this many executions; None would also
# refuse an explicit ``execute(..., prepare=True)``, which recall uses.
NEVER_AUTO_PREPARE = 2**31 - 1


def create_engine(url: str, **kwargs: Any) -> Engine:
    """An engine on psycopg 3 that adapts pgvector's type to numpy arrays.

    psycopg's automatic preparing is off (it would prepare every statement
    run five times); memstore prepares only the statements it asks to, with
    ``execute(..., prepare=True)``: recall's and a context packet's, when
    ``Settings.prepared_statements`` is on (docs/operations.md). A pooled
    connection is pinged before reuse only when it sat idle for over
    :data:`PING_AFTER_IDLE_S` (SQLAlchemy's pre-ping would add a round trip to
    every call).
    """
    connect_args = {"prepare_threshold": NEVER_AUTO_PREPARE, **kwargs.pop("connect_args", {})}
    engine = sa.create_engine(sqlalchemy_url(url), connect_args=connect_args, **kwargs)
    event.listen(engine, "connect", _register_vector)
    event.listen(engine, "checkin", _mark_idle)
    event.listen(engine, "checkout", _ping_if_idle(engine))
    return engine


def _parse_version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def assess_server(
    server_version_num: int, vector_available: str | None, vector_installed: str | None
) -> None:
    """Raise :class:`UnsupportedServerError` unless the server can host memstore.

    >>> assess_server(170002, "0.8.0", None)
    """
    if server_version_num < MIN_SERVER_VERSION:
        major = server_version_num // 10000
        raise UnsupportedServerError(
            f"memstore needs PostgreSQL 15 or newer; this server is PostgreSQL {major}"
        )
    if vector_available is None and vector_installed is None:
        raise UnsupportedServerError(
            f"the server has no 'vector' extension (pgvector): {INSTALL_PGVECTOR}"
        )
    version = _parse_version(vector_installed or vector_available)
    if version is None or version[:2] < MIN_PGVECTOR:
        raise UnsupportedServerError(
            f"memstore needs pgvector >= 0.8; the server offers"
            f" {vector_installed or vector_available}: {INSTALL_PGVECTOR}"
        )


def check_server(conn: Connection) -> None:
    """Check the server behind ``conn`` with :func:`assess_server`."""
    version_num = int(conn.execute(sa.text("SHOW server_version_num")).scalar_one())
    row = conn.execute(
        sa.text(
            "SELECT default_version, installed_version FROM pg_available_extensions"
            " WHERE name = 'vector'"
        )
    ).first()
    assess_server(version_num, row[0] if row else None, row[1] if row else None)


def connect_checked(engine: Engine) -> None:
    """Connect once: fail fast, in the user's terms, if the server is unusable."""
    try:
        with engine.connect() as conn:
            check_server(conn)
    except sa.exc.OperationalError as exc:
        shown = engine.url.set(drivername="postgresql").render_as_string(hide_password=True)
        raise DatabaseUnavailableError(f"cannot connect to {shown}: {exc.orig}") from exc
