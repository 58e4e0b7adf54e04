"""Timeline.ingest_turns: the graph of one ingest_turn call per turn, in bulk."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from memstore.errors import ContentTooLargeError, InvalidInputError
from memstore.namespace import Namespace
from memstore.tiers.timeline import TurnInput
from tests.conftest import row_counts

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return START + timedelta(minutes=minutes)


def graph(url: str, ns: Namespace) -> dict[str, Any]:
    """The namespace's turns and edges, compared by what they hold, not by their ids:
    a turn is (session, time, content, actor, data, status, has a vector), an edge
    joins two such turns."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT n.id, n.scope, n.observed_at, n.content, n.actor, n.data::text,"
            " n.kind, n.node_type, n.tier,"
            " EXISTS (SELECT FROM memstore.tombstones t"
            "         WHERE t.namespace_id = n.namespace_id AND t.node_id = n.id),"
            " (SELECT count(*) FROM memstore.embeddings e"
            "  WHERE e.namespace_id = n.namespace_id AND e.node_id = n.id)"
            " FROM memstore.nodes n WHERE n.namespace_id = %s",
            (ns.id,),
        ).fetchall()
        turn = {row[0]: row[1:4] for row in rows}
        edges = conn.execute(
            "SELECT src, dst, relation, weight, inhibitory, confidence, layer, source, actor,"
            " run_id FROM memstore.edges WHERE namespace_id = %s",
            (ns.id,),
        ).fetchall()
    nodes = sorted((row[1:] for row in rows), key=repr)
    links = sorted(((turn[e[0]], turn[e[1]], *e[2:]) for e in edges), key=repr)
    assert len(set(map(repr, links))) == len(links), "an edge was written twice"
    return {"nodes": nodes, "edges": links}


# Two sessions read interleaved; a late turn that belongs between two stored ones;
# a turn earlier than everything stored; a turn read twice; three turns of one
# time (ties are broken by reading order); a turn after a forgotten one.
STORED = [
    ("user", "hello", "s1", at(0)),
    ("agent", "hi, how can I help?", "s1", at(10)),
    ("user", "later question", "s1", at(20)),
    ("user", "to be forgotten", "s2", at(5)),
]
TRANSCRIPT = [
    ("user", "I moved to Lisbon", "s1", at(12)),  # between stored 10 and 20
    ("user", "new in s2", "s2", at(6)),  # after the forgotten turn
    ("agent", "Welcome to Lisbon!", "s1", at(13)),
    ("user", "before everything", "s1", at(-5)),
    ("user", "same time one", "s3", at(1)),
    ("agent", "same time two", "s3", at(1)),
    ("user", "hello", "s1", at(0)),  # stored already
    ("agent", "s2 reply", "s2", at(7)),
    ("user", "same time three", "s3", at(1)),
    ("user", "I moved to Lisbon", "s1", at(12)),  # read twice
    ("user", "earlier in s3", "s3", at(0.5)),
    ("agent", "last word", "s1", at(30)),
    ("user", "ok", "s2", at(6.5)),
    ("user", "ok", "s1", at(6.5)),  # the same words in another session
]


def fill_stored(ns: Namespace) -> None:
    nodes = [ns.timeline.ingest_turn(r, c, s, at=t) for r, c, s, t in STORED]
    ns.forget(nodes[3].id, reason="test")


@pytest.mark.parametrize("batch_size", [1, 4, 1000])
def test_the_same_graph_as_one_ingest_turn_per_turn(store, database_url, batch_size):
    one_by_one = store.namespace(f"one-{uuid.uuid4().hex[:8]}")
    bulk = store.namespace(f"bulk-{uuid.uuid4().hex[:8]}")
    fill_stored(one_by_one)
    fill_stored(bulk)
    before = {t.id for t in one_by_one.timeline.recent(100)}
    nodes = [one_by_one.timeline.ingest_turn(r, c, s, at=t) for r, c, s, t in TRANSCRIPT]
    created = len({n.id for n in nodes} - before)
    report = bulk.timeline.ingest_turns(
        ({"role": r, "content": c, "session_id": s, "at": t} for r, c, s, t in TRANSCRIPT),
        batch_size=batch_size,
    )
    expected = graph(database_url, one_by_one)
    assert graph(database_url, bulk) == expected
    assert (report.turns, report.created, report.existing, report.sessions) == (
        len(TRANSCRIPT),
        created,
        len(TRANSCRIPT) - created,
        3,
    )
    # 12 new turns. Nothing before "before everything" (s1), "same time one" (the
    # first of s3 read), "earlier in s3", nor "new in s2" (its predecessor is forgotten).
    assert created == 12 and report.linked == 8
    assert len(expected["edges"]) == 8 + 2  # and the two of the stored turns


def test_ties_follow_reading_order_across_batches_and_a_later_ingest_turn(store, database_url):
    one_by_one = store.namespace(f"one-{uuid.uuid4().hex[:8]}")
    bulk = store.namespace(f"bulk-{uuid.uuid4().hex[:8]}")
    # Contents chosen so that their key order differs from their reading order.
    turns = [("user", f"turn {word}", "s", at(0)) for word in "zebra apple mango kiwi".split()]
    for r, c, s, t in turns:
        one_by_one.timeline.ingest_turn(r, c, s, at=t)
    bulk.timeline.ingest_turns(
        [TurnInput(role=r, content=c, session_id=s, at=t) for r, c, s, t in turns],
        batch_size=2,
    )
    for ns in (one_by_one, bulk):
        ns.timeline.ingest_turn("agent", "after them all", "s", at=at(1))
    assert graph(database_url, bulk) == graph(database_url, one_by_one)


def test_ingesting_the_same_transcript_again_adds_nothing(ns, database_url):
    turns = [{"role": r, "content": c, "session_id": s, "at": t} for r, c, s, t in TRANSCRIPT]
    first = ns.timeline.ingest_turns(turns)
    before = row_counts(database_url)
    again = ns.timeline.ingest_turns(turns, batch_size=3)
    assert row_counts(database_url) == before
    assert (again.turns, again.created, again.existing, again.linked) == (len(turns), 0, 14, 0)
    assert first.created == 13 and first.existing == 1  # the turn read twice
    # And one turn at a time after the bulk: the same nodes.
    assert ns.timeline.ingest_turn(*TRANSCRIPT[0][:3], at=TRANSCRIPT[0][3]).id in {
        t.id for t in ns.timeline.recent(100)
    }
    assert row_counts(database_url) == before


def test_turns_without_a_time_keep_their_order(ns):
    report = ns.timeline.ingest_turns(
        {"role": "user" if i % 2 else "agent", "content": f"line {i}", "session_id": "s"}
        for i in range(7)
    )
    assert report.created == 7 and report.linked == 6
    newest_first = ns.timeline.recent(7, session_id="s")
    assert [t.content.split(": ")[1] for t in newest_first] == [
        f"line {i}" for i in range(6, -1, -1)
    ]
    times = [t.observed_at for t in newest_first]
    assert len(set(times)) == 7
    chain = ns.activate(seeds=[newest_first[-1].id], depth=6)
    assert {r.id for r in chain.background} == {t.id for t in newest_first}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"role": "", "content": "x", "session_id": "s"}, "turns[2500]"),
        ({"role": "user", "content": "  ", "session_id": "s"}, "turns[2500]: content is empty"),
        ({"role": "user", "content": "x", "session_id": ""}, "turns[2500]"),
        ({"role": "user", "content": "x", "session_id": "s", "at": datetime(2026, 1, 1)}, "at"),
        ({"role": "user", "content": "x", "session_id": "s", "extra": 1}, "extra"),
        ({"role": "user", "content": "x\x00y", "session_id": "s"}, "turns[2500]"),
        ("not a turn", "turns[2500] must be a TurnInput or a mapping"),
    ],
)
def test_a_bad_turn_anywhere_writes_nothing(store, database_url, bad, message):
    ns = store.namespace(f"bad-{uuid.uuid4().hex[:8]}")
    before = row_counts(database_url)

    def turns() -> Iterator[object]:
        for i in range(3000):
            yield bad if i == 2500 else {"role": "user", "content": f"t{i}", "session_id": "s"}

    with pytest.raises(InvalidInputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        ns.timeline.ingest_turns(turns(), batch_size=1000)
    assert row_counts(database_url) == before  # not even the namespace


def test_bad_arguments_are_refused(ns, database_url, store):
    before = row_counts(database_url)
    for turns, batch_size in (("hello", 10), ({"role": "user"}, 10), (5, 10), ([], 0), ([], True)):
        with pytest.raises(InvalidInputError):
            ns.timeline.ingest_turns(turns, batch_size=batch_size)
    big = {
        "role": "user",
        "content": "x" * (store.settings.max_content_bytes + 1),
        "session_id": "s",
    }
    with pytest.raises(ContentTooLargeError, match=r"turns\[1\]"):
        ns.timeline.ingest_turns([{"role": "user", "content": "ok", "session_id": "s"}, big])
    assert ns.timeline.ingest_turns([]).turns == 0
    assert row_counts(database_url) == before


def test_a_generator_of_2100_turns_is_read_a_batch_at_a_time(ns, database_url):
    # Five full batches and a partial one: the size is not the point (it was 5000 turns
    # in batches of 800, a third of a minute of CI for the same checks).
    read = 0

    def transcript() -> Iterator[dict[str, Any]]:
        nonlocal read
        for i in range(2100):
            read += 1
            yield {
                "role": "user" if i % 2 else "agent",
                "content": f"message number {i} about topic {i % 37}",
                "session_id": f"session-{i % 7}",
                "at": at(i),
            }

    seen: list[int] = []
    report = ns.timeline.ingest_turns(
        transcript(), batch_size=400, progress=lambda n: seen.append(read)
    )
    # Read a batch at a time: one written while the next one is embedded.
    assert seen[0] == 800 and seen[-1] == 2100
    assert (report.turns, report.created, report.linked, report.sessions) == (2100, 2100, 2093, 7)
    assert ns.timeline.entry_count() == 2100
    with psycopg.connect(database_url) as conn:
        # Each session is one chain: every turn but the first has one predecessor, the
        # one 7 minutes before it.
        bad = conn.execute(
            "SELECT count(*) FROM memstore.edges e"
            " JOIN memstore.nodes a ON a.namespace_id = e.namespace_id AND a.id = e.src"
            " JOIN memstore.nodes b ON b.namespace_id = e.namespace_id AND b.id = e.dst"
            " WHERE e.namespace_id = %s AND (a.scope <> b.scope"
            "  OR b.observed_at - a.observed_at <> interval '7 minutes' OR e.relation <> 'next')",
            (ns.id,),
        ).fetchone()
        vectors = conn.execute(
            "SELECT count(*) FROM memstore.embeddings WHERE namespace_id = %s", (ns.id,)
        ).fetchone()
    assert bad == (0,) and vectors == (2100,)
    assert ns.timeline.search("message number 1242", limit=3)[0].node.content.endswith(
        "message number 1242 about topic 21"
    )


def test_the_service_role_gets_the_same_graph(app_url, database_url, store):
    """memstore_app may not COPY into the tables: the staging path, under row-level
    security, writes the same nodes and edges."""
    name = f"app-{uuid.uuid4().hex[:8]}"
    one_by_one = store.namespace(f"one-{uuid.uuid4().hex[:8]}")
    fill_stored(one_by_one)
    for r, c, s, t in TRANSCRIPT:
        one_by_one.timeline.ingest_turn(r, c, s, at=t)
    with MemoryStore.open(app_url, embedder=HashingEmbedder()) as app:
        bulk = app.namespace(name)
        fill_stored(bulk)
        bulk.timeline.ingest_turns(
            [TurnInput(role=r, content=c, session_id=s, at=t) for r, c, s, t in TRANSCRIPT],
            batch_size=5,
        )
        assert graph(database_url, bulk) == graph(database_url, one_by_one)


def test_the_example_in_docs_tiers_runs(ns):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "tiers.md").read_text()
    section = doc[doc.index("### Transcripts in bulk") :]
    example = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)[0]
    exec(compile(example, "docs/tiers.md", "exec"), {"ns": ns})
    assert ns.timeline.entry_count() == 3


def test_a_turn_keeps_its_tags_in_bulk_as_one_by_one(ns):
    at = datetime(2026, 5, 1, 12, tzinfo=UTC)
    ns.timeline.ingest_turns(
        [
            {"role": "user", "content": "Book the dinner", "session_id": "s", "at": at,
             "tags": ["Planning", "dinner"]},
            {"role": "agent", "content": "Booked", "session_id": "s",
             "at": at + timedelta(minutes=1)},
        ]
    )  # fmt: skip
    ns.timeline.ingest_turn("user", "Thanks", "s", at=at + timedelta(minutes=2), tags=["dinner"])
    tagged = {hit.node.content: hit.node.tags for hit in ns.recall("dinner", tags=["dinner"], k=5)}
    assert tagged == {"user: Book the dinner": ["planning", "dinner"], "user: Thanks": ["dinner"]}
    with pytest.raises(InvalidInputError):
        ns.timeline.ingest_turns([{"role": "u", "content": "x", "session_id": "s", "tags": [""]}])
