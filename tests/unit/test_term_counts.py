"""The client's cache of common terms' document counts (memstore/recall/terms.py)."""

from __future__ import annotations

from memstore.recall.terms import (
    CACHED_DF_MIN,
    CACHED_TERMS_MAX,
    MIN_SAMPLE_HITS,
    REFRESH_GROWTH,
    TERM_SAMPLE,
    TermCounts,
    estimated,
    sample_params,
)


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


def test_a_namespace_no_bigger_than_the_sample_is_read_whole_and_exactly():
    assert sample_params(TERM_SAMPLE) == {
        "windows": 1,
        "per_window": TERM_SAMPLE,
        "min_hits": CACHED_DF_MIN,
    }
    terms = estimated(
        1_000, [("harbour", CACHED_DF_MIN, 1_000), ("quay", CACHED_DF_MIN - 1, 1_000)]
    )
    assert terms.offered("harbour quay") == (["harbour"], [CACHED_DF_MIN])


def test_a_bigger_namespaces_counts_are_scaled_from_the_sample():
    params = sample_params(1_000_000)
    assert params["windows"] * params["per_window"] <= TERM_SAMPLE
    # A term must be in enough sampled documents to be both common and estimated well.
    assert params["min_hits"] >= MIN_SAMPLE_HITS
    assert params["min_hits"] * 1_000_000 / TERM_SAMPLE >= CACHED_DF_MIN
    terms = estimated(1_000_000, [("ferri", 40, 2_000), ("barg", 10, 2_000)])
    assert terms.offered("ferry barge") == (["ferri", "barg"], [20_000, 5_000])


def test_counts_serve_until_the_namespace_grows_by_a_tenth():
    assert not TermCounts().current_for(0)  # never estimated
    terms = TermCounts(documents=1_000)
    assert terms.current_for(1_000) and terms.current_for(1_099)
    assert not terms.current_for(round(1_000 * REFRESH_GROWTH))
