"""The two signals: semantic (pgvector HNSW cosine) and lexical (PostgreSQL full text)."""

from __future__ import annotations

from typing import Any

import numpy as np
import sqlalchemy as sa
from psycopg import sql
from sqlalchemy.dialects.postgresql import TSQUERY
from sqlalchemy.engine import Connection

from memstore.db.schema import FTS_CONFIG, embeddings, nodes
from memstore.embedding.cache import model_literal, typed_vector
from memstore.recall.filters import node_filters
from memstore.recall.query import RecallQuery

# ef_search bounds the candidates the HNSW scan keeps; iterative scans keep
# scanning until enough rows pass the filters (pgvector >= 0.8).
MIN_EF_SEARCH = 40
# Below this many vectors a namespace is searched exactly: one model's HNSW
# index spans every namespace, and walking it for a small namespace's rows
# costs more than comparing them all (600 vectors: ~1 ms exact vs ~12 ms).
EXACT_SEARCH_MAX = 10_000


def any_word(text: str) -> sa.ColumnElement[Any]:
    """A tsquery matching documents with *any* of the query's words.

    ``plainto_tsquery`` ANDs the words, which for a natural-language question
    finds almost nothing; OR-ing them lets the rank decide.
    """
    plain = sa.cast(sa.func.plainto_tsquery(FTS_CONFIG, text), sa.Text)
    return sa.cast(sa.func.replace(plain, "&", "|"), TSQUERY)


def lexical_rank(text: str) -> sa.ColumnElement[float]:
    return sa.func.ts_rank_cd(nodes.c.search, any_word(text))


def cosine_distance(vector: np.ndarray[Any, Any], dims: int) -> sa.ColumnElement[float]:
    distance: sa.ColumnElement[float] = typed_vector(dims).cosine_distance(vector)
    return distance


def tune_semantic(conn: Connection, pool: int) -> None:
    """Per-transaction HNSW settings (SET LOCAL: safe behind pgbouncer, reaches Citus shards)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    raw.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    raw.execute(
        sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(MIN_EF_SEARCH, pool)))
    )


def semantic_query(
    namespace_id: int,
    q: RecallQuery,
    vector: np.ndarray[Any, Any],
    model: str,
    dims: int,
    *,
    exact: bool = False,
) -> sa.Select[Any]:
    """The ``q.pool`` nearest nodes that pass the filters, nearest first.

    ``exact`` compares every vector of the namespace (the uncast column does
    not match the HNSW index expression, so the planner cannot use it).
    """
    distance = (
        embeddings.c.embedding.cosine_distance(vector) if exact else cosine_distance(vector, dims)
    )
    joined = embeddings.join(
        nodes,
        sa.and_(
            nodes.c.namespace_id == embeddings.c.namespace_id,
            nodes.c.id == embeddings.c.node_id,
        ),
    )
    # relaxed_order may return rows slightly out of order: re-sort the
    # materialised candidates (the pattern pgvector documents).
    nearest = (
        sa.select(embeddings.c.node_id, distance.label("distance"))
        .select_from(joined)
        .where(embeddings.c.namespace_id == namespace_id)
        .where(embeddings.c.model == model_literal(model))
        .where(*node_filters(nodes, namespace_id, q))
        .order_by(distance)
        .limit(q.pool)
        .cte("nearest")
        .prefix_with("MATERIALIZED")
    )
    return sa.select(nearest.c.node_id).order_by(nearest.c.distance)


def semantic_candidates(
    conn: Connection,
    namespace_id: int,
    q: RecallQuery,
    vector: np.ndarray[Any, Any],
    model: str,
    dims: int,
    *,
    exact: bool = False,
) -> list[int]:
    """Run :func:`semantic_query` with the HNSW settings it needs."""
    if not exact:
        tune_semantic(conn, q.pool)
    rows = conn.execute(semantic_query(namespace_id, q, vector, model, dims, exact=exact)).all()
    return [int(row[0]) for row in rows]


def vector_count(conn: Connection, namespace_id: int, model: str) -> int:
    """How many vectors of ``model`` the namespace has (an index-only count)."""
    return int(
        conn.execute(
            sa.select(sa.func.count())
            .select_from(embeddings)
            .where(embeddings.c.namespace_id == namespace_id)
            .where(embeddings.c.model == model_literal(model))
        ).scalar_one()
    )


def lexical_candidates(conn: Connection, namespace_id: int, q: RecallQuery) -> list[int]:
    """Ids of the ``q.pool`` best full-text matches that pass the filters, best first."""
    rank = lexical_rank(q.text)
    rows = conn.execute(
        sa.select(nodes.c.id)
        .where(nodes.c.search.op("@@")(any_word(q.text)))
        .where(*node_filters(nodes, namespace_id, q))
        .order_by(rank.desc(), nodes.c.id)
        .limit(q.pool)
    ).all()
    return [int(row[0]) for row in rows]


def score_candidates(
    conn: Connection,
    namespace_id: int,
    ids: list[int],
    text: str,
    vector: np.ndarray[Any, Any] | None,
    model: str,
    dims: int,
) -> dict[int, tuple[float | None, float]]:
    """Both signals for every candidate: (cosine similarity or None, full-text rank)."""
    if not ids:
        return {}
    similarity: sa.ColumnElement[Any]
    if vector is None:
        similarity = sa.null()
        source: sa.FromClause = nodes
    else:
        similarity = 1 - cosine_distance(vector, dims)
        source = nodes.outerjoin(
            embeddings,
            sa.and_(
                embeddings.c.namespace_id == nodes.c.namespace_id,
                embeddings.c.node_id == nodes.c.id,
                embeddings.c.model == model_literal(model),
            ),
        )
    rows = conn.execute(
        sa.select(nodes.c.id, similarity, lexical_rank(text))
        .select_from(source)
        .where(nodes.c.namespace_id == namespace_id)
        .where(nodes.c.id.in_(ids))
    ).all()
    return {int(row[0]): (None if row[1] is None else float(row[1]), float(row[2])) for row in rows}
