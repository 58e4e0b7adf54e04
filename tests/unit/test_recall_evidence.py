"""Graph, scope and date evidence (memstore/recall/fusion.py, dates.py, ranking.py): the
arithmetic, without a database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from types import SimpleNamespace

import pytest

from memstore.recall import dates, fusion, ranking
from memstore.recall.query import RecallQuery


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


def test_date_evidence_lifts_the_dated_by_a_share_of_the_best():
    scores = {1: 1.0, 2: 0.4, 3: 0.1}
    lifted = fusion.lifted(scores, {3}, 0.3)
    assert lifted == {1: 1.0, 2: 0.4, 3: pytest.approx(0.1 + 0.3 * 1.0)}
    assert fusion.lifted(scores, set(), 0.3) == scores


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("What did Gina find on 1 February, 2023?", [(date(2023, 2, 1), date(2023, 2, 2))]),
        ("What painting did she show on October 13, 2023?", [(date(2023, 10, 13), None)]),
        ("Who came to dinner on May 3rd 2023?", [(date(2023, 5, 3), None)]),
        ("What happened on 2024-02-29?", [(date(2024, 2, 29), None)]),
        ("What class did Maria start in December 2023?", [(date(2023, 12, 1), date(2024, 1, 1))]),
        ("When did Mel go camping in June?", [(None, 6)]),
        ("What did they plan in May?", [(None, 5)]),
        ("What may Mel paint next week?", []),  # the verb, and a relative date: nothing
        ("What did she do in 2023?", []),  # a bare year names too much of a chat
        ("What happened on 31 June, 2023?", []),  # no such day
    ],
)
def test_named_periods(text, named):
    found = dates.named_periods(text)
    assert len(found) == len(named)
    for period, (first, second) in zip(found, named, strict=True):
        if first is None:
            assert (period.start, period.month) == (None, second)
        else:
            assert period.start == first
            assert period.end == (second or first + timedelta(days=1))


def test_a_period_holds_its_days_and_the_week_after():
    june = dates.named_periods("in June")[0]
    day = dates.named_periods("on 3 June, 2023")[0]
    at = datetime(2023, 6, 3, 18, 30, tzinfo=UTC)
    assert june.holds(at) and day.holds(at)
    assert day.holds(at + timedelta(days=7)) and not day.holds(at + timedelta(days=8))
    assert june.holds(datetime(2021, 7, 5, tzinfo=UTC))  # any year; early July reports June
    assert not june.holds(datetime(2023, 7, 9, tzinfo=UTC))
    assert not day.holds(None)


def rows(signals, scopes):
    """Recall statement rows (the fields ranking reads) for ``{id: (similarity, bm25)}``."""
    return [
        {
            "id": i,
            "similarity": s,
            "lexical": lex,
            "semantic_rank": rank,
            "lexical_rank": rank,
            "scope": scopes.get(i),
            "actor": None,
            "observed_at": None,
            "neighbour_edges": None,
        }
        for rank, (i, (s, lex)) in enumerate(signals.items(), start=1)
    ]


def test_evidence_leans_on_full_text(monkeypatch):
    """With graph or scope evidence the similarity share is GRAPH_SEMANTIC_FACTOR of the
    embedder's: here 1 (similar, few shared words) outranks 2 (the rare words) in plain
    fused recall, and 2 comes first with the evidence."""
    monkeypatch.setattr(ranking, "SCOPE_SHARE", 1e-9)  # scope present, adding nothing
    signals = {1: (0.9, 2.0), 2: (0.4, 3.0), 3: (0.1, 1.0)}
    embedder = SimpleNamespace(semantic_weight=0.5)
    scoped = rows(signals, {1: "a", 2: "b", 3: "c"})

    def order(**args):
        q = RecallQuery(text="rare words", k=3, **args)
        return [r.row["id"] for r in ranking.ranked(scoped, q, embedder)]

    # Normalised: similarity 1, 0.375, 0; full text 0.5, 1, 0.
    assert order(neighbour_share=0) == [1, 2, 3]  # 0.5·1 + 0.5·0.5 > 0.5·0.375 + 0.5·1
    assert order() == [2, 1, 3]  # 0.3·1 + 0.7·0.5 < 0.3·0.375 + 0.7·1
    assert order(semantic_weight=0.5) == [1, 2, 3]  # a weight asked for is kept
    monkeypatch.setattr(ranking, "GRAPH_SEMANTIC_FACTOR", 1.0)
    assert order() == [1, 2, 3]
    # Nothing to sum (no edges, no scopes): the plain weight, the plain order.
    monkeypatch.setattr(ranking, "GRAPH_SEMANTIC_FACTOR", 0.6)
    bare = rows(signals, {})
    q = RecallQuery(text="rare words", k=3)
    assert [r.row["id"] for r in ranking.ranked(bare, q, embedder)] == [1, 2, 3]
