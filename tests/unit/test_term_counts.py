"""The client's cache of common terms' document counts (memstore/recall/terms.py)."""

from __future__ import annotations

from memstore.recall.terms import CACHED_TERMS_MAX, TermCounts


def test_offers_the_cached_terms_that_begin_like_a_query_word():
    terms = TermCounts()
    assert terms.offered("anything at all") == ([], [])
    terms.learn({"think": 900, "harbour": 500, "realli": 700, "make": 400, "day": 300})
    # Stems that are not prefixes of their words ("realli", "make") are offered too.
    assert terms.offered("Thinking about HARBOURS, really, making") == (
        ["think", "harbour", "realli", "make"],
        [900, 500, 700, 400],
    )


def test_learning_is_bounded():
    terms = TermCounts()
    terms.learn({f"t{i}": i for i in range(CACHED_TERMS_MAX + 50)})
    assert len(terms) == CACHED_TERMS_MAX
    terms.learn({"t1": 7})  # a known term is still updated
    assert terms.offered("t1") == (["t1"], [7])
    terms.learn(None)
    assert len(terms) == CACHED_TERMS_MAX
