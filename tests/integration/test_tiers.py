"""Timeline, scratchpad and consolidation: tiers as profiles over the one graph."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memstore.errors import EntryNotFoundError, InvalidInputError
from tests.conftest import row_counts

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_turns_chain_within_their_session_and_search_finds_them(ns):
    turns = [
        ns.timeline.ingest_turn("user", "I moved to Lisbon", "s1", at=START),
        ns.timeline.ingest_turn("agent", "Welcome to Lisbon!", "s1", at=START + timedelta(1)),
        ns.timeline.ingest_turn("user", "ok", "s2", at=START + timedelta(2)),
        ns.timeline.ingest_turn("user", "ok", "s1", at=START + timedelta(3)),
    ]
    assert turns[0].content == "user: I moved to Lisbon" and turns[0].tier == "timeline"
    assert turns[3].id != turns[2].id  # the same words in another turn are another memory
    # Ingesting a transcript again adds nothing.
    assert ns.timeline.ingest_turn("user", "ok", "s1", at=START + timedelta(3)).id == turns[3].id
    assert ns.timeline.entry_count() == 4
    assert [t.id for t in ns.timeline.recent(2, session_id="s1")] == [turns[3].id, turns[1].id]
    assert [t.id for t in ns.timeline.recent(10)] == [t.id for t in reversed(turns)]
    # next edges: s1 is a chain of three, s2 stands alone.
    chain = ns.activate(seeds=[turns[0].id], depth=3)
    assert {r.id for r in chain.background} == {turns[0].id, turns[1].id, turns[3].id}
    assert all(r.via_relation in (None, "next") for r in chain.background)
    assert ns.timeline.search("Lisbon", limit=5)[0].node.id in {turns[0].id, turns[1].id}


def test_bad_turns_are_refused(ns, database_url):
    before = row_counts(database_url)
    for kwargs in (
        {"role": "", "content": "x", "session_id": "s"},
        {"role": "user", "content": "  ", "session_id": "s"},
        {"role": "user", "content": "x", "session_id": ""},
        {"role": "user", "content": "x", "session_id": "s", "at": datetime(2026, 1, 1)},
    ):
        with pytest.raises(InvalidInputError):
            ns.timeline.ingest_turn(**kwargs)
    with pytest.raises(InvalidInputError):
        ns.timeline.recent(0)
    assert row_counts(database_url) == before


def test_pins_upsert_by_key_and_keep_their_history(ns):
    first = ns.scratchpad.pin("city", "Lisbon")
    assert ns.scratchpad.pin("city", "Lisbon").id == first.id  # same value: same pin
    second = ns.scratchpad.pin("city", "Porto")
    back = ns.scratchpad.pin("city", "Lisbon")  # an earlier value again is a new version
    ns.scratchpad.pin("diet", "no peanuts")
    assert ns.scratchpad.get("city").id == back.id
    assert [n.data["value"] for n in ns.scratchpad.history("city")] == ["Lisbon", "Porto", "Lisbon"]
    assert ns.get(first.id).status == "superseded" and ns.get(second.id).status == "superseded"
    assert [p.label for p in ns.scratchpad.all()] == ["city", "diet"]
    assert ns.scratchpad.count() == 2
    ns.scratchpad.unpin("diet")
    assert ns.scratchpad.get("diet") is None and ns.scratchpad.count() == 1
    with pytest.raises(EntryNotFoundError):
        ns.scratchpad.unpin("diet")
    assert ns.scratchpad.pin("diet", "vegan").status == "current"  # pinned again after unpin


def test_two_concurrent_pins_of_one_key_leave_exactly_one_current_value(ns, database_url):
    ns.scratchpad.pin("mood", "calm")
    barrier = threading.Barrier(4)
    errors = []

    def pin(value):
        try:
            barrier.wait()
            ns.scratchpad.pin("mood", value)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=pin, args=(f"value {i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert ns.scratchpad.count() == 1
    assert len(ns.scratchpad.history("mood")) == 5  # calm + four values, one lineage


def test_consolidation_events_add_up(ns):
    assert ns.consolidation.total() == 0 and ns.consolidation.history() == []
    a = ns.consolidation.record(40, "Maya moved to Lisbon and started a new job", 12000)
    b = ns.consolidation.record(25, "Maya moved to Lisbon and started a new job", 9000)
    assert a.id != b.id
    assert ns.consolidation.total() == 65
    assert [e.id for e in ns.consolidation.history()] == [b.id, a.id]
    with pytest.raises(InvalidInputError):
        ns.consolidation.record(-1, "x", 10)


def test_tier_entries_are_ordinary_nodes_under_the_append_only_law(ns, database_url):
    pin = ns.scratchpad.pin("city", "Lisbon")
    with psycopg.connect(database_url) as conn, pytest.raises(psycopg.Error, match="append-only"):
        conn.execute("DELETE FROM memstore.nodes WHERE id = %s", (pin.id,))


def test_status_summary_counts_each_tier_and_status(ns):
    ns.scratchpad.pin("city", "Lisbon")
    ns.scratchpad.pin("city", "Porto")
    turn = ns.timeline.ingest_turn("user", "hello", "s1", at=START)
    gone = ns.remember("a passing thought")
    ns.forget(gone.id, reason="noise")
    summary = ns.summary()
    assert summary.by_status == {"current": 2, "superseded": 1, "tombstoned": 1, "redacted": 0}
    assert summary.by_tier["scratchpad"]["current"] == 1
    assert summary.by_tier["scratchpad"]["superseded"] == 1
    assert summary.by_tier["timeline"]["current"] == 1
    assert summary.embeddings.fresh == 4 and summary.last_activity is not None
    text = ns.status_summary()
    assert "scratchpad: 1 current, 1 superseded" in text and "4 fresh" in text
    assert turn.id


def test_clear_retires_everything_and_deletes_nothing(ns, database_url):
    ns.scratchpad.pin("city", "Lisbon")
    ns.scratchpad.pin("city", "Porto")
    ns.timeline.ingest_turn("user", "hello", "s1", at=START)
    ns.remember("a fact")
    before = row_counts(database_url)
    assert ns.clear(reason="user asked to start over") == 3
    after = row_counts(database_url)
    assert after["tombstones"] == before["tombstones"] + 3
    assert {k: v for k, v in after.items() if k != "tombstones"} == {
        k: v for k, v in before.items() if k != "tombstones"
    }
    assert ns.summary().by_status["current"] == 0
    assert ns.clear(reason="again") == 0
    with pytest.raises(InvalidInputError):
        ns.clear(reason=" ")
