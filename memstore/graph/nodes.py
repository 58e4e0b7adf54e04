"""Writing nodes: one at a time (idempotent INSERT … ON CONFLICT) or in bulk (binary COPY)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from psycopg import sql
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection

from memstore.db.schema import nodes
from memstore.embedding.base import Vectors
from memstore.graph.content import content_hash, source_hash
from memstore.models import MemoryInput

# Columns a MemoryInput fills, in COPY order.
INPUT_COLUMNS = (
    "kind", "node_type", "tier", "layer", "label", "content", "data", "importance",
    "confidence", "decay_rate", "privacy", "protected", "subject", "scope", "source",
    "actor", "run_id", "observed_at", "valid_from", "valid_to",
)  # fmt: skip
COPY_TYPES = (
    "text", "text", "text", "int2", "text", "text", "jsonb", "float4", "float4", "float4",
    "int2", "bool", "text", "text", "text", "text", "text", "timestamptz", "timestamptz",
    "timestamptz",
)  # fmt: skip
IDEMPOTENCY_KEY = ["namespace_id", "kind", "node_type", "content_hash"]


def row_values(item: MemoryInput, content: str) -> dict[str, Any]:
    """The node columns of ``item``, with its checked content and data defaulted to {}."""
    values = item.model_dump(include=set(INPUT_COLUMNS))
    values["content"] = content
    values["data"] = item.data or {}
    return values


def insert_node(
    conn: Connection, namespace_id: int, item: MemoryInput, content: str
) -> tuple[int, Mapping[Any, Any] | None]:
    """Insert one node, or find the identical one already stored.

    Returns the id and, when this call created the node, its row (so the
    caller need not read it back).
    """
    key = content_hash(content, item.dedupe_key)
    statement = (
        pg_insert(nodes)
        .values(namespace_id=namespace_id, content_hash=key, **row_values(item, content))
        .on_conflict_do_nothing(index_elements=IDEMPOTENCY_KEY)
        .returning(*nodes.c)
    )
    created = conn.execute(statement).mappings().first()
    if created is not None:
        return int(created["id"]), created
    # A concurrent writer may have inserted it: ON CONFLICT waited for that
    # transaction, and this statement's fresh snapshot sees its row.
    existing = conn.execute(
        sa.select(nodes.c.id).where(
            nodes.c.namespace_id == namespace_id,
            nodes.c.kind == item.kind,
            nodes.c.node_type == item.node_type,
            nodes.c.content_hash == key,
        )
    ).scalar_one()
    return int(existing), None


def copy_nodes(
    conn: Connection,
    namespace_id: int,
    items: Sequence[MemoryInput],
    contents: Sequence[str],
    model: str | None,
    vectors: Vectors | None,
) -> list[int]:
    """Bulk insert with binary COPY into a temporary table, then one INSERT … SELECT.

    Returns the node id of every item, in order; items identical to stored
    nodes (or to each other) get the existing id. Vectors, when given, are
    written for newly created nodes only, also by binary COPY of numpy arrays.
    """
    raw = conn.connection.driver_connection
    assert raw is not None
    raw.execute(
        "CREATE TEMP TABLE IF NOT EXISTS memstore_ingest ("
        " ord integer, content_hash bytea, kind text, node_type text, tier text, layer int2,"
        " label text, content text, data jsonb, importance float4, confidence float4,"
        " decay_rate float4, privacy int2, protected bool, subject text, scope text,"
        " source text, actor text, run_id text, observed_at timestamptz,"
        " valid_from timestamptz, valid_to timestamptz, embedding vector, source_hash bytea"
        ") ON COMMIT DELETE ROWS"
    )
    raw.execute("TRUNCATE memstore_ingest")  # earlier batches of this transaction
    has_vectors = vectors is not None
    columns = ["ord", "content_hash", *INPUT_COLUMNS]
    types = ["int4", "bytea", *COPY_TYPES]
    if has_vectors:
        columns += ["embedding", "source_hash"]
        types += ["vector", "bytea"]
    copy_sql = sql.SQL("COPY memstore_ingest ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    with raw.cursor().copy(copy_sql) as copy:
        copy.set_types(types)
        for ordinal, (item, content) in enumerate(zip(items, contents, strict=True)):
            values = row_values(item, content)
            row: list[Any] = [ordinal, content_hash(content, item.dedupe_key)]
            row += [values[name] for name in INPUT_COLUMNS]
            if has_vectors:
                assert vectors is not None
                row += [vectors[ordinal], source_hash(content)]
            copy.write_row(row)

    insert_columns = sql.SQL(", ").join(map(sql.Identifier, ["content_hash", *INPUT_COLUMNS]))
    raw.execute(
        sql.SQL(
            "INSERT INTO memstore.nodes (namespace_id, {cols})"
            " SELECT DISTINCT ON (kind, node_type, content_hash) %(ns)s, {cols}"
            " FROM memstore_ingest ORDER BY kind, node_type, content_hash, ord"
            " ON CONFLICT (namespace_id, kind, node_type, content_hash) DO NOTHING"
        ).format(cols=insert_columns),
        {"ns": namespace_id},
    )
    ids = raw.execute(
        "SELECT n.id FROM memstore_ingest i JOIN memstore.nodes n"
        " ON n.namespace_id = %(ns)s AND n.kind = i.kind AND n.node_type = i.node_type"
        " AND n.content_hash = i.content_hash ORDER BY i.ord",
        {"ns": namespace_id},
    ).fetchall()
    if has_vectors:
        raw.execute(
            "INSERT INTO memstore.embeddings"
            " (namespace_id, node_id, model, dims, embedding, source_hash)"
            " SELECT DISTINCT ON (n.id) %(ns)s, n.id, %(model)s, vector_dims(i.embedding),"
            " i.embedding, i.source_hash"
            " FROM memstore_ingest i JOIN memstore.nodes n"
            " ON n.namespace_id = %(ns)s AND n.kind = i.kind AND n.node_type = i.node_type"
            " AND n.content_hash = i.content_hash"
            # Only where the stored text is exactly the embedded text: a vector
            # of a whitespace variant would be stale from the start.
            " WHERE n.content = i.content"
            " ORDER BY n.id, i.ord"
            " ON CONFLICT (namespace_id, node_id, model) DO NOTHING",
            {"ns": namespace_id, "model": model},
        )
    return [int(row[0]) for row in ids]
