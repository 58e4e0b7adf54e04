"""Spreading activation: pull a neighbourhood in SQL, score it in numpy, learn from it.

``run`` is the whole pipeline inside one transaction; the namespace supplies
the seeds (its hybrid recall of the query, or given ids) and the query vector.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
from memstore.activation.pull import Neighbourhood, node_rows, pull, tagged
from memstore.db.transaction import PipelinedTransaction

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
    given: Sequence[int] = (),
    check_given: Callable[[], dict[int, float]] | None = None,
    tx: PipelinedTransaction | None = None,
    prepare: bool = False,
) -> Activation:
    """Activate from ``seeds`` (current node id → seed strength) and ``given`` as ``request`` asks.

    ``request.query`` was used by the caller to find ``seeds``; ``vector`` is
    the query's embedding (None: no similarity). ``given`` are the caller's
    own seed ids (strength 1; an old version stands for its current one): the
    pull resolves them and reports whether each may be used, and if one may
    not, ``check_given`` (which must raise the error that says why) decides.
    With ``tx`` (``conn``'s transaction, see
    :func:`~memstore.db.transaction.pipelined_namespace_transaction`) the pull
    goes out in its first pipeline, and working memory's rows, what is
    learned and COMMIT in its last: two waits for the server. ``prepare``
    keeps the pull and the read of working memory prepared on the connection.
    """
    timings = dict(timings or {})
    depth, limit, params = request.depth, request.limit, request.params
    started = time.perf_counter()
    nb = pull(
        conn,
        namespace_id,
        sorted(seeds),
        given=given,
        depth=depth,
        fanout=request.fanout,
        both_directions=request.both_directions,
        privacy_ceiling=request.privacy_ceiling,
        as_of=request.as_of,
        vector=vector,
        model=model,
        pipeline=None if tx is None else tx.pipeline,
        prepare=prepare,
    )
    timings["pull"] = _ms(started)
    if given:
        seeds = dict(seeds)
        for current, strength in _given_seeds(nb, request, check_given).items():
            seeds[current] = max(seeds.get(current, 0.0), strength)

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
        # Before working memory is chosen, so it still holds ``limit`` nodes.
        allowed=None if not request.tags else tagged(conn, namespace_id, nb, request.tags),
    )
    timings["score"] = _ms(started)

    started = time.perf_counter()
    chosen = [int(i) for i in scores.working_memory]
    chosen_ids = [int(nb.node_id[i]) for i in chosen]

    def learn() -> None:
        learning.learn(
            conn,
            namespace_id,
            chosen_ids,
            [float(scores.final[i]) for i in chosen],
            _coactivated_edges(nb, scores, chosen),
            rate=params.hebbian_rate,
            ring=params.access_ring_size,
            session_id=request.session_id,
        )

    if tx is not None:
        # Working memory's rows, the learning and COMMIT: one wait.
        nodes = node_rows(
            conn,
            namespace_id,
            namespace,
            chosen_ids,
            pipeline=lambda: tx.pipeline(commit=True),
            also=learn if request.learn else None,
            prepare=prepare,
        )
        timings["fetch"] = _ms(started)
    else:
        nodes = node_rows(conn, namespace_id, namespace, chosen_ids, prepare=prepare)
        timings["fetch"] = _ms(started)
        if request.learn:
            started = time.perf_counter()
            learn()
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


def _given_seeds(
    nb: Neighbourhood,
    request: ActivateRequest,
    check_given: Callable[[], dict[int, float]] | None,
) -> dict[int, float]:
    """The given seeds as current ids of strength 1, once the pull's report clears them.

    Every id must be a node of the namespace and, without ``as_of``, its
    current version must be live; otherwise ``check_given`` raises the error
    that names the first offender (and its answer is used if it does not).
    """
    report = nb.given
    assert report is not None
    fine = all(report.known) and (request.as_of is not None or all(report.live))
    if not fine and check_given is not None:
        return check_given()
    return {current: 1.0 for current in report.current}


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
