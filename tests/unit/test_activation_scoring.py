"""Spreading activation's numpy scoring, checked against brute force (no database)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.activation import scoring
from memstore.activation.model import ActivationParams
from memstore.activation.pull import Neighbourhood
from memstore.activation.scoring import base_level, inhibit, propagate, score, strongest_path


def brute_force(n, seeds, edges, depth):
    """max over paths of at most ``depth`` hops of seed × Π gain (edges: (src, dst, gain))."""
    best = [0.0] * n
    for s, strength in seeds.items():
        best[s] = max(best[s], strength)

    def walk(node, value, hops):
        if hops == depth:
            return
        for src, dst, gain in edges:
            if src == node:
                reached = value * gain
                best[dst] = max(best[dst], reached)
                walk(dst, reached, hops + 1)

    for s, strength in seeds.items():
        walk(s, strength, 0)
    return best


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 7))
    pairs = [(a, b) for a, b in itertools.product(range(n), repeat=2) if a != b]
    chosen = draw(st.lists(st.sampled_from(pairs), max_size=14, unique=True))
    gains = draw(st.lists(st.floats(0.01, 1.0), min_size=len(chosen), max_size=len(chosen)))
    seeds = draw(st.dictionaries(st.integers(0, n - 1), st.floats(0.05, 1.0), min_size=1))
    depth = draw(st.integers(0, 4))
    return n, [(a, b, g) for (a, b), g in zip(chosen, gains, strict=True)], seeds, depth


@given(graphs())
@settings(max_examples=300, deadline=None)
def test_propagation_is_the_strongest_path_within_depth(graph):
    n, edges, seeds, depth = graph
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    gain = np.array([e[2] for e in edges])
    spread = propagate(
        n,
        np.array(list(seeds), dtype=np.int64),
        np.array(list(seeds.values())),
        src,
        dst,
        gain,
        np.arange(len(edges), dtype=np.int64),
        depth,
    )
    assert spread.strength == pytest.approx(brute_force(n, seeds, edges, depth))
    # Each reached node's path starts at a seed, has at most `depth` hops, and
    # its product of gains is exactly the node's strength.
    for node in range(n):
        if spread.strength[node] == 0:
            continue
        path = spread.path(src, node)
        start, first_edge = path[0]
        assert first_edge == -1 and start in seeds
        assert len(path) - 1 <= depth
        value = seeds[start]
        for _, e in path[1:]:
            value *= gain[e]
        assert value == pytest.approx(spread.strength[node])


def test_base_level_is_actr_over_creation_and_accesses():
    age = np.array([3600.0, 100.0, 0.0])
    decay = np.array([0.5, 0.0, 0.5])
    b = base_level(age, decay, np.array([0, 0, 1], dtype=np.int64), np.array([60.0, 10.0, 5.0]))
    assert b[0] == pytest.approx(math.log(3600**-0.5 + 60**-0.5 + 10**-0.5))
    assert b[1] == pytest.approx(math.log(2))  # no decay: ln(number of presentations)
    assert b[2] == pytest.approx(0.0)  # created "now": one second old


def test_inhibition_fires_lower_layers_first_and_respects_non_suppressible_layers():
    # nodes: 0 (layer 0), 1 (layer 1), 2 (layer 2); raw strengths 1, 0.8, 0.6
    raw = np.array([1.0, 0.8, 0.6])
    layer = np.array([0, 1, 2], dtype=np.int64)
    # 0 -| 1 (w 0.5); 1 -| 2 (w 0.5); 2 -| 0 (w 0.9, higher layer into SAFETY)
    src = np.array([0, 1, 2], dtype=np.int64)
    dst = np.array([1, 2, 0], dtype=np.int64)
    w = np.array([0.5, 0.5, 0.9])
    final = inhibit(raw, layer, src, dst, w, frozenset({0}))
    assert final[0] == pytest.approx(1.0)  # SAFETY is not suppressed from above
    assert final[1] == pytest.approx(0.8 * (1 - 1.0 * 0.5))
    # Node 1 fired (layer 1 < 2) and acts with its suppressed activation.
    assert final[2] == pytest.approx(0.6 * (1 - 0.4 * 0.5))
    # Without the protection, node 2 suppresses node 0 with its raw strength.
    unprotected = inhibit(raw, layer, src, dst, w, frozenset())
    assert unprotected[0] == pytest.approx(1.0 * (1 - 0.6 * 0.9))


def _neighbourhood(ids, edges, *, types=None, layers=None, importance=0.5, sim=None):
    n = len(ids)
    return Neighbourhood(
        edge_src=np.array([e[0] for e in edges], dtype=np.int64),
        edge_dst=np.array([e[1] for e in edges], dtype=np.int64),
        edge_id=np.arange(1, len(edges) + 1, dtype=np.int64),
        edge_weight=np.array([e[2] for e in edges], dtype=np.float64),
        edge_hebb=np.array([e[3] if len(e) > 3 else 0.0 for e in edges], dtype=np.float64),
        edge_inhibitory=np.array([len(e) > 4 and e[4] for e in edges], dtype=np.bool_),
        edge_relation=["related"] * len(edges),
        edge_reverse=np.zeros(len(edges), dtype=np.bool_),
        edge_depth=np.ones(len(edges), dtype=np.int64),
        node_id=np.array(ids, dtype=np.int64),
        node_depth=np.array([0] + [1] * (n - 1), dtype=np.int64),
        node_layer=np.array(layers or [1] * n, dtype=np.int64),
        node_type=types or ["Fact"] * n,
        node_label=[None] * n,
        node_tier=[None] * n,
        node_importance=np.full(n, importance),
        node_decay_rate=np.full(n, 0.5),
        node_age=np.full(n, 60.0),
        node_similarity=np.array(sim if sim is not None else [np.nan] * n, dtype=np.float64),
        access_node=np.array([], dtype=np.int64),
        access_age=np.array([], dtype=np.float64),
    )


def test_score_combines_weight_hebbian_salience_and_similarity():
    # 10 -> 20 (w 0.5, learned 0.5) -> 30 (w 0.8); query similarities 0.9 / 0.3 / -0.2
    nb = _neighbourhood([10, 20, 30], [(10, 20, 0.5, 0.5), (20, 30, 0.8)], sim=[0.9, 0.3, -0.2])
    params = ActivationParams(similarity_floor=0.1)
    scores = score(
        nb,
        np.array([10], dtype=np.int64),
        np.array([1.0]),
        depth=2,
        limit=10,
        has_query=True,
        params=params,
    )
    recency = 1 / (1 + math.exp(-(math.log(60**-0.5) + 5.0)))
    salience = 0.5 * 0.5 + 0.5 * recency
    w_eff = 1 - 0.5 * 0.5
    first = 1.0 * w_eff * salience * 0.3
    second = first * 0.8 * salience * 0.1  # negative cosine: the floor
    assert scores.final == pytest.approx([1.0, first, second])
    assert [int(nb.node_id[i]) for i, _ in strongest_path(scores, 2)] == [10, 20, 30]


def test_working_memory_honours_type_thresholds_and_never_types():
    nb = _neighbourhood(
        [1, 2, 3, 4],
        [(1, 2, 0.2), (1, 3, 0.2), (1, 4, 1.0)],
        types=["Fact", "Safety", "Memory", "Tag"],
    )
    scores = score(
        nb,
        np.array([1], dtype=np.int64),
        np.array([1.0]),
        depth=1,
        limit=10,
        has_query=False,
        params=ActivationParams(thresholds={"Safety": 0.01, "Memory": 0.5}),
    )
    chosen = [int(nb.node_id[i]) for i in scores.working_memory]
    # The faint Safety node fires; the Memory at the same strength does not; Tag never.
    assert chosen == [1, 2]
    assert scores.final[3] > scores.final[1]  # the Tag was strongly activated all the same


def test_neighbour_share_adds_a_share_of_the_in_neighbours_activation():
    # 1 -> 2 (w 0.5), 3 -> 2 (w 1.0): seeds 1 and 3; no query, salience from the fixture.
    nb = _neighbourhood([1, 2, 3], [(1, 2, 0.5), (3, 2, 1.0)])
    plain = score(
        nb,
        np.array([1, 3], dtype=np.int64),
        np.array([1.0, 0.4]),
        depth=1,
        limit=10,
        has_query=False,
        params=ActivationParams(),
    )
    summed = score(
        nb,
        np.array([1, 3], dtype=np.int64),
        np.array([1.0, 0.4]),
        depth=1,
        limit=10,
        has_query=False,
        params=ActivationParams(neighbour_share=0.3),
    )
    expected = plain.final.copy()
    expected[1] += 0.3 * (0.5 * plain.final[0] + 1.0 * plain.final[2])
    assert summed.final == pytest.approx(expected)
    assert summed.final[0] == plain.final[0]  # seeds without in-edges are unchanged


@pytest.mark.parametrize("sort", [True, False])
def test_index_of_finds_each_id_in_sorted_or_unsorted_ids(sort):
    rng = np.random.default_rng(7)
    for _ in range(200):
        ids = rng.choice(500, size=int(rng.integers(0, 40)), replace=False)
        if sort:
            ids = np.sort(ids)
        wanted = rng.integers(0, 500, size=int(rng.integers(0, 30)))
        where = {int(v): i for i, v in enumerate(ids)}
        expected = [where.get(int(w), -1) for w in wanted]
        assert scoring.index_of(ids, wanted).tolist() == expected


def test_working_memory_rules_per_node_from_its_type():
    params = ActivationParams(thresholds={"Fact": 0.2}, default_threshold=0.07)
    thresholds, eligible = scoring.working_memory_rules(["Fact", "Tag", "Other", "Fact"], params)
    assert thresholds.tolist() == [0.2, 0.07, 0.07, 0.2]
    assert eligible.tolist() == [True, False, True, True]
    empty = scoring.working_memory_rules([], params)
    assert [len(a) for a in empty] == [0, 0]
