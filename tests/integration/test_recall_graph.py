"""Graph evidence in default recall: a memory gains a share of its linked neighbours' scores.

A conversation ingested through the timeline links each turn to the next; a
question whose answer sits in the turn after the one that matches it should
find that turn too. ``neighbour_share=0`` is the plain fused ranking, and a
namespace without edges ranks as it always did.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstore.errors import InvalidInputError
from memstore.recall import ranking

START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)

# The question names the pottery workshop; the answer (what Melanie made
# there) is in the next turn, which shares none of the question's words.
CONVERSATION = [
    ("Caroline", "How was the pottery workshop in Boston last weekend?"),
    ("Melanie", "Wonderful, I made two blue bowls and a vase for my mum."),
    ("Caroline", "I went hiking with my brother near the lake."),
    ("Melanie", "The weekend weather in Boston was awful though."),
    ("Caroline", "Our book club read a novel about a lighthouse keeper."),
    ("Melanie", "My kids started swimming lessons at the community pool."),
    ("Caroline", "The workshop on painting at the library was full."),
    ("Melanie", "We adopted a cat from the shelter, she is called Luna."),
    ("Caroline", "Last weekend I also fixed my bike."),
    ("Melanie", "I am learning to cook Thai curry this month."),
]
QUESTION = "What happened at the pottery workshop in Boston?"
ANSWER = 1  # the turn that answers it


def ingest(ns, turns=CONVERSATION, session="s1"):
    return [
        ns.timeline.ingest_turn(role, text, session, at=START + timedelta(minutes=i))
        for i, (role, text) in enumerate(turns)
    ]


def rank_of(hits, node_id):
    ids = [hit.node.id for hit in hits]
    return ids.index(node_id) + 1 if node_id in ids else None


@pytest.fixture
def turns(ns):
    return ingest(ns)


def test_neighbour_evidence_lifts_the_turn_after_the_match(ns, turns):
    answer = turns[ANSWER].id
    plain = ns.recall(QUESTION, k=3, neighbour_share=0)
    graph = ns.recall(QUESTION, k=3)
    assert plain[0].node.id == turns[0].id == graph[0].node.id
    assert rank_of(plain, answer) is None  # full text and cosine alone miss it
    assert rank_of(graph, answer) == 2


def test_graph_evidence_adds_the_share_of_the_neighbours_scores(ns, turns, monkeypatch):
    monkeypatch.setattr(ranking, "SCOPE_SHARE", 0.0)  # the neighbour term alone...
    monkeypatch.setattr(ranking, "GRAPH_SEMANTIC_FACTOR", 1.0)  # ...over plain fused scores
    edge_weight = 0.8  # memstore.tiers.timeline.NEXT_WEIGHT
    plain = {hit.node.id: hit.score for hit in ns.recall(QUESTION, k=10, neighbour_share=0)}
    graph = {hit.node.id: hit.score for hit in ns.recall(QUESTION, k=10, neighbour_share=0.4)}
    # The first turn's only neighbour is the answer; the others have two.
    first, answer = turns[0].id, turns[ANSWER].id
    assert graph[first] == pytest.approx(
        plain[first] + 0.4 * edge_weight * graph_base(plain, answer)
    )
    assert graph[answer] > 0.4 * edge_weight * plain[first]


def graph_base(plain, node_id):
    """A neighbour's own fused score (0 where the plain ranking's top 10 did not hold it)."""
    return plain.get(node_id, 0.0)


def test_scope_evidence_lifts_the_turns_of_the_matching_session(ns, turns):
    # Another session, unlinked to the first, whose turns share the question's words.
    other = ingest(ns, [("Ann", "Boston traffic"), ("Bo", "pottery prices")], session="s9")
    hits = ns.recall(QUESTION, k=10, neighbour_share=1e-9)  # scope evidence, next to no graph
    plain = ns.recall(QUESTION, k=10, neighbour_share=0)
    in_first = {t.id for t in turns}
    assert sum(h.node.id in in_first for h in hits[:5]) >= sum(
        h.node.id in in_first for h in plain[:5]
    )
    assert [h.node.id for h in hits[:1]] == [turns[0].id]
    # The other session's best match gives way to the question's session.
    assert (rank_of(hits, other[1].id) or 99) > rank_of(plain, other[1].id)


def test_plain_recall_and_an_unlinked_namespace_rank_as_before(store, ns, turns):
    unlinked = store.namespace(f"{ns.name}-unlinked")
    for turn in turns:  # the same texts, without the timeline's edges
        unlinked.remember(turn.content, actor=turn.actor, observed_at=turn.observed_at)

    def ranking(hits):
        return [(hit.node.content, round(hit.score, 9)) for hit in hits]

    for query in (QUESTION, "weekend in Boston", "cat from the shelter"):
        plain = ranking(ns.recall(query, k=10, neighbour_share=0))
        assert ranking(unlinked.recall(query, k=10)) == plain
        assert ranking(unlinked.recall(query, k=10, neighbour_share=0)) == plain
        # Other modes take no graph evidence.
        for mode in ("semantic", "lexical"):
            assert ranking(ns.recall(query, k=10, mode=mode)) == ranking(
                unlinked.recall(query, k=10, mode=mode)
            )


def test_neighbours_respect_the_recalls_filters(ns, turns):
    answer = turns[ANSWER]
    assert rank_of(ns.recall(QUESTION, k=3), answer.id) == 2
    # A neighbour outside the filter is neither returned nor lifting anything.
    hits = ns.recall(QUESTION, k=10, tiers=["timeline"], kinds=["semantic"])
    assert hits == []
    # Forgotten edges carry nothing: link the answer only through a forgotten edge.
    other = ns.remember("Melanie's bowls were glazed in cobalt blue at the studio")
    edge = ns.link(turns[0].id, other.id, relation="related", weight=1.0)
    assert rank_of(ns.recall(QUESTION, k=3), other.id) is not None
    ns.forget(edge.id, target="edge", reason="wrong link")
    assert rank_of(ns.recall(QUESTION, k=3), other.id) is None


def test_a_neighbour_above_the_ceiling_is_neither_returned_nor_counted(ns, turns):
    secret = ns.remember("Melanie's private diary entry about her mother", privacy=2)
    ns.link(turns[0].id, secret.id, relation="related", weight=1.0)
    assert rank_of(ns.recall(QUESTION, k=10, privacy_ceiling=3), secret.id) is not None
    below = ns.recall(QUESTION, k=10, privacy_ceiling=1)
    assert rank_of(below, secret.id) is None
    assert all(hit.node.privacy <= 1 for hit in below)


def test_tombstoned_and_redacted_neighbours_are_not_returned(ns, turns):
    answer = turns[ANSWER]
    ns.forget(answer.id, reason="said by mistake")
    assert rank_of(ns.recall(QUESTION, k=10), answer.id) is None
    third = ns.timeline.ingest_turn(
        "Melanie", "Yes, and I also bought clay for a second vase.", "s2", at=START
    )
    ns.timeline.ingest_turn(
        "Caroline", "The pottery workshop in Boston again?", "s2", at=START + timedelta(minutes=1)
    )
    assert rank_of(ns.recall(QUESTION, k=10), third.id) is not None
    ns.redact(third.id, reason="erasure request")
    hits = ns.recall(QUESTION, k=10)
    assert rank_of(hits, third.id) is None
    assert not any("clay" in hit.node.content for hit in hits)
    packet = ns.recall_context(QUESTION, budget_tokens=1000)
    assert "clay" not in packet.render()


def test_neighbour_share_is_validated(ns):
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(InvalidInputError):
            ns.recall(QUESTION, neighbour_share=bad)


# Speaker evidence (ranking.SPEAKER_SHARE): the question names Melanie, and
# Caroline's turn, which says "Melanie" and "garden" more often, matches its
# words better than Melanie's own answer. The two sessions are unlinked, so
# neither graph nor scope evidence separates them.
GARDEN = [
    ("Caroline", "Melanie! Melanie, I planted roses and planted mint in my garden."),
    ("Melanie", "I planted tomatoes in my garden."),
    ("Caroline", "The weather was cold all week, and the bus to the garden centre was late again."),
    ("Caroline", "My brother fixed the old fence behind the community garden on Sunday morning."),
]
GARDEN_QUESTION = "What did Melanie plant in her garden?"


def garden(ns):
    return [
        ns.timeline.ingest_turn(role, text, f"g{i}", at=START + timedelta(hours=i))
        for i, (role, text) in enumerate(GARDEN)
    ]


def test_speaker_evidence_lifts_the_named_speakers_turn(ns, monkeypatch):
    monkeypatch.setattr(ranking, "GRAPH_SEMANTIC_FACTOR", 1.0)  # plain fused scores beneath
    caroline, melanie, *_ = garden(ns)
    plain = ns.recall(GARDEN_QUESTION, k=2, neighbour_share=0)
    assert [hit.node.id for hit in plain] == [caroline.id, melanie.id]
    hits = ns.recall(GARDEN_QUESTION, k=2)
    assert [hit.node.id for hit in hits] == [melanie.id, caroline.id]
    assert hits[0].score == pytest.approx(plain[1].score + ranking.SPEAKER_SHARE * plain[0].score)
    monkeypatch.setattr(ranking, "SPEAKER_SHARE", 0.0)  # without it, the plain order
    assert [hit.node.id for hit in ns.recall(GARDEN_QUESTION, k=2)] == [caroline.id, melanie.id]


def test_speaker_evidence_needs_the_whole_name(ns):
    garden(ns)
    # "Mel" is not "Melanie", and a question naming nobody moves nothing.
    for question in ("What did Mel plant in her garden?", "What was planted in the garden?"):
        plain = [hit.node.id for hit in ns.recall(question, k=2, neighbour_share=0)]
        assert [hit.node.id for hit in ns.recall(question, k=2)] == plain
    assert ranking.named_actors("MELANIE's garden", ["Melanie", "Caroline"]) == {"Melanie"}
    assert ranking.named_actors("Melanies garden", ["Melanie"]) == set()


# Date evidence (ranking.DATE_SHARE, memstore/recall/dates.py): the question names
# the day of the first session, whose turn matches its words a little less well
# than a later session's (both sessions alike otherwise); the turns' observed_at
# (the timeline's `at`) says when each was said.
DINNERS = [
    ("s1", datetime(2023, 5, 3, 19, 0, tzinfo=UTC), "Maria", "We had dinner with my aunt."),
    ("s1", datetime(2023, 5, 3, 19, 1, tzinfo=UTC), "John", "Sounds like a lovely evening."),
    ("s2", datetime(2023, 6, 10, 12, 0, tzinfo=UTC), "Maria", "We had dinner with my mum."),
    ("s2", datetime(2023, 6, 10, 12, 1, tzinfo=UTC), "John", "The pier is nice in June."),
]
DINNER_QUESTION = "Who did Maria have dinner with on May 3, 2023?"


def test_date_evidence_lifts_the_turns_of_the_named_day(ns, monkeypatch):
    said = [ns.timeline.ingest_turn(role, text, s, at=at) for s, at, role, text in DINNERS]
    first, later = said[0].id, said[2].id
    plain = [hit.node.id for hit in ns.recall(DINNER_QUESTION, k=2, neighbour_share=0)]
    assert plain[0] == later
    hits = ns.recall(DINNER_QUESTION, k=2)
    assert hits[0].node.id == first
    monkeypatch.setattr(ranking, "DATE_SHARE", 0.0)  # without it, the later dinner first
    assert ns.recall(DINNER_QUESTION, k=2)[0].node.id == later
    monkeypatch.undo()
    # A question naming no date, or another day, moves nothing towards the first.
    for question in ("Who did Maria have dinner with?", "Who came to dinner on 9 May 2023?"):
        assert ns.recall(question, k=1)[0].node.id == later
