"""Tags on memories (issue 21 item 2): validated, stored at insert, filtered inside the SQL."""

from __future__ import annotations

import itertools
from pathlib import Path

import psycopg
import pytest

from memstore import InvalidInputError
from memstore.models import MAX_TAGS, TAG_MAX_LENGTH, NodeStatus
from tests.conftest import row_counts

BAD_TAGS = [
    pytest.param([""], id="empty"),
    pytest.param(["   "], id="blank"),
    pytest.param(["x" * (TAG_MAX_LENGTH + 1)], id="too-long"),
    pytest.param(["bell\x07"], id="control"),
    pytest.param(["zero\u200bwidth"], id="format"),
    pytest.param(["nul\x00"], id="nul"),
    pytest.param([f"t{i}" for i in range(MAX_TAGS + 1)], id="too-many"),
    pytest.param("urgent", id="bare-string"),
    pytest.param([42], id="not-text"),
]


def test_tags_are_normalised_and_deduplicated(ns):
    node = ns.remember("the launch moved to May", tags=["  Project  X ", "project x", "URGENT"])
    assert node.tags == ["project x", "urgent"]
    assert ns.get(node.id).tags == ["project x", "urgent"]
    assert ns.remember("no tags here").tags == []
    assert ns.remember("within bounds", tags=["x" * TAG_MAX_LENGTH]).tags == ["x" * 64]


@pytest.mark.parametrize("tags", BAD_TAGS)
def test_a_bad_tag_names_the_field_and_writes_nothing(ns, database_url, tags):
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError) as raised:
        ns.remember("a memory with a bad tag", tags=tags)
    assert raised.value.field == "tags"
    with pytest.raises(InvalidInputError) as raised:
        ns.remember_many([{"content": "fine", "tags": ["ok"]}, {"content": "bad", "tags": tags}])
    assert "tags" in str(raised.value)
    assert row_counts(database_url) == before
    assert not ns.exists()


@pytest.mark.parametrize("tags", BAD_TAGS[:7])
def test_a_bad_tag_filter_is_refused(ns, tags):
    ns.remember("something to find")
    with pytest.raises(InvalidInputError) as raised:
        ns.recall("something", tags=tags)
    assert raised.value.field == "tags"
    with pytest.raises(InvalidInputError):
        ns.list_memories(tags=tags)
    with pytest.raises(InvalidInputError):
        ns.activate("something", tags=tags)
    with pytest.raises(InvalidInputError):
        ns.recall_context("something", tags=tags)


def test_remember_many_stores_tags_on_both_paths(ns):
    ids = ns.remember_many(
        [
            {"content": "first bulk memory", "tags": ["Bulk", "one"]},
            "second bulk memory",
            {"content": "third bulk memory", "tags": ["bulk"]},
        ]
    )
    assert [ns.get(i).tags for i in ids] == [["bulk", "one"], [], ["bulk"]]
    # Again: the staging path (keys already stored) finds the same nodes.
    again = ns.remember_many([{"content": "first bulk memory", "tags": ["other"]}, "fourth"])
    assert again[0] == ids[0]
    assert ns.get(ids[0]).tags == ["bulk", "one"]  # set at insert: the stored node is returned


def test_revise_carries_tags_unless_given(ns):
    first = ns.remember("Alice lives in Lisbon", tags=["alice", "home"])
    carried = ns.revise(first.id, "Alice lives in Porto", reason="moved")
    assert carried.tags == ["alice", "home"]
    retagged = ns.revise(carried.id, "Alice lives in Braga", reason="moved", tags=["Alice"])
    assert retagged.tags == ["alice"]
    # Run again (a script re-run): the memory already says it, nothing is written.
    assert ns.revise(carried.id, "Alice lives in Braga", reason="moved", tags=["ALICE"]) == retagged
    dropped = ns.revise(retagged.id, "Alice lives in Faro", reason="moved", tags=[])
    assert dropped.tags == []
    assert [v.tags for v in ns.lineage(dropped.id)] == [
        ["alice", "home"],
        ["alice", "home"],
        ["alice"],
        [],
    ]
    with pytest.raises(InvalidInputError) as raised:
        ns.revise(dropped.id, "Alice lives in Evora", reason="moved", tags=["bad\x07"])
    assert raised.value.field == "tags"
    assert ns.get(dropped.id).status is NodeStatus.CURRENT


def test_scratchpad_revisions_keep_tags(ns):
    pinned = ns.scratchpad.pin("city", "Lisbon")
    assert pinned.tags == []
    with ns.transaction() as tx:
        tagged = tx.revise(pinned.id, "Porto", reason="moved", tags=["where"])
    assert ns.scratchpad.pin("city", "Braga").tags == tagged.tags == ["where"]


@pytest.fixture
def crowd(ns):
    """60 similar memories; the 15 tagged 'alpha' are not the closest to the query."""
    items = []
    for i in range(60):
        tagged = i % 4 == 3
        words = "launch plan review" if not tagged else "launch plan notes"
        items.append(
            {
                "content": f"{words} number {i} for the rocket team",
                "tags": ["alpha", f"n{i}"] if tagged else ["beta"],
            }
        )
    ns.remember_many(items)
    return ns


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "lexical"])
def test_recall_returns_k_tagged_hits_when_enough_exist(crowd, mode):
    hits = crowd.recall("launch plan review rocket team", k=10, mode=mode, tags=["ALPHA"])
    assert len(hits) == 10
    assert all("alpha" in hit.node.tags for hit in hits)
    # Every tag must be carried.
    both = crowd.recall("launch plan", k=10, mode=mode, tags=["alpha", "n3"])
    assert [hit.node.tags for hit in both] == [["alpha", "n3"]]
    assert crowd.recall("launch plan", mode=mode, tags=["nobody"]) == []
    # No filter (None or []) is every memory.
    assert len(crowd.recall("launch plan", k=20, mode=mode, tags=[])) == 20


def test_activate_seeds_and_working_memory_carry_the_tags(crowd):
    ids = [p.id for p in crowd.list_memories(limit=200).items]
    for a, b in itertools.pairwise(ids):
        crowd.link(a, b, weight=0.9)
    result = crowd.activate("launch plan review rocket team", limit=8, tags=["alpha"])
    assert len(result.working_memory) == 8
    assert all("alpha" in item.node.tags for item in result.working_memory)
    untagged = crowd.activate("launch plan review rocket team", limit=8)
    assert any("alpha" not in item.node.tags for item in untagged.working_memory)


def test_recall_context_holds_only_tagged_memories(crowd):
    crowd.scratchpad.pin("owner", "the rocket team lead is Maya")
    with crowd.transaction() as tx:
        tx.remember("the launch plan is pinned", tier="scratchpad", label="plan", tags=["alpha"])
    packet = crowd.recall_context("launch plan rocket team", tags=["alpha"])
    items = [item for section in packet.sections for item in section.items]
    assert items
    assert all("alpha" in crowd.get(item.id).tags for item in items)
    plain = crowd.recall_context("launch plan rocket team")
    assert any("alpha" not in crowd.get(item.id).tags for s in plain.sections for item in s.items)


def test_list_memories_pages_through_tagged_memories(crowd):
    page = crowd.list_memories(limit=10, tags=["alpha"])
    assert len(page.items) == 10 and page.next_cursor is not None
    rest = crowd.list_memories(after=page.next_cursor, limit=10, tags=["alpha"])
    assert len(rest.items) == 5 and rest.next_cursor is None
    assert all("alpha" in n.tags for n in page.items + rest.items)


def test_tags_are_append_only(ns, database_url):
    node = ns.remember("immutable tags", tags=["kept"])
    with psycopg.connect(database_url, autocommit=True) as owner:
        with pytest.raises(psycopg.Error) as raised:
            owner.execute(
                "UPDATE memstore.nodes SET tags = '{changed}' WHERE namespace_id = %s AND id = %s",
                (ns.id, node.id),
            )
    assert raised.value.sqlstate == "MS001"
    assert ns.get(node.id).tags == ["kept"]


def test_the_database_bounds_tags_whoever_writes(ns, database_url):
    ns.remember("make the namespace")
    with psycopg.connect(database_url, autocommit=True) as owner:
        with pytest.raises(psycopg.errors.CheckViolation):
            owner.execute(
                "INSERT INTO memstore.nodes (namespace_id, kind, content, tags)"
                " VALUES (%s, 'episodic', 'x', %s)",
                (ns.id, [f"t{i}" for i in range(MAX_TAGS + 1)]),
            )


def test_views_show_tags_and_erasure_blanks_them(ns, database_url):
    kept = ns.remember("Bob likes chess", tags=["bob", "games"])
    ns.remember("Bob likes go", tags=["bob"])
    gone = ns.remember("Bob's address is 1 Main St", tags=["bob", "address"])
    ns.redact(gone.id, reason="erasure request", actor="dpo")
    assert ns.get(gone.id).tags == []
    with psycopg.connect(database_url) as owner:
        shown = owner.execute(
            "SELECT tags FROM memstore.v_current_nodes WHERE namespace_id = %s AND id = %s",
            (ns.id, kept.id),
        ).fetchone()
        counts: dict[str, int] = dict(
            owner.execute(
                "SELECT tag, current_nodes FROM memstore.v_tag_counts WHERE namespace_id = %s",
                (ns.id,),
            ).fetchall()
        )
    assert shown == (["bob", "games"],)
    assert counts == {"bob": 2, "games": 1}


def test_the_example_in_docs_recall_runs(ns):
    text = (Path(__file__).resolve().parents[2] / "docs" / "recall.md").read_text()
    section = text[text.index("## Tags") :]
    block = section[section.index("```python\n") + 10 : section.index("```\n", 10)]
    exec(compile(block, "docs/recall.md", "exec"), {"ns": ns})  # a fresh namespace


def test_tier_writes_take_tags(ns):
    turn = ns.timeline.ingest_turn("user", "book the flight", "s1", tags=["Travel"])
    assert turn.tags == ["travel"]
    lesson = ns.lessons.add("Check the visa first", source="trip", confidence=0.9, tags=["travel"])
    assert lesson.tags == ["travel"]
    assert (
        ns.lessons.add_if_new(
            "Always check the visa first", source="trip", confidence=0.9, tags=["other"]
        ).id
        == lesson.id
    )  # the near-duplicate is returned as it is
    pin = ns.scratchpad.pin("gate", "B12", tags=["travel"])
    assert pin.tags == ["travel"]
    assert ns.scratchpad.pin("gate", "B12").id == pin.id  # nothing new: same value, tags kept
    moved = ns.scratchpad.pin("gate", "C3")
    assert moved.tags == ["travel"]  # a new value keeps the pin's tags
    retagged = ns.scratchpad.pin("gate", "C3", tags=["airport"])
    assert retagged.tags == ["airport"] and retagged.id != moved.id
    assert [n.tags for n in ns.scratchpad.history("gate")] == [["travel"], ["travel"], ["airport"]]
    with pytest.raises(InvalidInputError) as raised:
        ns.scratchpad.pin("gate", "D4", tags=["bad\x07"])
    assert raised.value.field == "tags"
    assert ns.scratchpad.get("gate") == retagged
    found = ns.recall("travel plans", tags=["travel"], k=10)
    assert {hit.node.id for hit in found} == {turn.id, lesson.id}  # pins superseded
