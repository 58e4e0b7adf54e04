"""Recall: semantic (pgvector HNSW), lexical (full text) and hybrid (fused).

The SQL is one named query in ``recall.sql``, run in one round trip; the query
vector travels once, as binary. :mod:`~memstore.recall.statement` builds the
statement of a query, :mod:`~memstore.recall.run` sends it and keeps the term
counts, :mod:`~memstore.recall.ranking` turns its rows into hits.
"""

from memstore.recall.query import RecallQuery
from memstore.recall.ranking import Ranked, hits, ranked
from memstore.recall.run import learn_term_counts, recall, run_in, sample_term_counts, send
from memstore.recall.statement import (
    EXACT_SEARCH_MAX,
    FILTERED_EF_FACTOR,
    HNSW_MIN_SHARE,
    MATCH_BUDGET,
    MATCH_SHARE,
    MAX_EF_SEARCH,
    MIN_EF_SEARCH,
    RecallPlan,
    hnsw_settings,
    plan,
    recall_params,
    recall_statement,
    search_settings,
    searched_exactly,
    shares_index,
)
from memstore.recall.terms import TermCounts

__all__ = [
    "EXACT_SEARCH_MAX",
    "FILTERED_EF_FACTOR",
    "HNSW_MIN_SHARE",
    "MATCH_BUDGET",
    "MATCH_SHARE",
    "MAX_EF_SEARCH",
    "MIN_EF_SEARCH",
    "Ranked",
    "RecallPlan",
    "RecallQuery",
    "TermCounts",
    "hits",
    "hnsw_settings",
    "learn_term_counts",
    "plan",
    "ranked",
    "recall",
    "recall_params",
    "recall_statement",
    "run_in",
    "sample_term_counts",
    "search_settings",
    "searched_exactly",
    "send",
    "shares_index",
]
