"""Recall as a statement: the SQL of one recall (recall.sql's fragments, composed), its
parameters and the settings it runs under, for a validated query; nothing runs here.

:func:`plan` is the whole of it: :mod:`memstore.recall.run` sends what it returns.
"""

from __future__ import annotations

import math
from functools import cache
from importlib.resources import files
from typing import Any, NamedTuple

import numpy as np
from psycopg import sql

from memstore.db.compiled import Compiled
from memstore.db.queries import named_queries
from memstore.db.transaction import set_local
from memstore.embedding.base import Embedder
from memstore.models import RecallMode
from memstore.recall.query import RecallQuery
from memstore.recall.terms import CACHED_DF_MIN, TermCounts

# ef_search bounds the candidates an HNSW scan keeps; iterative scans keep
# scanning until enough rows pass the filters (pgvector >= 0.8).
MIN_EF_SEARCH = 40
MAX_EF_SEARCH = 1_000  # pgvector's limit
FILTERED_EF_FACTOR = 8
# A namespace of at most this many vectors is searched exactly: one model's
# HNSW index spans every namespace, and walking it for a small namespace's rows
# costs more than comparing them all (600 vectors: ~1 ms exact vs ~12 ms)...
EXACT_SEARCH_MAX = 10_000
# ...but only while it holds less than this share of the model's index: a
# namespace that is most of the index walks it as fast as a raw query, where
# an exact scan of 10,000 vectors costs 10-30 ms (docs/recall.md).
HNSW_MIN_SHARE = 0.2


# Lexical candidates come from the query terms in at most this share of the
# namespace's documents (and as many commoner ones as the limit needs): BM25 is
# computed for every candidate, and a common term adds little to it (recall.sql,
# match_terms). 1% against 5%: lexical recall k=60 on the 100k context
# namespace p50 25.0 -> 14.5 ms, LoCoMo lexical and hybrid recall unchanged
# (docs/benchmark-notes.md).
MATCH_SHARE = 0.01
# ...and only while the rarer terms' documents number fewer than this many
# times the limit (or the share above, if more): a query of several
# mid-frequency terms once made 5,000-20,000 candidates of a 100k namespace,
# at ~10 us of BM25 each. In hybrid recall the term that guarantees the limit
# is held to the same bound; lexical recall keeps it (docs/recall.md). At 8 the
# default hybrid recall on LoCoMo is what it was unbounded (MiniLM turn
# recall@10 0.659; at 4, 0.657); in a big namespace the share decides.
MATCH_BUDGET = 8

QUERIES = named_queries(files("memstore.recall").joinpath("recall.sql").read_text())


# Okapi BM25 of the nodes row ``n`` over the query_arrays CTE (the query's
# terms and their idf as two aligned arrays): term frequency from the
# tsvector's positions, length from its lexeme count, the namespace's average
# length as a parameter. The document's vector is first cut down to the query's
# lexemes (setweight marks them 'A' - nodes.search carries no weights - and
# ts_filter keeps the marked), so only those are unnested, and each one's idf
# is an array lookup rather than a join: 40% less time per candidate than
# unnesting the whole vector and joining it to the terms, same scores
# (docs/benchmark-notes.md). On LoCoMo BM25 beat ts_rank_cd as the lexical
# signal (turn recall@10 0.611 vs 0.572).
BM25_K1 = 1.2
BM25_B = 0.75
BM25 = sql.SQL(
    "(SELECT coalesce(sum(qa.idfs[array_position(qa.terms, u.lexeme)]"
    " * cardinality(u.positions) * {k1_plus_1}"
    " / (cardinality(u.positions) + {k1} * (1 - {b} + {b} * length(n.search)"
    " / %(avg_length)s))), 0)"
    " FROM query_arrays qa, unnest(ts_filter(setweight(n.search, 'A', qa.terms), '{{a}}')) AS u)"
).format(k1_plus_1=sql.Literal(BM25_K1 + 1), k1=sql.Literal(BM25_K1), b=sql.Literal(BM25_B))


# Graph evidence: the heaviest edges of each signal's top k candidates are
# followed, at most this many each way (a hub node must not make every
# neighbour a candidate).
NEIGHBOUR_FANOUT = 8


@cache
def recall_statement(
    model: str,
    dims: int,
    exact: bool,
    mode: RecallMode = "hybrid",
    confined: bool = False,
    graph: bool = False,
) -> sql.Composed:
    """The recall statement for one model and mode, composed from recall.sql's fragments.

    ``exact`` compares every vector of the namespace (the plain column does not
    match the HNSW index expression, so the planner cannot use the index).
    ``confined``: the connected role is confined by row-level security, so the
    full-text match goes through sql/08's functions to keep its GIN index.
    ``graph`` (hybrid only): the candidates' neighbours join them, and the rows
    carry the edges between them (the ``neighbours`` fragment) for ranking.py's
    graph evidence.
    """
    graph = graph and mode == "hybrid"
    variant = "confined" if confined else "direct"
    column = (
        sql.SQL("e.embedding")
        if exact
        else sql.SQL("(e.embedding::vector({}))").format(sql.Literal(dims))
    )
    values = {
        "distance": sql.SQL("{} <=> %(vector)s").format(column),
        "model": sql.Literal(model),
        "bm25": BM25,
        "document_count": sql.SQL(QUERIES[f"document_count_{variant}"].strip()),
        "matched_nodes": sql.SQL(QUERIES[f"matched_nodes_{variant}"].strip()),
    }
    ctes = [sql.SQL("filtered AS NOT MATERIALIZED (\n{}\n)").format(sql.SQL(QUERIES["filtered"]))]
    sources: list[sql.Composable] = []
    joins: list[sql.Composable] = []
    if mode != "lexical":
        search = QUERIES["semantic_exact" if exact else "semantic"]
        ctes.append(sql.SQL(search + ",\n" + QUERIES["semantic_ranked"]).format(**values))
        sources.append(sql.SQL("SELECT id FROM semantic_ranked"))
        joins.append(sql.SQL("LEFT JOIN semantic_ranked sr ON sr.id = n.id"))
    if mode != "semantic":
        ctes.append(sql.SQL(QUERIES["lexical"]).format(**values))
        sources.append(sql.SQL("SELECT id FROM lexical_ranked"))
        joins.append(sql.SQL("LEFT JOIN lexical_ranked l ON l.id = n.id"))
    if len(sources) == 1:
        # One signal needs no fusion: only its top k rows are read in full.
        sources = [sql.SQL("{} ORDER BY rank LIMIT %(k)s").format(sources[0])]
    if graph:
        ctes.append(sql.SQL(QUERIES["neighbours"]).format())
        sources = [sql.SQL("SELECT id FROM seeds UNION SELECT b FROM near")]
    none = sql.SQL("NULL")
    similarity_of = sql.SQL(QUERIES["similarity_of"].strip()).format(model=values["model"])
    similarity = {
        "semantic": sql.SQL("1 - sr.distance"),
        "hybrid": sql.SQL("coalesce(1 - sr.distance, {})").format(similarity_of),
        "lexical": similarity_of,
    }
    lexical = {
        "semantic": none,
        "hybrid": sql.SQL("coalesce(l.score, {})").format(BM25),
        "lexical": sql.SQL("l.score"),
    }
    select = sql.SQL(QUERIES["select"]).format(
        similarity=similarity[mode],
        lexical=lexical[mode],
        semantic_rank=sql.SQL("sr.rank") if mode != "lexical" else none,
        lexical_rank=sql.SQL("l.rank") if mode != "semantic" else none,
        # A confined role's counts depend on its privacy ceiling: not reported, never cached.
        term_counts=(
            sql.SQL(QUERIES["term_counts"].strip()) if mode != "semantic" and not confined else none
        ),
        neighbour_edges=sql.SQL(QUERIES["neighbour_edges"].strip()) if graph else none,
        candidates=sql.SQL(" UNION ").join(sources),
        rank_joins=sql.SQL("\n").join(joins),
    )
    return sql.SQL("WITH {}\n{}").format(sql.SQL(",\n").join(ctes), select)


@cache
def compiled_statement(
    model: str,
    dims: int,
    exact: bool,
    mode: RecallMode = "hybrid",
    confined: bool = False,
    graph: bool = False,
) -> Compiled:
    """:func:`recall_statement`, rendered and its placeholders numbered once
    (memstore/db/compiled.py): psycopg would redo both on every recall."""
    return Compiled(recall_statement(model, dims, exact, mode, confined, graph), binary=True)


def search_settings(pool: int, *, filtered: bool = False) -> dict[str, str]:
    """The transaction-local HNSW settings of a search that keeps ``pool`` candidates.

    A ``filtered`` search (kinds, node types, tiers, tags, privacy, as-of, valid-at)
    keeps a wider beam: the iterative scan returns enough rows either way, but
    with the plain beam the nearest rows that pass a 10% filter were found only
    90% of the time (recall_scale.py, 10k nodes).
    """
    factor = FILTERED_EF_FACTOR if filtered else 1
    ef_search = min(MAX_EF_SEARCH, factor * max(MIN_EF_SEARCH, pool))
    return {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": str(ef_search)}


def hnsw_settings(pool: int, *, filtered: bool = False) -> sql.Composed:
    """:func:`search_settings` as SET LOCAL (safe behind pgbouncer, reaches Citus shards)."""
    return sql.SQL("; ").join(set_local(search_settings(pool, filtered=filtered)))


# A namespace holding less than this share of its model's HNSW index filters the walk.
SOLE_INDEX_SHARE = 0.9


def shares_index(vectors: int, indexed: int | None) -> bool:
    """Whether other namespaces hold a good part of the model's HNSW index, so that a walk
    of it for this namespace is a filtered search.

    >>> shares_index(100_000, 100_000), shares_index(100_000, 1_000_000)
    (False, True)
    """
    return indexed is not None and vectors < SOLE_INDEX_SHARE * indexed


def searched_exactly(vectors: int, indexed: int | None) -> bool:
    """Whether a namespace of ``vectors`` vectors is compared exactly rather than through HNSW.

    ``indexed`` estimates the vectors in the model's HNSW index, every
    namespace's (None: no index). The index pays when the namespace is big or
    holds a good share of it; a small namespace among many is compared
    exactly, since walking the shared index for its few rows costs more.
    """
    if indexed is None:
        return True
    share = vectors / max(indexed, vectors, 1)
    return vectors <= EXACT_SEARCH_MAX and share < HNSW_MIN_SHARE


class RecallPlan(NamedTuple):
    """One recall as a statement, its parameters, and the settings it runs under."""

    statement: Compiled
    params: dict[str, Any]
    settings: dict[str, str]


def plan(
    namespace_id: int,
    q: RecallQuery,
    vector: np.ndarray[Any, Any] | None,
    embedder: Embedder,
    *,
    exact: bool,
    confined: bool,
    text_stats: tuple[int, float] = (1, 1.0),
    terms: TermCounts | None = None,
    shares_index: bool = False,
) -> RecallPlan:
    """The statement for ``q`` (see :func:`recall`); nothing runs yet.

    ``terms``: cached document counts of common terms to offer the statement
    (memstore/recall/terms.py); never for a ``confined`` role, whose counts
    depend on its privacy ceiling. ``shares_index``: the namespace is a part of
    the model's HNSW index (other namespaces hold the rest), so its own
    ``namespace_id`` filters the walk like any filter and the beam is widened.
    """
    known: tuple[list[str], list[int]] = ([], [])
    if terms is not None and not confined and q.mode != "semantic":
        known = terms.offered(q.text or "")
    params = recall_params(namespace_id, q, vector, text_stats, known)
    hnsw = params["semantic_limit"] and not exact
    return RecallPlan(
        compiled_statement(
            embedder.name, embedder.dims, exact, q.mode, confined, q.graph_evidence > 0
        ),
        params,
        search_settings(q.pool, filtered=q.filtered or shares_index) if hnsw else {},
    )


def recall_params(
    namespace_id: int,
    q: RecallQuery,
    vector: np.ndarray[Any, Any] | None,
    text_stats: tuple[int, float] = (1, 1.0),
    known: tuple[list[str], list[int]] = ([], []),
) -> dict[str, Any]:
    """The parameters of :func:`recall_statement` for query ``q``."""
    use_vector = q.mode != "lexical" and vector is not None
    lexical_limit = (q.k if q.mode == "lexical" else q.pool) if q.mode != "semantic" else 0
    match_budget = max(MATCH_SHARE * text_stats[0], MATCH_BUDGET * lexical_limit)
    match_share = MATCH_SHARE
    if q.tags:
        # The terms' document counts are the namespace's, not the tagged memories':
        # a term chosen to guarantee the limit may match no tagged memory at all.
        # So every query term matches, and BM25 scores only the tagged memories
        # that share one (the tag filter joins before the scoring).
        match_budget, match_share = math.inf, 1.0
    return {
        "ns": namespace_id,
        "text": q.text,
        "vector": vector,
        "kinds": q.kinds,
        "node_types": q.node_types,
        "tiers": q.tiers,
        "tags": q.tags or None,
        "privacy": q.privacy_ceiling,
        "valid_at": q.valid_at,
        "as_of": q.as_of,
        "include_superseded": q.include_superseded,
        "include_tombstoned": q.include_tombstoned,
        # A single signal needs only its own top k; fusion needs a pool of each.
        "semantic_limit": (q.k if q.mode == "semantic" else q.pool) if use_vector else 0,
        "lexical_limit": lexical_limit,
        "k": q.k,
        "doc_count": max(text_stats[0], 1),
        "avg_length": max(text_stats[1], 1.0),
        "match_share": match_share,
        "match_budget": match_budget,
        "match_cap": match_budget if q.mode == "hybrid" else math.inf,
        "known_terms": known[0],
        "known_counts": known[1],
        "cache_df_min": CACHED_DF_MIN,
        "neighbour_fanout": NEIGHBOUR_FANOUT,
        "neighbour_seeds": q.k,
    }
