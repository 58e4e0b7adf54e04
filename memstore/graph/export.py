"""The SQL of export and restore (``export.sql``): one namespace's rows out as JSON lines,
and back in under new ids.

The service (:mod:`memstore.services.snapshot`) decides what goes in a file
and checks what comes back; this module only moves rows. Every function takes
the raw psycopg connection of a transaction the caller opened and scoped to
the namespace.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from importlib.resources import files
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from sqlalchemy.engine import Connection, Engine

from memstore.db.queries import named_queries
from memstore.db.transaction import declare_scope, transaction
from memstore.embedding.base import Vectors
from memstore.graph.content import source_hash
from memstore.graph.nodes import QUERIES as NODE_QUERIES
from memstore.graph.nodes import vector_copy_data

QUERIES = named_queries(files("memstore.graph").joinpath("export.sql").read_text())

# The sections of an export, in the order a file holds them and a restore
# needs them: every row's references point to sections before it.
SECTIONS = (
    "node",
    "edge",
    "tombstone",
    "supersession",
    "redaction",
    "node_state",
    "edge_state",
    "proposal",
    "operation",
    "confirmation",
    "procedure_outcome",
    "procedure_role",
    "embedding",
)

# Sections whose rows keep an id others refer to, and the table that draws it.
ID_TABLES = {
    "node": "memstore.nodes",
    "edge": "memstore.edges",
    "tombstone": "memstore.tombstones",
    "proposal": "memstore.proposals",
    "operation": "memstore.operations",
}


def _raw(conn: Connection) -> psycopg.Connection[Any]:
    raw: psycopg.Connection[Any] | None = conn.connection.driver_connection
    assert raw is not None
    return raw


@contextmanager
def snapshot_transaction(
    engine: Engine, namespace_id: int, *, privacy_ceiling: int
) -> Iterator[Connection]:
    """A read-only REPEATABLE READ transaction scoped to the namespace: every statement in
    it reads the same snapshot, so an export taken while others write is consistent."""
    with transaction(engine) as conn:
        _raw(conn).execute(QUERIES["snapshot"])
        declare_scope(conn, namespace_id, privacy_ceiling)
        yield conn


def export_rows(conn: Connection, section: str, namespace_id: int, model: str) -> Iterator[bytes]:
    """The section's rows of the namespace as JSON lines, in blocks as COPY sends them.

    ``namespace_id`` must be an int (it is rendered as a literal: COPY binds
    nothing); ``model`` names the vectors of the ``embedding`` section.
    """
    if not isinstance(namespace_id, int) or isinstance(namespace_id, bool):
        raise TypeError(f"a namespace id is an int, not {type(namespace_id).__name__}")
    statement = sql.SQL(QUERIES[f"export_{section}"].strip()).format(
        ns=sql.Literal(namespace_id), model=sql.Literal(model)
    )
    with _raw(conn).cursor() as cursor, cursor.copy(statement) as copy:
        for block in copy:
            yield bytes(block)


def server_time(conn: Connection) -> datetime:
    """The transaction's time (its snapshot's start, as every stamp uses it)."""
    row = _raw(conn).execute(QUERIES["export_time"]).fetchone()
    assert row is not None
    when: datetime = row[0]
    return when


def begin_restore(conn: Connection, namespace_id: int) -> bool:
    """Prepare the transaction for a restore into ``namespace_id``: the staging tables,
    the restoring flag and the namespace's lock. True when the stamp triggers will keep
    the file's times (the connected role owns the tables and logged in as itself)."""
    _raw(conn).execute(QUERIES["create_staging"])
    _raw(conn).execute(QUERIES["restoring"])
    _raw(conn).execute(QUERIES["lock_namespace"], {"ns": namespace_id})
    row = _raw(conn).execute(QUERIES["keeps_time"]).fetchone()
    return bool(row and row[0])


def holds_rows(conn: Connection, namespace_id: int) -> bool:
    """Whether the namespace has any memory, audit row or proposal."""
    row = _raw(conn).execute(QUERIES["holds_rows"], {"ns": namespace_id}).fetchone()
    return bool(row and row[0])


def clear_staging(conn: Connection) -> None:
    """Empty the staging table for the next section."""
    _raw(conn).execute(QUERIES["clear_staging"])


@contextmanager
def staging(conn: Connection) -> Iterator[psycopg.Copy]:
    """A COPY into the staging table: ``write_row((line_number, json_text))`` per row."""
    with _raw(conn).cursor() as cursor, cursor.copy(QUERIES["copy_staging"]) as copy:
        yield copy


def map_staged_ids(conn: Connection, section: str) -> None:
    """Draw new ids for the staged rows of ``section`` (one with ids others name)."""
    _raw(conn).execute(
        QUERIES["map_ids"],
        {"kind": section, "table": ID_TABLES[section]},
    )


def reserve_ids(conn: Connection, section: str, old_ids: Sequence[int]) -> None:
    """Draw new ids for rows of ``section`` not staged yet (their documents name ids)."""
    _raw(conn).execute(
        QUERIES["reserve_ids"],
        {"kind": section, "table": ID_TABLES[section], "old_ids": list(old_ids)},
    )


def lookup_ids(conn: Connection, wanted: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The new id of each (kind, old id) the map knows."""
    if not wanted:
        return {}
    rows = (
        _raw(conn)
        .execute(
            QUERIES["lookup_ids"],
            {"kinds": [kind for kind, _ in wanted], "old_ids": [old for _, old in wanted]},
        )
        .fetchall()
    )
    return {(str(kind), int(old)): int(new) for kind, old, new in rows}


def insert_staged(conn: Connection, section: str, namespace_id: int, model: str) -> int:
    """Move the staged rows of ``section`` into their table under new ids; how many."""
    cursor = _raw(conn).execute(
        QUERIES[f"insert_{section}"],
        {"ns": namespace_id, "model": model},
    )
    return max(cursor.rowcount, 0)


def unembedded(
    conn: Connection, namespace_id: int, model: str, *, after: int, limit: int
) -> list[tuple[int, str]]:
    """The next ``limit`` (id, content) of the namespace's memories after id ``after``
    without a ``model`` vector, redacted ones left out."""
    rows = _raw(conn).execute(
        QUERIES["unembedded"],
        {"ns": namespace_id, "model": model, "after": after, "limit": limit},
    )
    return [(int(node_id), str(content)) for node_id, content in rows]


def record_restore(conn: Connection, namespace_id: int, row: dict[str, Any]) -> None:
    """The restore's own row in the audit log (through memstore.record_operations)."""
    _raw(conn).execute(QUERIES["audit"], {"ns": namespace_id, "rows": Jsonb([row])})


def write_vectors(
    conn: Connection,
    namespace_id: int,
    model: str,
    node_ids: Sequence[int],
    texts: Sequence[str],
    vectors: Vectors,
) -> None:
    """The restored memories' vectors by binary COPY straight into the embeddings table
    (a restore runs as the owner, whom COPY may write for; numpy arrays, never text)."""
    data = vector_copy_data(
        namespace_id, node_ids, model, vectors, [source_hash(text) for text in texts]
    )
    with _raw(conn).cursor() as cursor, cursor.copy(NODE_QUERIES["copy_vectors"]) as copy:
        copy.write(data)
