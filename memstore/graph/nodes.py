"""Writing nodes: one at a time (one idempotent statement) or in bulk (binary COPY)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from sqlalchemy.engine import Connection

from memstore.db.queries import named_queries
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
# The staging row of copy_nodes: content_hash, then the input columns.
STAGING_TYPES = ["bytea", *COPY_TYPES]
CONTENT_AT = 1 + INPUT_COLUMNS.index("content")
DATA_AT = 1 + INPUT_COLUMNS.index("data")
QUERIES = {
    **named_queries(files("memstore.graph").joinpath("ingest.sql").read_text()),
    **named_queries(files("memstore.graph").joinpath("remember.sql").read_text()),
}


def row_values(item: MemoryInput, content: str) -> dict[str, Any]:
    """The node columns of ``item``, with its checked content and data defaulted to {}."""
    values = item.model_dump(include=set(INPUT_COLUMNS))
    values["content"] = content
    values["data"] = item.data or {}
    return values


def remember_params(
    namespace_id: int,
    item: MemoryInput,
    content: str,
    model: str,
    vector: Vectors | None,
) -> dict[str, Any]:
    """The parameters of ``remember_node`` (``remember.sql``) for ``item``.

    ``vector`` (a float32 row, sent in binary) is written with the node when
    the statement creates it; None writes the node alone.
    """
    values = row_values(item, content)
    values["data"] = Jsonb(values["data"])
    return {
        **values,
        "ns": namespace_id,
        "content_hash": content_hash(content, item.dedupe_key),
        "model": model,
        "dims": None if vector is None else int(vector.shape[-1]),
        "embedding": None if vector is None else vector.reshape(-1),
        "source_hash": source_hash(content),
    }


def remember_node(raw: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """Insert one node (and its vector), or find the identical one already stored.

    Runs ``remember_node`` on the psycopg connection ``raw``; the row holds
    the node's columns, its status and ``created``. One statement, unless a
    concurrent writer stored the same key after its snapshot was taken: then
    ON CONFLICT waited for that writer to commit and the statement found
    nothing, and running it again (a fresh snapshot) returns that node.
    """
    with raw.cursor(row_factory=dict_row) as cursor:
        while True:
            row: dict[str, Any] | None = cursor.execute(QUERIES["remember_node"], params).fetchone()
            if row is not None:
                return row


def copy_nodes(
    conn: Connection,
    namespace_id: int,
    items: Sequence[MemoryInput],
    contents: Sequence[str],
    model: str | None,
    vectors: Vectors | None,
) -> list[int]:
    """Bulk insert: binary COPY into a staging table, then one INSERT … ON CONFLICT.

    Returns the node id of every item, in order; items identical to stored
    nodes (or to each other) get the existing id. Vectors, when given, are
    written for the nodes this call created (the first item of each) and for
    stored nodes that have none for ``model`` yet and whose text is exactly
    the item's. The statements are in ``ingest.sql``.
    """
    raw = conn.connection.driver_connection
    assert raw is not None
    keys: list[tuple[str, str, bytes]] = [
        (item.kind, item.node_type, content_hash(content, item.dedupe_key))
        for item, content in zip(items, contents, strict=True)
    ]
    # Duplicates are folded here, so each key is staged (and inserted) once,
    # by its first item; the database only has to settle conflicts with
    # nodes stored before (or by concurrent writers).
    first: dict[tuple[str, str, bytes], int] = {}
    for ordinal, key in enumerate(keys):
        first.setdefault(key, ordinal)
    raw.execute(QUERIES["create_staging"])
    raw.execute(QUERIES["clear_staging"])
    with raw.cursor().copy(QUERIES["copy_staging"]) as copy:
        copy.set_types(STAGING_TYPES)
        for key, ordinal in first.items():
            item = items[ordinal]
            row: list[Any] = [key[2], *[getattr(item, name) for name in INPUT_COLUMNS]]
            row[CONTENT_AT] = contents[ordinal]
            if row[DATA_AT] is None:
                row[DATA_AT] = {}
            copy.write_row(row)
    ns = {"ns": namespace_id}
    found = {
        (kind, node_type, bytes(digest)): int(node_id)
        for kind, node_type, digest, node_id in raw.execute(QUERIES["insert_nodes"], ns)
    }
    created = set(found)
    stored_before = [key for key in first if key not in created]
    if stored_before:
        rows = raw.execute(
            QUERIES["find_nodes"],
            {
                **ns,
                "kinds": [k[0] for k in stored_before],
                "node_types": [k[1] for k in stored_before],
                "hashes": [k[2] for k in stored_before],
            },
        )
        found.update(
            ((kind, node_type, bytes(digest)), int(node_id))
            for kind, node_type, digest, node_id in rows
        )
    ids = [found[key] for key in keys]
    if vectors is not None:
        _write_vectors(raw, namespace_id, model, vectors, contents, ids, keys, first, created)
    return ids


def _write_vectors(
    raw: Any,
    namespace_id: int,
    model: str | None,
    vectors: Vectors,
    contents: Sequence[str],
    ids: Sequence[int],
    keys: Sequence[tuple[str, str, bytes]],
    first: Mapping[tuple[str, str, bytes], int],
    created: set[tuple[str, str, bytes]],
) -> None:
    """The vectors of created nodes (their first item's), then those of stored nodes."""
    params = {"ns": namespace_id, "model": model, "dims": int(vectors.shape[1])}
    # In node id order, as the vectors of earlier releases were written.
    new = sorted((ordinal for key, ordinal in first.items() if key in created), key=ids.__getitem__)
    if new:
        raw.execute(
            QUERIES["insert_new_vectors"],
            {
                **params,
                "node_ids": [ids[i] for i in new],
                "embeddings": list(vectors[new]),
                "source_hashes": [source_hash(contents[i]) for i in new],
            },
        )
    old = [i for i, key in enumerate(keys) if key not in created]
    if old:
        raw.execute(
            QUERIES["insert_found_vectors"],
            {
                **params,
                "node_ids": [ids[i] for i in old],
                "contents": [contents[i] for i in old],
                "embeddings": list(vectors[old]),
                "source_hashes": [source_hash(contents[i]) for i in old],
            },
        )
