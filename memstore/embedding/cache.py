"""The embeddings table: a rebuildable cache of vectors, one HNSW index per model.

Vectors are keyed by (namespace, node, model) and carry the sha256 of the text
they were computed from, so a vector whose node text changed is *stale* and a
node without one is *missing*; :func:`rebuild` fixes both. Deleting every row
loses no memory: recall falls back to full text until a rebuild.

Each model gets its own HNSW index, an expression index over
``embedding::vector(dims)`` that is partial on ``model = '<name>'``: one table
serves every model and dimension. The model name is rendered into the index
predicate and into queries as a SQL literal (psycopg/SQLAlchemy quoting, never
string formatting) because the planner can only use a partial index when it
can see the predicate's value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from importlib.resources import files
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from psycopg import sql
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection, Engine

from memstore.db.queries import named_queries
from memstore.db.schema import embeddings, nodes, redactions
from memstore.db.transaction import namespace_transaction, transaction
from memstore.embedding.base import Embedder, Vectors
from memstore.errors import DimensionMismatchError, InvalidInputError
from memstore.graph.content import source_hash
from memstore.graph.rows import is_redacted, is_superseded, is_tombstoned, within_ceiling
from memstore.models import EmbeddingStatus

if TYPE_CHECKING:
    import psycopg

QUERIES = named_queries(files("memstore.embedding").joinpath("cache.sql").read_text())

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
INDEX_PREFIX = "ix_embeddings_hnsw_"


def index_name(model: str, dims: int) -> str:
    """A stable, valid identifier for the model's index (names can be any text)."""
    return INDEX_PREFIX + hashlib.sha1(f"{model}\x00{dims}".encode()).hexdigest()[:16]


def model_literal(model: str) -> sa.BindParameter[str]:
    """The model name rendered inline as a quoted literal, so partial indexes match."""
    return sa.literal(model, sa.Text, literal_execute=True)


def typed_vector(dims: int) -> sa.Cast[Any]:
    """``embedding::vector(dims)``: the expression every model's index is built on."""
    return sa.cast(embeddings.c.embedding, Vector(dims))


def check_vector(vector: object, dims: int, *, field: str = "embedding") -> Vectors:
    """``vector`` as a float32 row of length ``dims``, finite and not all zero."""
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{field} is not a vector of numbers", field=field) from exc
    if array.ndim != 1 or array.shape[0] != dims:
        got = int(array.shape[-1]) if array.ndim else 0
        raise DimensionMismatchError(
            f"{field} has {got} dimensions; this namespace's embedder has {dims}",
            expected=dims,
            got=got,
        )
    if not np.isfinite(array).all():
        raise InvalidInputError(f"{field} contains NaN or infinity", field=field)
    if not array.any():
        raise InvalidInputError(f"{field} is all zeros; cosine needs a direction", field=field)
    return array


def index_exists(conn: Connection, model: str, dims: int) -> bool:
    """Whether the HNSW index of ``model`` at ``dims`` exists."""
    found = conn.execute(
        sa.text("SELECT to_regclass(:name) IS NOT NULL"),
        {"name": f"memstore.{index_name(model, dims)}"},
    ).scalar_one()
    return bool(found)


def indexed_vectors(conn: Connection, model: str, dims: int) -> int | None:
    """The planner's estimate of the vectors in the model's HNSW index (None: no index).

    Read from pg_class (any role may): the count at the index's build, kept
    current by (auto)vacuum and ANALYZE. -1 there means never counted, so 0.
    """
    found = conn.execute(
        sa.text("SELECT c.reltuples FROM pg_catalog.pg_class c WHERE c.oid = to_regclass(:name)"),
        {"name": f"memstore.{index_name(model, dims)}"},
    ).scalar_one_or_none()
    return None if found is None else max(int(found), 0)


def ensure_index(engine: Engine, model: str, dims: int) -> bool:
    """Create the model's HNSW index if missing; True if this call built it.

    Building after a bulk load is far cheaper than inserting into a live
    index, which is why bulk imports call this at the end. A role that may not
    create indexes on the table (``memstore_app`` has no DDL) builds nothing:
    recall then scans exactly until the owner runs ``memstore embed rebuild``
    (docs/security.md).
    """
    name = index_name(model, dims)
    with transaction(engine) as conn:
        # Concurrent first loads would race: CREATE INDEX IF NOT EXISTS is not
        # safe against a builder that has not committed yet (a unique violation
        # on pg_class). The lock makes the others wait, then see the index.
        conn.execute(
            sa.text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": f"memstore.index\x1f{name}"},
        )
        if index_exists(conn, model, dims) or not _may_create_index(conn):
            return False
        ddl = sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON memstore.embeddings"
            " USING hnsw ((embedding::vector({dims})) vector_cosine_ops)"
            " WITH (m = {m}, ef_construction = {ef}) WHERE model = {model}"
        ).format(
            name=sql.Identifier(name),
            dims=sql.Literal(dims),
            m=sql.Literal(HNSW_M),
            ef=sql.Literal(HNSW_EF_CONSTRUCTION),
            model=sql.Literal(model),
        )
        raw = conn.connection.driver_connection
        assert raw is not None
        raise_build_memory(raw)
        raw.execute(ddl)
    return True


BUILD_MEMORY_KB = 512 * 1024  # the SET LOCAL below, in kB as pg_settings counts


def raise_build_memory(raw: psycopg.Connection[Any]) -> None:
    """At least 512 MB of ``maintenance_work_mem`` for this transaction's index build,
    but never less than the operator gave the server: an HNSW graph that outgrows it is
    built on disk, many times slower (a million 384-d vectors need about 2 GB)."""
    row = raw.execute(
        "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
    ).fetchone()
    if row is not None and row[0] < BUILD_MEMORY_KB:
        # A literal SET LOCAL, as every setting the package makes (Citus forwards it).
        raw.execute("SET LOCAL maintenance_work_mem = '512MB'")


def _may_create_index(conn: Connection) -> bool:
    """Whether the current role owns memstore.embeddings (or is a superuser)."""
    return bool(
        conn.execute(
            sa.text(
                "SELECT pg_has_role(c.relowner, 'USAGE') FROM pg_class c"
                " WHERE c.oid = 'memstore.embeddings'::regclass"
            )
        ).scalar_one()
    )


def stored_vectors(
    conn: Connection, namespace_id: int, model: str, ids: Sequence[int]
) -> dict[int, np.ndarray[Any, Any]]:
    """The ``model`` vectors the nodes ``ids`` have, by node id (a node without one is left
    out)."""
    if not ids:
        return {}
    rows = conn.execute(
        sa.select(embeddings.c.node_id, embeddings.c.embedding).where(
            embeddings.c.namespace_id == namespace_id,
            embeddings.c.model == model,
            embeddings.c.node_id.in_(list(ids)),
        )
    )
    return {int(node_id): np.asarray(vector, dtype=np.float32) for node_id, vector in rows}


def upsert_vectors(
    conn: Connection,
    namespace_id: int,
    model: str,
    node_ids: Sequence[int],
    texts: Sequence[str],
    vectors: Vectors,
) -> None:
    """Write (or refresh) the vectors of ``node_ids`` for ``model``."""
    if not node_ids:
        return
    dims = int(vectors.shape[1])
    rows = [
        {
            "namespace_id": namespace_id,
            "node_id": node_id,
            "model": model,
            "dims": dims,
            "embedding": vector,
            "source_hash": source_hash(text),
        }
        for node_id, text, vector in zip(node_ids, texts, vectors, strict=True)
    ]
    statement = pg_insert(embeddings)
    statement = statement.on_conflict_do_update(
        index_elements=["namespace_id", "node_id", "model"],
        set_={
            "dims": statement.excluded.dims,
            "embedding": statement.excluded.embedding,
            "source_hash": statement.excluded.source_hash,
            "created_at": sa.func.now(),
        },
    )
    conn.execute(statement, rows)


def _nodes_with_vectors(model: str) -> tuple[sa.Join, sa.ColumnElement[bool]]:
    """Nodes left-joined to their ``model`` vector, and whether that vector is fresh."""
    e = embeddings
    joined = nodes.outerjoin(
        e,
        sa.and_(
            e.c.namespace_id == nodes.c.namespace_id,
            e.c.node_id == nodes.c.id,
            e.c.model == model_literal(model),
        ),
    )
    fresh = e.c.source_hash == sa.func.sha256(sa.func.convert_to(nodes.c.content, "UTF8"))
    return joined, fresh


def _needing_vectors(namespace_id: int, model: str) -> sa.Select[Any]:
    """Non-redacted nodes whose vector for ``model`` is missing or stale."""
    e = embeddings
    joined, fresh = _nodes_with_vectors(model)
    return (
        sa.select(nodes.c.id, nodes.c.content)
        .select_from(joined)
        .where(nodes.c.namespace_id == namespace_id)
        .where(~_redacted(namespace_id))
        .where(sa.or_(e.c.node_id.is_(None), ~fresh))
        .order_by(nodes.c.id)
    )


def _redacted(namespace_id: int) -> sa.Exists:
    return sa.exists().where(
        redactions.c.namespace_id == namespace_id, redactions.c.node_id == nodes.c.id
    )


def status(
    conn: Connection, namespace_id: int, namespace: str, model: str, dims: int
) -> EmbeddingStatus:
    """How many of the namespace's nodes (up to the transaction's privacy ceiling) have a
    fresh, missing or stale vector."""
    e = embeddings
    joined, fresh = _nodes_with_vectors(model)
    row = conn.execute(
        sa.select(
            sa.func.count(),
            sa.func.count().filter(e.c.node_id.is_(None)),
            sa.func.count().filter(sa.and_(e.c.node_id.is_not(None), ~fresh)),
        )
        .select_from(joined)
        .where(nodes.c.namespace_id == namespace_id)
        .where(~_redacted(namespace_id))
        .where(within_ceiling(nodes))
    ).one()
    total, missing, stale = (int(v) for v in row)
    return EmbeddingStatus(
        namespace=namespace,
        model=model,
        dims=dims,
        nodes=total,
        fresh=total - missing - stale,
        missing=missing,
        stale=stale,
        index=index_exists(conn, model, dims),
    )


def rebuild(
    engine: Engine,
    namespace_id: int,
    embedder: Embedder,
    *,
    batch_size: int = 256,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Compute every missing or stale vector; returns how many were written.

    Each batch commits on its own, so an interrupted rebuild keeps its work
    and a second run continues where it stopped.
    """
    written = 0
    done: set[int] = set()
    while True:
        with namespace_transaction(engine, namespace_id) as conn:
            batch = conn.execute(
                _needing_vectors(namespace_id, embedder.name).limit(batch_size)
            ).all()
            if not batch:
                break
            ids = [row[0] for row in batch]
            if done.issuperset(ids):  # written yet still not fresh: never loop forever
                raise RuntimeError(f"vectors for nodes {ids[:5]} do not stay fresh")
            done.update(ids)
            texts = [row[1] for row in batch]
            upsert_vectors(conn, namespace_id, embedder.name, ids, texts, embedder.embed(texts))
        written += len(batch)
        if progress is not None:
            progress(len(batch))
    ensure_index(engine, embedder.name, embedder.dims)
    return written


def unfresh(
    conn: Connection,
    namespace_id: int,
    model: str,
    node_ids: Sequence[int],
    *,
    prepare: bool = False,
) -> tuple[list[int], list[int]]:
    """Of ``node_ids``, those without a ``model`` vector and those whose vector is stale
    (``prepare``: keep the statement prepared on the connection)."""
    if not node_ids:
        return [], []
    raw = conn.connection.driver_connection
    assert raw is not None
    params = {"ns": namespace_id, "model": model, "ids": sorted(set(node_ids))}
    with raw.cursor() as cursor:
        rows = cursor.execute(QUERIES["unfresh"], params, prepare=prepare).fetchall()
    missing = [int(node_id) for node_id, absent, _ in rows if absent]
    stale = [int(node_id) for node_id, absent, fresh in rows if not absent and not fresh]
    return missing, stale


def missing_vectors(
    conn: Connection, namespace_id: int, model: str, *, shown: int
) -> tuple[int, list[int]]:
    """How many current memories (up to the transaction's privacy ceiling) have no
    ``model`` vector, and the first ``shown`` of their ids (what recall cannot find
    by meaning, docs/recall.md)."""
    e = embeddings
    joined, _ = _nodes_with_vectors(model)
    lacking = (
        sa.select(nodes.c.id)
        .select_from(joined)
        .where(nodes.c.namespace_id == namespace_id)
        .where(e.c.node_id.is_(None))
        .where(within_ceiling(nodes))
        .where(~is_superseded(nodes, namespace_id))
        .where(~is_tombstoned(nodes, namespace_id))
        .where(~is_redacted(nodes, namespace_id))
        .subquery()
    )
    count = conn.execute(sa.select(sa.func.count()).select_from(lacking)).scalar_one()
    if not count:
        return 0, []
    ids = conn.execute(sa.select(lacking.c.id).order_by(lacking.c.id).limit(shown)).scalars()
    return int(count), [int(i) for i in ids]
