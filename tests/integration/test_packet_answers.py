"""Context packets carry the turns that answer: the recalled turn and the reply beside it
(issue 22). A question's answer is often the turn after the one recall finds, sharing no
word with the question; the packet takes the neighbouring turns of its best hits."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstore.tiers import packet
from memstore.tiers.packet import Entry, with_adjacent

START = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
QUERY = "Where did you move with the kids and the dog?"
FRIENDS = ("Ana", "Rui", "Maya", "Tom", "Ines", "Joao", "Lena", "Omar", "Sara", "Ivo", "Nina",
           "Paulo", "Rita", "Hugo", "Vera", "Luis", "Eva", "Dino", "Alba", "Tiago")  # fmt: skip
CITIES = ("Porto", "Braga", "Faro", "Evora", "Coimbra", "Aveiro", "Viseu", "Leiria", "Tomar",
          "Sintra", "Lagos", "Beja", "Guarda", "Elvas", "Nazare", "Obidos", "Chaves", "Tavira",
          "Viana", "Mafra")  # fmt: skip


@pytest.fixture(scope="module")
def chat(store):
    """Twenty sessions alike: a friend asked where they moved with the kids and the dog
    (every query word), then the friend's answer (none of them)."""
    ns = store.namespace(f"answers-{uuid.uuid4().hex[:8]}")
    answered = {}
    at = START
    for i, (friend, city) in enumerate(zip(FRIENDS, CITIES, strict=True)):
        session = f"call-{i}"
        question = f"So where did you move with the kids and the dog in the end, {friend}?"
        node = ns.timeline.ingest_turn("Caroline", question, session, at=at)
        reply = f"We settled in {city}, right next to the {('park', 'sea', 'hills')[i % 3]}."
        answered[node.id] = ns.timeline.ingest_turn(
            friend, reply, session, at=at + timedelta(seconds=30)
        )
        at += timedelta(days=1)
    return ns, answered


def _held(pack):
    return {item.id: (section.name, item) for section in pack.sections for item in section.items}


def test_the_reply_beside_the_best_recalled_turn_is_in_the_packet(chat):
    ns, answered = chat
    # The timeline alone (no graph section, whose activation could also reach it),
    # with room for the twenty questions and a few more turns: the answers, which
    # share no word with the query, rank below all twenty, past the packet's recall
    # (20 hits for this budget).
    pack = ns.recall_context(QUERY, 1000, allocation={"timeline": 1.0})
    held = _held(pack)
    best = next(item for item in pack.items() if item.reason == "recall rank 1")
    answer = answered[best.id]
    assert answer.id in held, [i.reason for i in pack.items()]
    section, item = held[answer.id]
    assert section == "timeline"
    assert item.reason.startswith(f"adjacent to #{best.id} (recall rank 1)")
    # Provenance as every item: its id, type, time, speaker; its content quoted as data.
    assert (item.node_type, item.actor, item.observed_at) == (
        "Turn", answer.actor, answer.observed_at,
    )  # fmt: skip
    assert f'"{answer.content}"' in pack.render()
    assert pack.tokens_used <= 1000
    # The hits come first, then the answers beside the best of them, then recent turns.
    reasons = [i.reason for i in pack.items()]
    first_adjacent = next(i for i, r in enumerate(reasons) if r.startswith("adjacent"))
    assert all(r.startswith("recall rank") for r in reasons[:first_adjacent])
    assert first_adjacent >= 1


def test_the_default_packet_holds_the_question_and_its_answer(chat):
    ns, answered = chat
    for budget in (1000, 2000):
        pack = ns.recall_context(QUERY, budget)
        held = _held(pack)
        best = next(item for item in pack.items() if item.reason == "recall rank 1")
        assert {best.id, answered[best.id].id} <= set(held), budget
        assert pack.tokens_used <= budget
        assert len(held) == len(pack.items())  # a memory appears once


def test_a_neighbour_above_the_ceiling_or_forgotten_stays_out(store):
    ns = store.namespace(f"answers-private-{uuid.uuid4().hex[:8]}")
    at = START
    question = ns.timeline.ingest_turn("Caroline", QUERY, "home", at=at)
    # A secret reply, linked as the timeline links turns, and a public one forgotten.
    secret = ns.remember(
        "Ana: our new address is 12 Rua das Flores",
        node_type="Turn",
        kind="episodic",
        tier="timeline",
        scope="home",
        actor="Ana",
        privacy=3,
        observed_at=at + timedelta(seconds=30),
    )
    ns.link(secret.id, question.id, relation="next", weight=0.8)
    gone = ns.remember(
        "Ana: we stayed at the old flat first",
        node_type="Turn",
        kind="episodic",
        tier="timeline",
        scope="home",
        actor="Ana",
        observed_at=at + timedelta(seconds=60),
    )
    ns.link(gone.id, question.id, relation="next", weight=0.8)
    ns.forget(gone.id, reason="wrong")
    public = ns.remember(
        "Ana: we love the new garden",
        node_type="Turn",
        kind="episodic",
        tier="timeline",
        scope="home",
        actor="Ana",
        observed_at=at + timedelta(seconds=90),
    )
    ns.link(public.id, question.id, relation="next", weight=0.8)

    def held(ceiling: int) -> dict[int, str]:
        pack = ns.recall_context(QUERY, 450, allocation={"timeline": 1.0}, privacy_ceiling=ceiling)
        assert "Rua das Flores" not in pack.render() or ceiling == 3
        return {item.id: item.reason for item in pack.items()}

    assert held(3).keys() >= {question.id, secret.id, public.id}
    for ceiling in (0, 2):
        below = held(ceiling)
        assert below.keys() >= {question.id, public.id}
        assert secret.id not in below
    assert gone.id not in held(3)


def _entry(node_id: int, *, tier: str = "timeline") -> Entry:
    return Entry(node_id, "episodic", "Turn", tier, None, f"turn {node_id}", None, "user",
                 START, START)  # fmt: skip


def _row(node_id: int, scope: str, *, tier: str = "timeline") -> dict[str, Any]:
    return {**_entry(node_id, tier=tier)._asdict(), "scope": scope}


def test_with_adjacent_orders_and_filters_the_neighbours():
    hits = [(_entry(i), 1.0 / i, f"recall rank {i}") for i in (1, 2, 3)]
    recent = [(_entry(9), 0.0, "recent turn")]
    relevance = {1: (1.0, 1), 2: (0.5, 2), 3: (0.33, 3)}
    rows = [
        _row(1, "a"), _row(2, "b"), _row(3, "a"),
        _row(10, "a"), _row(11, "a"), _row(12, "z"), _row(13, "a", tier="lessons"),
    ]  # fmt: skip
    edges = [(1, 10, 0.8), (11, 1, 0.8), (1, 12, 0.8), (1, 13, 0.8), (2, 1, 0.8), (3, 77, 0.8)]
    out = with_adjacent(hits + recent, rows, edges, relevance)
    assert [e.id for e, _, _ in out] == [1, 2, 3, 10, 11, 9]
    assert out[3][2] == "adjacent to #1 (recall rank 1)"
    assert out[3][1] == pytest.approx(0.8)
    # Only the best ADJACENT_SEEDS hits are expanded.
    original = packet.ADJACENT_SEEDS
    packet.ADJACENT_SEEDS = 0
    try:
        assert with_adjacent(hits + recent, rows, edges, relevance) == hits + recent
    finally:
        packet.ADJACENT_SEEDS = original
