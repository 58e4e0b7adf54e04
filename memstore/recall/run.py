"""Running recall: a planned statement sent in one pipeline, the rows back, and the
namespace's term counts sampled and kept (memstore/recall/terms.py)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import psycopg
from sqlalchemy.engine import Connection

from memstore.db.compiled import binary_rows, bound, cursor_for
from memstore.db.transaction import confined, set_local
from memstore.embedding.base import Embedder
from memstore.models import Hit
from memstore.recall.query import RecallQuery
from memstore.recall.ranking import hits
from memstore.recall.statement import QUERIES, RecallPlan, plan
from memstore.recall.terms import TermCounts, estimated, sample_params


def recall(
    conn: Connection,
    namespace_id: int,
    namespace: str,
    q: RecallQuery,
    vector: np.ndarray[Any, Any] | None,
    embedder: Embedder,
    *,
    exact: bool = False,
    text_stats: tuple[int, float] = (1, 1.0),
    terms: TermCounts | None = None,
    prepare: bool = False,
) -> list[Hit]:
    """Run ``q`` in one namespace on an open transaction; ``vector`` is the query's embedding.

    ``vector`` None means lexical only; ``exact`` searches vectors without the
    HNSW index (for small namespaces); ``text_stats`` is the namespace's
    (document count, average lexemes per document) for BM25; ``terms`` the
    namespace's cached counts of common terms, offered and then updated;
    ``prepare`` keeps the statement prepared on the connection. The settings
    and the statement travel together (psycopg's pipeline mode).
    """
    run = plan(
        namespace_id,
        q,
        vector,
        embedder,
        exact=exact,
        confined=confined(conn),
        text_stats=text_stats,
        terms=terms,
    )
    rows = run_in(conn, run, prepare=prepare)
    if terms is not None:
        learn_term_counts(terms, rows)
    return hits(rows, q, embedder, namespace)


def send(
    raw: psycopg.Connection[Any], cursor: psycopg.Cursor[Any], run: RecallPlan, *, prepare: bool
) -> None:
    """Queue a planned recall in ``raw``'s pipeline: its settings, then its statement on
    ``cursor`` (whose rows the caller fetches once the pipeline has synced; a
    :func:`memstore.db.compiled.cursor_for` the statement, or any dict-row cursor)."""
    for statement in set_local(run.settings):
        raw.execute(statement)
    if isinstance(cursor, psycopg.RawCursor):
        binary = binary_rows(run.statement)
        cursor.execute(*bound(run.statement, run.params), prepare=prepare, binary=binary)
    else:
        cursor.execute(run.statement, run.params, prepare=prepare)


def run_in(conn: Connection, run: RecallPlan, *, prepare: bool = False) -> list[dict[str, Any]]:
    """The rows of a planned recall on an open transaction: settings and statement in one
    pipeline (one wait for the server); ``prepare`` keeps the statement prepared."""
    raw = conn.connection.driver_connection
    assert raw is not None
    with cursor_for(raw, run.statement) as cursor:
        with raw.pipeline():
            send(raw, cursor, run, prepare=prepare)
        rows: list[dict[str, Any]] = cursor.fetchall()
    return rows


def sample_term_counts(conn: Connection, namespace_id: int, documents: int) -> TermCounts:
    """The namespace's common terms, counted in a sample of its ``documents`` documents
    (memstore/recall/terms.py; exact for a namespace no bigger than the sample)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    params = {"ns": namespace_id, **sample_params(documents)}
    with raw.cursor() as cursor:
        rows = cursor.execute(QUERIES["term_sample"], params).fetchall()
    return estimated(documents, rows)


def learn_term_counts(terms: TermCounts, rows: list[dict[str, Any]]) -> None:
    """Keep the common terms' counts the statement reported (every row carries them;
    a confined role's statement reports none: its counts depend on its privacy ceiling)."""
    if rows and rows[0]["term_counts"] is not None:
        terms.learn(json.loads(rows[0]["term_counts"]))
