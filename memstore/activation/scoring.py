"""Spreading activation over a pulled neighbourhood, in numpy (docs/activation.md).

Pure functions of arrays: no database, no clock. The formulas:

- salience(n) = α·importance + (1 − α)·recency, recency = σ((B − τ) / s),
  B = ln Σ_j (t_now − t_j)^(−d) over the node's creation and its remembered
  accesses, d = the node's decay rate (ACT-R base-level activation);
- sim(n) = max(floor, cos(query, n)) (1 with no query; a fixed value when the
  node has no vector);
- strength(seed) = its seed strength; strength(dst) = max over excitatory
  in-edges of strength(src) × w_eff × salience(dst) × sim(dst), over at most
  ``depth`` hops, with w_eff = 1 − (1 − weight)(1 − hebbian);
- inhibition, layer by layer from 0 (SAFETY) up: a target's activation is
  multiplied by max(0, 1 − Σ activation(src) × w_eff) over its inhibitory
  in-edges; a source in a lower layer has already fired and acts with its
  final activation, others with their excitatory strength; a target in a
  non-suppressible layer ignores sources in higher layers;
- optionally (``neighbour_share`` λ > 0), an additive term: activation(n) +=
  λ × Σ w_eff × activation(m) over n's excitatory in-edges (after inhibition);
- working memory: nodes whose activation reaches their type's threshold
  (never InternalStateEvent or Tag), strongest first (ties: lower layer, then id).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memstore.activation.model import ActivationParams
from memstore.activation.pull import BoolArray, FloatArray, IntArray, Neighbourhood

MIN_AGE_SECONDS = 1.0  # an access "now" counts as one second old: t^-d stays finite


@dataclass(frozen=True)
class Scores:
    """Per node of the neighbourhood (aligned with ``Neighbourhood.node_id``)."""

    raw: FloatArray
    """Excitatory strength, before inhibition."""
    final: FloatArray
    """Activation after inhibition."""
    best_edge: IntArray
    """Index into the edge arrays of the strongest in-edge; -1 for a seed (or unreached)."""
    working_memory: IntArray
    """Node indices in working memory, strongest first."""
    salience: FloatArray
    similarity: FloatArray
    spread: Spread
    excitatory: IntArray
    """Indices of the excitatory edges (the edges ``spread`` ran over)."""
    edge_src: IntArray
    """Node index of each edge's source."""


def effective_weight(weight: FloatArray, hebb: FloatArray) -> FloatArray:
    """Authored weight raised by the learned one: 1 − (1 − w)(1 − h); never below w."""
    return 1.0 - (1.0 - weight) * (1.0 - hebb)


def base_level(
    age: FloatArray,
    decay: FloatArray,
    access_index: IntArray,
    access_age: FloatArray,
) -> FloatArray:
    """ACT-R base-level activation B = ln Σ_j age_j^(−d), creation counting as an access."""
    total = np.power(np.maximum(age, MIN_AGE_SECONDS), -decay)
    if len(access_index):
        np.add.at(
            total,
            access_index,
            np.power(np.maximum(access_age, MIN_AGE_SECONDS), -decay[access_index]),
        )
    return np.asarray(np.log(total), dtype=np.float64)


def salience(nb: Neighbourhood, p: ActivationParams) -> FloatArray:
    """importance blended with ACT-R recency (see the module docstring)."""
    index = index_of(nb.node_id, nb.access_node)
    keep = index >= 0
    b = base_level(nb.node_age, nb.node_decay_rate, index[keep], nb.access_age[keep])
    recency = 1.0 / (1.0 + np.exp(-(b - p.actr_threshold) / p.actr_scale))
    return np.asarray(
        p.importance_weight * nb.node_importance + (1 - p.importance_weight) * recency,
        dtype=np.float64,
    )


def similarity(nb: Neighbourhood, p: ActivationParams, *, has_query: bool) -> FloatArray:
    """The similarity factor of each node (1 everywhere without a query)."""
    if not has_query:
        return np.ones(len(nb.node_id))
    sim = np.clip(nb.node_similarity, 0.0, 1.0)
    sim = np.maximum(sim, p.similarity_floor)
    return np.where(np.isnan(nb.node_similarity), p.missing_similarity, sim)


def index_of(ids: IntArray, wanted: IntArray) -> IntArray:
    """Position of each ``wanted`` id in ``ids`` (-1 where absent)."""
    if not len(ids) or not len(wanted):
        return np.full(len(wanted), -1, dtype=np.int64)
    if bool(np.all(ids[:-1] <= ids[1:])):
        # The pull returns its nodes in id order: no sorter needed (a search
        # through one was most of the scoring time at 3 hops).
        found = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
    else:
        order = np.argsort(ids, kind="stable")
        pos = np.searchsorted(ids, wanted, sorter=order)
        found = order[np.minimum(pos, len(ids) - 1)]
    return np.where(ids[found] == wanted, found, -1).astype(np.int64)


@dataclass(frozen=True)
class Spread:
    """The result of :func:`propagate`, with what it takes to retrace each node's path."""

    strength: FloatArray
    best_edge: IntArray
    """The in-edge (index into the edges given) that set each node's strength; -1 if none."""
    best_by_round: IntArray
    """(rounds + 1) × nodes: ``best_edge`` as it stood after each round."""
    set_in_round: IntArray
    """(rounds + 1) × nodes: the round in which each node's strength was last raised."""

    def path(self, src: IntArray, node: int) -> list[tuple[int, int]]:
        """(node, edge or -1) from the seed to ``node``, exactly as the strength was built.

        Each hop steps back to the source's state one round before the edge
        fired, so a path never has more hops than rounds run.
        """
        steps: list[tuple[int, int]] = []
        level = len(self.best_by_round) - 1
        while True:
            edge = int(self.best_by_round[level, node])
            steps.append((node, edge))
            if edge < 0:
                return steps[::-1]
            level = int(self.set_in_round[level, node]) - 1
            node = int(src[edge])


def propagate(
    n_nodes: int,
    seed_index: IntArray,
    seed_strength: FloatArray,
    src: IntArray,
    dst: IntArray,
    gain: FloatArray,
    edge_order_key: IntArray,
    depth: int,
) -> Spread:
    """Max-product spreading over at most ``depth`` hops (one round per hop).

    ``gain`` is each (excitatory) edge's factor w_eff × salience(dst) × sim(dst).
    A node's best in-edge is the one that last raised its strength (ties:
    lowest ``edge_order_key``).
    """
    strength = np.zeros(n_nodes)
    np.maximum.at(strength, seed_index, seed_strength)
    best = np.full(n_nodes, -1, dtype=np.int64)
    since = np.zeros(n_nodes, dtype=np.int64)
    best_by_round, set_in_round = [best.copy()], [since.copy()]
    for round_ in range(1, depth + 1):
        candidate = strength[src] * gain
        new = strength.copy()
        np.maximum.at(new, dst, candidate)
        improved = new > strength
        if not improved.any():
            break
        hits = np.flatnonzero(improved[dst] & (candidate == new[dst]))
        hits = hits[np.lexsort((edge_order_key[hits], dst[hits]))]
        first = np.unique(dst[hits], return_index=True)[1]
        best[dst[hits[first]]] = hits[first]
        since[dst[hits[first]]] = round_
        best_by_round.append(best.copy())
        set_in_round.append(since.copy())
        strength = new
    return Spread(
        strength=strength,
        best_edge=best,
        best_by_round=np.array(best_by_round),
        set_in_round=np.array(set_in_round),
    )


def inhibit(
    raw: FloatArray,
    layer: IntArray,
    src: IntArray,
    dst: IntArray,
    w_eff: FloatArray,
    non_suppressible: frozenset[int],
) -> FloatArray:
    """Apply inhibitory edges layer by layer, lowest layer first."""
    final = raw.copy()
    if not len(src):
        return final
    allowed = ~(np.isin(layer[dst], list(non_suppressible)) & (layer[src] > layer[dst]))
    for current in np.unique(layer[dst]):
        mine = allowed & (layer[dst] == current)
        if not mine.any():
            continue
        # Lower layers have fired: they act with their final activation.
        source = np.where(layer[src[mine]] < current, final[src[mine]], raw[src[mine]])
        pressure = np.zeros(len(raw))
        np.add.at(pressure, dst[mine], source * w_eff[mine])
        targets = np.unique(dst[mine])
        final[targets] = raw[targets] * np.maximum(0.0, 1.0 - pressure[targets])
    return final


def neighbour_sum(
    activation: FloatArray, src: IntArray, dst: IntArray, w_eff: FloatArray
) -> FloatArray:
    """Σ over each node's (excitatory) in-edges of w_eff × the source's activation."""
    total = np.zeros(len(activation))
    np.add.at(total, dst, w_eff * activation[src])
    return total


def score(
    nb: Neighbourhood,
    seed_ids: IntArray,
    seed_strength: FloatArray,
    *,
    depth: int,
    limit: int,
    has_query: bool,
    params: ActivationParams,
    allowed: BoolArray | None = None,
) -> Scores:
    """Score every node of ``nb`` and pick working memory (among the ``allowed`` nodes,
    aligned with ``nb.node_id``, when given: a tag filter)."""
    n = len(nb.node_id)
    sal = salience(nb, params)
    sim = similarity(nb, params, has_query=has_query)
    src = index_of(nb.node_id, nb.edge_src)
    dst = index_of(nb.node_id, nb.edge_dst)
    seeds = index_of(nb.node_id, seed_ids)
    keep = seeds >= 0  # a seed the pull did not return (e.g. over the privacy ceiling)
    w_eff = effective_weight(nb.edge_weight, nb.edge_hebb)
    excitatory = ~nb.edge_inhibitory
    exc = np.flatnonzero(excitatory)
    spread = propagate(
        n,
        seeds[keep],
        seed_strength[keep],
        src[exc],
        dst[exc],
        w_eff[exc] * sal[dst[exc]] * sim[dst[exc]],
        nb.edge_id[exc] * 2 + nb.edge_reverse[exc],
        depth,
    )
    raw = spread.strength
    best = np.full(n, -1, dtype=np.int64)
    reached = spread.best_edge >= 0
    best[reached] = exc[spread.best_edge[reached]]
    inh = np.flatnonzero(nb.edge_inhibitory)
    final = inhibit(
        raw, nb.node_layer, src[inh], dst[inh], w_eff[inh], params.non_suppressible_layers
    )
    if params.neighbour_share > 0:
        final = final + params.neighbour_share * neighbour_sum(
            final, src[exc], dst[exc], w_eff[exc]
        )
    thresholds, eligible = working_memory_rules(nb.node_type, params)
    if allowed is not None:
        eligible = eligible & allowed
    chosen = np.flatnonzero(eligible & (final > 0) & (final >= thresholds))
    chosen = chosen[np.lexsort((nb.node_id[chosen], nb.node_layer[chosen], -final[chosen]))]
    return Scores(
        raw=raw,
        final=final,
        best_edge=best,
        working_memory=chosen[:limit],
        salience=sal,
        similarity=sim,
        spread=spread,
        excitatory=exc,
        edge_src=src,
    )


def working_memory_rules(
    node_types: list[str], params: ActivationParams
) -> tuple[FloatArray, BoolArray]:
    """Each node's working-memory threshold, and whether its type may enter at all.

    Looked up once per distinct type (a pull has a handful of types and up to
    thousands of nodes), then spread to the nodes by a list lookup.
    """
    types = list(set(node_types))
    code = {t: i for i, t in enumerate(types)}
    which = np.array([code[t] for t in node_types], dtype=np.int64)
    thresholds = np.array([params.threshold(t) for t in types], dtype=np.float64)
    eligible = np.array([t not in params.never_working_memory for t in types], dtype=np.bool_)
    return thresholds[which], eligible[which]


def strongest_path(scores: Scores, node: int) -> list[tuple[int, int]]:
    """(node index, edge index or -1) from the seed to ``node``, as its activation was built."""
    src = scores.edge_src[scores.excitatory]
    return [
        (i, -1 if e < 0 else int(scores.excitatory[e])) for i, e in scores.spread.path(src, node)
    ]


__all__ = [
    "Scores",
    "Spread",
    "base_level",
    "effective_weight",
    "index_of",
    "inhibit",
    "neighbour_sum",
    "propagate",
    "salience",
    "score",
    "similarity",
    "strongest_path",
    "working_memory_rules",
]
