"""Graph and scope evidence (memstore/recall/fusion.py): the arithmetic, without a database."""

from __future__ import annotations

import pytest

from memstore.recall import fusion


def test_neighbours_add_their_share_both_ways():
    scores = {1: 1.0, 2: 0.2, 3: 0.0}
    summed = fusion.with_neighbours(scores, [(1, 2, 0.8), (2, 3, 0.5)], 0.5)
    assert summed[1] == pytest.approx(1.0 + 0.5 * 0.8 * 0.2)
    assert summed[2] == pytest.approx(0.2 + 0.5 * 0.8 * 1.0 + 0.5 * 0.5 * 0.0)
    assert summed[3] == pytest.approx(0.5 * 0.5 * 0.2)
    assert fusion.with_neighbours(scores, [(1, 9, 1.0)], 0.5) == scores  # 9: no score


def test_scope_adds_the_best_other_score_of_the_scope():
    base = {1: 1.0, 2: 0.4, 3: 0.1, 4: 0.9}
    scopes = {1: "s1", 2: "s1", 3: "s1", 4: "s2"}
    summed = fusion.with_scope(base, base, scopes, 0.5)
    assert summed[1] == pytest.approx(1.0 + 0.5 * 0.4)  # its own score does not count
    assert summed[2] == pytest.approx(0.4 + 0.5 * 1.0)
    assert summed[3] == pytest.approx(0.1 + 0.5 * 1.0)
    assert summed[4] == pytest.approx(0.9)  # alone in its scope
    assert fusion.with_scope({5: 0.3}, base, {}, 0.5) == {5: 0.3}  # no scope


def test_weighted_fusion_normalises_by_the_seeds_and_clamps_the_others():
    signals = {1: (0.9, 3.0), 2: (0.5, 1.0), 3: (0.1, 0.0)}
    seeds = {1, 2}
    fused = fusion.weighted(signals, 0.5, seeds)
    assert fused[1] == pytest.approx(1.0) and fused[2] == pytest.approx(0.0)
    assert fused[3] == pytest.approx(0.0)  # below the seeds' bounds: clamped
    assert fusion.weighted(signals, 0.5) == fusion.weighted(signals, 0.5, None)
