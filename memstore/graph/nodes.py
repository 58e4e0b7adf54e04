"""Writing nodes: one at a time (one idempotent statement) or in bulk (binary COPY)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from importlib.resources import files
from operator import attrgetter
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from sqlalchemy.engine import Connection

from memstore.db.queries import named_queries
from memstore.embedding.base import Vectors
from memstore.errors import DatabaseError
from memstore.graph.content import content_hash, source_hash
from memstore.models import MemoryInput

# Columns a MemoryInput fills, in COPY order.
INPUT_COLUMNS = (
    "kind", "node_type", "tier", "layer", "label", "content", "data", "importance",
    "confidence", "decay_rate", "privacy", "protected", "subject", "scope", "source",
    "actor", "run_id", "observed_at", "valid_from", "valid_to", "tags",
)  # fmt: skip
COPY_TYPES = (
    "text", "text", "text", "int2", "text", "text", "jsonb", "float4", "float4", "float4",
    "int2", "bool", "text", "text", "text", "text", "text", "timestamptz", "timestamptz",
    "timestamptz", "text[]",
)  # fmt: skip
# The staging row of copy_nodes: content_hash, then the input columns.
STAGING_TYPES = ["bytea", *COPY_TYPES]
# The owner's direct row: id and namespace first.
DIRECT_TYPES = ["int8", "int8", *STAGING_TYPES]
# The input columns of a MemoryInput as a tuple, read in C: a bulk load reads
# twenty attributes of every item.
input_values = attrgetter(*INPUT_COLUMNS)
CONTENT_AT = INPUT_COLUMNS.index("content")
DATA_AT = INPUT_COLUMNS.index("data")
TAGS_AT = INPUT_COLUMNS.index("tags")
# remember_node runs again when a concurrent writer took its key; more
# attempts than that mean the stored node is invisible to this transaction.
REMEMBER_ATTEMPTS = 3
QUERIES = {
    **named_queries(files("memstore.graph").joinpath("ingest.sql").read_text()),
    **named_queries(files("memstore.graph").joinpath("remember.sql").read_text()),
}


def row_values(item: MemoryInput, content: str) -> dict[str, Any]:
    """The node columns of ``item``, with its checked content and data defaulted to {}."""
    values = item.model_dump(include=set(INPUT_COLUMNS))
    values["content"] = content
    values["data"] = item.data or {}
    values["tags"] = item.tags or []
    return values


def copy_values(item: MemoryInput, content: str) -> list[Any]:
    """The input columns of ``item`` as a COPY row writes them: the checked
    ``content``, ``{}`` for no data and ``[]`` for no tags."""
    values: list[Any] = list(input_values(item))
    values[CONTENT_AT] = content
    if values[DATA_AT] is None:
        values[DATA_AT] = {}
    if values[TAGS_AT] is None:
        values[TAGS_AT] = []
    return values


def remember_params(
    namespace_id: int,
    item: MemoryInput,
    content: str,
    model: str,
    vector: Vectors | None,
    *,
    namespace_name: str | None = None,
) -> dict[str, Any]:
    """The parameters of ``remember_node`` (``remember.sql``) for ``item``.

    ``vector`` (a float32 row, sent in binary) is written with the node when
    the statement creates it; None writes the node alone. ``namespace_name``
    (given where the transaction did not check the kept id's name): the
    statement writes and returns nothing unless the namespace still has it.
    """
    values = row_values(item, content)
    values["data"] = Jsonb(values["data"])
    return {
        **values,
        "ns": namespace_id,
        "ns_name": namespace_name,
        "content_hash": content_hash(content, item.dedupe_key),
        "model": model,
        "dims": None if vector is None else int(vector.shape[-1]),
        "embedding": None if vector is None else vector.reshape(-1),
        "source_hash": source_hash(content),
    }


def below_ceiling_key(digest: bytes, ceiling: object) -> bytes:
    """The idempotency key of a memory whose own key is taken by a node above the
    transaction's privacy ceiling ``ceiling`` (see :func:`remember_node`)."""
    return hashlib.sha256(digest + b"\x1fbelow-ceiling:" + str(ceiling).encode()).digest()


def remember_node(conn: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """Insert one node (and its vector), or find the identical one already stored.

    Runs ``remember_node`` on ``conn``'s psycopg connection; the row holds
    the node's columns, its status and ``created``. One statement, unless a
    concurrent writer stored the same key after its snapshot was taken: then
    ON CONFLICT waited for that writer to commit and the statement found
    nothing, and running it again (a fresh snapshot) returns that node.
    """
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor(row_factory=dict_row) as cursor:
        for _ in range(REMEMBER_ATTEMPTS):
            row: dict[str, Any] | None = cursor.execute(QUERIES["remember_node"], params).fetchone()
            if row is not None:
                return row
        # The key is taken by a node above this transaction's privacy ceiling.
        # The caller must not get it, nor learn that it exists (an error would
        # confirm a guess of its content): the memory becomes a node of its own,
        # under a key that names the ceiling — deterministic, so remembering it
        # again under the same ceiling finds this node.
        ceiling = cursor.execute(
            "SELECT current_setting('memstore.privacy_ceiling', true) AS ceiling"
        ).fetchone()
        assert ceiling is not None
        own = {
            **params,
            "content_hash": below_ceiling_key(params["content_hash"], ceiling["ceiling"]),
        }
        for _ in range(REMEMBER_ATTEMPTS):
            row = cursor.execute(QUERIES["remember_node"], own).fetchone()
            if row is not None:
                return row
    # Still nothing: not a race that another attempt settles.
    raise DatabaseError(
        "the same memory is stored, but this transaction cannot read it"
        " (is its privacy above the transaction's ceiling?)"
    )


def copy_nodes(
    conn: Connection,
    namespace_id: int,
    items: Sequence[MemoryInput],
    contents: Sequence[str],
    model: str | None,
    vectors: Vectors | None,
    *,
    direct: bool = False,
) -> list[int]:
    """Bulk insert: binary COPY into a staging table, then one INSERT … ON CONFLICT.

    Returns the node id of every item, in order (see :func:`copy_new_nodes`).
    """
    return copy_new_nodes(conn, namespace_id, items, contents, model, vectors, direct=direct)[0]


def copy_new_nodes(
    conn: Connection,
    namespace_id: int,
    items: Sequence[MemoryInput],
    contents: Sequence[str],
    model: str | None,
    vectors: Vectors | None,
    *,
    direct: bool = False,
) -> tuple[list[int], set[int]]:
    """Bulk insert: binary COPY into a staging table, then one INSERT … ON CONFLICT.

    Returns the node id of every item, in order, and the ids of the nodes this
    call created; items identical to stored nodes (or to each other) get the
    existing id. Vectors, when given, are written for the nodes this call
    created (the first item of each) and for stored nodes that have none for
    ``model`` yet and whose text is exactly the item's. The statements are in ``ingest.sql``.

    ``direct`` (for a role :func:`may_copy_directly` allows): first try to
    COPY the batch straight into the tables; a batch holding a key that is
    already stored takes the staging path instead. Both write the same rows.
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
    if direct:
        ids = _copy_directly(raw, namespace_id, items, contents, model, vectors, keys, first)
        if ids is not None:
            return ids, set(ids)
    raw.execute(QUERIES["create_staging"])
    found, created = _stage_and_insert(raw, namespace_id, items, contents, first)
    hidden = [key for key in first if key not in found]
    if hidden:
        # Keys taken by nodes above the transaction's privacy ceiling (find_nodes
        # does not return them): as in remember_node, each such memory becomes a
        # node of its own under a key that names the ceiling, and the caller
        # never learns of the other.
        row = raw.execute("SELECT current_setting('memstore.privacy_ceiling', true)").fetchone()
        level = row[0] if row is not None else None
        own = {key: (key[0], key[1], below_ceiling_key(key[2], level)) for key in hidden}
        more, more_created = _stage_and_insert(
            raw, namespace_id, items, contents, {own[key]: first[key] for key in hidden}
        )
        found |= more
        created |= more_created
        keys = [own.get(key, key) for key in keys]
        first = {own.get(key, key): ordinal for key, ordinal in first.items()}
    ids = [found[key] for key in keys]
    if vectors is not None:
        _write_vectors(raw, namespace_id, model, vectors, contents, ids, keys, first, created)
    return ids, {found[key] for key in created}


def _stage_and_insert(
    raw: Any,
    namespace_id: int,
    items: Sequence[MemoryInput],
    contents: Sequence[str],
    first: Mapping[tuple[str, str, bytes], int],
) -> tuple[dict[tuple[str, str, bytes], int], set[tuple[str, str, bytes]]]:
    """Stage the first item of each key, insert the new ones, find the stored ones.

    Returns the id of every key the transaction can see, and the keys this
    call created. A key missing from both is taken by a node above the
    transaction's privacy ceiling.
    """
    raw.execute(QUERIES["clear_staging"])
    with raw.cursor().copy(QUERIES["copy_staging"]) as copy:
        copy.set_types(STAGING_TYPES)
        for key, ordinal in first.items():
            copy.write_row([key[2], *copy_values(items[ordinal], contents[ordinal])])
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
    return found, created


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


def analyze_nodes(conn: Connection) -> None:
    """Fresh planner statistics for the node and vector tables now, not when autovacuum
    gets round to it: recall plans over unanalysed tables can be quadratic."""
    conn.exec_driver_sql("ANALYZE memstore.nodes, memstore.embeddings")


def may_copy_directly(conn: Connection) -> bool:
    """Whether the connected role may COPY straight into nodes and embeddings.

    The owner (and superusers) may; a role confined by row-level security
    may not (COPY FROM refuses a table with a policy), nor one that may not
    draw ids from the node id sequence.
    """
    raw = conn.connection.driver_connection
    assert raw is not None
    row = raw.execute(QUERIES["may_copy"]).fetchone()
    return bool(row and row[0])


def _copy_directly(
    raw: Any,
    namespace_id: int,
    items: Sequence[MemoryInput],
    contents: Sequence[str],
    model: str | None,
    vectors: Vectors | None,
    keys: Sequence[tuple[str, str, bytes]],
    first: Mapping[tuple[str, str, bytes], int],
) -> list[int] | None:
    """The owner's path of :func:`copy_nodes`: ids, or None if a key was already stored.

    Nodes get ids in key order, as the staging path's INSERT gives them, and
    vectors go in id order: the rows (and so a later HNSW build) are the same.
    """
    ordered = sorted(first)
    drawn = raw.execute(QUERIES["next_node_ids"], {"n": len(ordered)})
    ids_by_key = {key: int(node_id) for key, (node_id,) in zip(ordered, drawn, strict=True)}
    raw.execute("SAVEPOINT memstore_copy")
    try:
        with raw.cursor().copy(QUERIES["copy_nodes"]) as copy:
            copy.set_types(DIRECT_TYPES)
            for key in ordered:
                ordinal = first[key]
                values = copy_values(items[ordinal], contents[ordinal])
                copy.write_row([ids_by_key[key], namespace_id, key[2], *values])
    except psycopg.errors.UniqueViolation:
        # Stored before, or by a concurrent writer that has now committed.
        raw.execute("ROLLBACK TO SAVEPOINT memstore_copy")
        raw.execute("RELEASE SAVEPOINT memstore_copy")
        return None
    raw.execute("RELEASE SAVEPOINT memstore_copy")
    if vectors is not None and ordered:
        ordinals = [first[key] for key in ordered]
        with raw.cursor().copy(QUERIES["copy_vectors"]) as copy:
            copy.write(
                vector_copy_data(
                    namespace_id,
                    [ids_by_key[key] for key in ordered],
                    model or "",
                    vectors[ordinals],
                    [source_hash(contents[i]) for i in ordinals],
                )
            )
    return [ids_by_key[key] for key in keys]


COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8
COPY_TRAILER = b"\xff\xff"


def vector_copy_data(
    namespace_id: int,
    node_ids: Sequence[int],
    model: str,
    vectors: Vectors,
    source_hashes: Sequence[bytes],
) -> bytes:
    """A whole binary COPY stream of ``copy_vectors`` rows, encoded by numpy at once.

    Every row has the same layout (one model, one dimension, 32-byte hashes),
    so the rows are one structured array: no per-row Python, and the vectors
    go as their float32 bytes (big-endian), never as Python floats.
    """
    name = model.encode()
    dims = int(vectors.shape[1])
    layout = np.dtype(
        [
            ("fields", ">i2"),
            ("ns_len", ">i4"), ("ns", ">i8"),
            ("id_len", ">i4"), ("id", ">i8"),
            ("model_len", ">i4"), ("model", f"S{len(name)}"),
            ("dims_len", ">i4"), ("dims", ">i2"),
            ("vec_len", ">i4"), ("vec_dims", ">u2"), ("vec_unused", ">u2"), ("vec", ">f4", (dims,)),
            ("hash_len", ">i4"), ("hash", "S32"),
        ]
    )  # fmt: skip
    rows = np.zeros(len(node_ids), dtype=layout)
    rows["fields"] = 6
    rows["ns_len"], rows["ns"] = 8, namespace_id
    rows["id_len"], rows["id"] = 8, node_ids
    rows["model_len"], rows["model"] = len(name), name
    rows["dims_len"], rows["dims"] = 2, dims
    rows["vec_len"], rows["vec_dims"] = 4 + 4 * dims, dims
    rows["vec"] = vectors
    rows["hash_len"] = 32
    rows["hash"] = source_hashes
    return COPY_HEADER + rows.tobytes() + COPY_TRAILER
