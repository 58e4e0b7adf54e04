"""Alembic environment for memstore.

Three ways in: memstore passes an open connection (``config.attributes``);
``alembic`` on the command line uses ``-x url=...`` or MEMSTORE_DATABASE_URL;
offline mode (``--sql``) needs no database at all.
"""

from __future__ import annotations

import os
from typing import Any

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from memstore.db.engine import create_engine
from memstore.db.schema import SCHEMA, metadata

config = context.config

# The version table lives in our own schema so memstore never collides with
# another application's Alembic history in the same database.
HNSW_INDEX_PREFIX = "ix_embeddings_hnsw_"


def include_object(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    # One HNSW index per embedding model is created at run time (it depends on
    # the model and its dimensions), so it is not drift.
    return not (type_ == "index" and reflected and (name or "").startswith(HNSW_INDEX_PREFIX))


COMMON: dict[str, Any] = {
    "include_object": include_object,
    "target_metadata": metadata,
    "version_table_schema": SCHEMA,
    "include_schemas": True,
    "include_name": lambda name, type_, _parent: type_ != "schema" or name == SCHEMA,
    "compare_type": True,
}
CREATE_SCHEMA = f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or os.environ.get(
        "MEMSTORE_DATABASE_URL"
    )
    if not url:
        raise SystemExit(
            "alembic: set MEMSTORE_DATABASE_URL or pass -x url=postgresql://... "
            "(or use `memstore db upgrade`, which also knows the embedded server)"
        )
    return url


def run_offline() -> None:
    # Named paramstyle: otherwise every % in our SQL (format() strings) would be
    # printed doubled, and the script a DBA runs would differ from the migration.
    context.configure(
        dialect_name="postgresql",
        dialect_opts={"paramstyle": "named"},
        literal_binds=True,
        **COMMON,
    )
    context.execute(CREATE_SCHEMA)
    with context.begin_transaction():
        context.run_migrations()


def _run(connection: Connection) -> None:
    connection.execute(text(CREATE_SCHEMA))
    context.configure(connection=connection, **COMMON)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(_url())
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
