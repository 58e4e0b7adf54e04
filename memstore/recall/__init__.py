"""Recall: semantic (pgvector HNSW), lexical (full text) and hybrid (fused)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from memstore.embedding.base import Embedder
from memstore.graph.rows import fetch_nodes
from memstore.models import Hit, ScoreParts
from memstore.recall import fusion
from memstore.recall.query import RecallQuery
from memstore.recall.signals import lexical_candidates, score_candidates, semantic_candidates

__all__ = ["RecallQuery", "recall"]


def recall(
    conn: Connection,
    namespace_id: int,
    namespace: str,
    q: RecallQuery,
    vector: np.ndarray[Any, Any] | None,
    embedder: Embedder,
    *,
    exact: bool = False,
) -> list[Hit]:
    """Run ``q`` in one namespace; ``vector`` is the query's embedding (None: lexical only).

    ``exact`` searches vectors without the HNSW index (for small namespaces).
    """
    semantic: list[int] = []
    lexical: list[int] = []
    if q.mode != "lexical" and vector is not None:
        semantic = semantic_candidates(
            conn, namespace_id, q, vector, embedder.name, embedder.dims, exact=exact
        )
    if q.mode != "semantic":
        lexical = lexical_candidates(conn, namespace_id, q)
    candidates = list(dict.fromkeys(semantic + lexical))
    signals = score_candidates(
        conn, namespace_id, candidates, q.text, vector, embedder.name, embedder.dims
    )
    if q.mode == "semantic":
        scores = {i: signals[i][0] or 0.0 for i in semantic}
    elif q.mode == "lexical":
        scores = {i: signals[i][1] for i in lexical}
    elif q.fusion == "rrf":
        scores = fusion.reciprocal_rank([semantic, lexical])
    else:
        scores = fusion.weighted(signals, q.semantic_weight)
    # Ties (e.g. equal fused scores) fall back to similarity, then id: stable output.
    ranked = sorted(scores, key=lambda i: (-scores[i], -(signals[i][0] or 0.0), i))[: q.k]
    found = fetch_nodes(conn, namespace_id, namespace, ranked)
    semantic_rank = {node_id: r for r, node_id in enumerate(semantic, start=1)}
    lexical_rank = {node_id: r for r, node_id in enumerate(lexical, start=1)}
    return [
        Hit(
            node=found[node_id],
            score=float(scores[node_id]),
            parts=ScoreParts(
                similarity=signals[node_id][0],
                lexical=signals[node_id][1],
                semantic_rank=semantic_rank.get(node_id),
                lexical_rank=lexical_rank.get(node_id),
                fused_rank=position,
            ),
        )
        for position, node_id in enumerate(ranked, start=1)
    ]
