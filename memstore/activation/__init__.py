"""Spreading activation: pull a neighbourhood in SQL, score it in numpy, learn from it.

``run`` is the whole pipeline inside one transaction; the namespace supplies
the seeds (its hybrid recall of the query, or given ids) and the query vector.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from memstore.activation import learning, scoring
from memstore.activation.model import (
    ActivatedItem,
    ActivateRequest,
    Activation,
    ActivationParams,
    ActivationStats,
    PathStep,
    Reached,
)
from memstore.activation.pull import Neighbourhood, pull
from memstore.graph.rows import fetch_nodes

__all__ = [
    "ActivateRequest",
    "ActivatedItem",
    "Activation",
    "ActivationParams",
    "ActivationStats",
    "PathStep",
    "Reached",
    "run",
]


def run(
    conn: Connection,
    namespace_id: int,
    namespace: str,
    seeds: dict[int, float],
    request: ActivateRequest,
    *,
    vector: np.ndarray[Any, Any] | None,
    model: str,
    timings: dict[str, float] | None = None,
) -> Activation:
    """Activate from ``seeds`` (current node id → seed strength) as ``request`` asks.

    ``request.query`` and ``request.seeds`` were used by the caller to find
    ``seeds``; ``vector`` is the query's embedding (None: no similarity).
    """
    timings = dict(timings or {})
    depth, limit, params = request.depth, request.limit, request.params
    started = time.perf_counter()
    nb = pull(
        conn,
        namespace_id,
        sorted(seeds),
        depth=depth,
        fanout=request.fanout,
        both_directions=request.both_directions,
        privacy_ceiling=request.privacy_ceiling,
        as_of=request.as_of,
        vector=vector,
        model=model,
    )
    timings["pull"] = _ms(started)

    started = time.perf_counter()
    seed_ids = np.fromiter(seeds, dtype=np.int64, count=len(seeds))
    seed_strength = np.fromiter(seeds.values(), dtype=np.float64, count=len(seeds))
    scores = scoring.score(
        nb,
        seed_ids,
        seed_strength,
        depth=depth,
        limit=limit,
        has_query=vector is not None,
        params=params,
    )
    timings["score"] = _ms(started)

    started = time.perf_counter()
    chosen = [int(i) for i in scores.working_memory]
    nodes = fetch_nodes(conn, namespace_id, namespace, [int(nb.node_id[i]) for i in chosen])
    timings["fetch"] = _ms(started)

    if request.learn:
        started = time.perf_counter()
        learning.learn(
            conn,
            namespace_id,
            [int(nb.node_id[i]) for i in chosen],
            [float(scores.final[i]) for i in chosen],
            _coactivated_edges(nb, scores, chosen),
            rate=params.hebbian_rate,
            ring=params.access_ring_size,
            session_id=request.session_id,
        )
        timings["learn"] = _ms(started)

    in_memory = set(chosen)
    working = [
        ActivatedItem(
            node=nodes[int(nb.node_id[i])],
            score=float(scores.final[i]),
            raw_score=float(scores.raw[i]),
            depth=int(nb.node_depth[i]),
            seed=bool(nb.node_depth[i] == 0),
            path=_path(nb, scores, i),
        )
        for i in chosen
    ]
    activation = Activation(
        query=request.query,
        working_memory=working,
        stats=ActivationStats(
            seeds=len(seeds),
            nodes=len(nb.node_id),
            edges=nb.edge_count,
            timings_ms=timings,
        ),
    )

    def background() -> list[Reached]:
        order = np.lexsort((nb.node_id, nb.node_layer, -scores.final))
        return [_reached(nb, scores, int(i), int(i) in in_memory) for i in order]

    activation._build_background = background
    return activation


def _coactivated_edges(nb: Neighbourhood, scores: scoring.Scores, chosen: list[int]) -> list[int]:
    """Excitatory edges whose ends both entered working memory (each edge once)."""
    if not chosen:
        return []
    members = nb.node_id[chosen]
    both = np.isin(nb.edge_src, members) & np.isin(nb.edge_dst, members) & ~nb.edge_inhibitory
    return sorted({int(e) for e in nb.edge_id[both]})


def _path(nb: Neighbourhood, scores: scoring.Scores, node: int) -> list[PathStep]:
    return [
        PathStep(
            node_id=int(nb.node_id[i]),
            edge_id=None if e < 0 else int(nb.edge_id[e]),
            relation=None if e < 0 else nb.edge_relation[e],
            reverse=False if e < 0 else bool(nb.edge_reverse[e]),
            activation=float(scores.raw[i]),
        )
        for i, e in scoring.strongest_path(scores, node)
    ]


def _reached(nb: Neighbourhood, scores: scoring.Scores, i: int, in_memory: bool) -> Reached:
    e = int(scores.best_edge[i])
    # Built from the pull's own typed arrays: construct without re-validating
    # (a hub can put ten thousand nodes in the background).
    return Reached.model_construct(
        id=int(nb.node_id[i]),
        activation=float(scores.final[i]),
        raw_activation=float(scores.raw[i]),
        depth=int(nb.node_depth[i]),
        layer=int(nb.node_layer[i]),
        node_type=nb.node_type[i],
        label=nb.node_label[i],
        tier=nb.node_tier[i],
        seed=bool(nb.node_depth[i] == 0),
        in_working_memory=in_memory,
        via_edge=None if e < 0 else int(nb.edge_id[e]),
        via_relation=None if e < 0 else nb.edge_relation[e],
        via_node=None if e < 0 else int(nb.edge_src[e]),
    )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
