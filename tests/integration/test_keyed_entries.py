"""ns.keyed(tier): one current memory per key; a new value revises, forget tombstones."""

from __future__ import annotations

import threading

import pytest

from memstore.errors import InvalidInputError
from memstore.graph.keyed import DataCondition
from memstore.models import NodeStatus
from tests.conftest import row_counts


def test_put_revises_and_keeps_every_version(ns):
    notes = ns.keyed("notes")
    first = notes.put("color", "Alice likes red", data={"color": "red"})
    assert (first.label, first.tier, first.data) == ("color", "notes", {"color": "red"})
    # The same content and data again: nothing new.
    assert notes.put("color", "Alice likes red", data={"color": "red"}).id == first.id
    second = notes.put("color", "Alice likes blue", data={"color": "blue"})
    assert second.id != first.id
    assert ns.get(first.id).status is NodeStatus.SUPERSEDED
    assert second.observed_at == first.observed_at  # carried: when the key was first put
    # Back to an earlier value: a third version, not the first one revived.
    third = notes.put("color", "Alice likes red", data={"color": "red"})
    assert third.id not in (first.id, second.id)
    assert [n.id for n in notes.history("color")] == [first.id, second.id, third.id]
    assert notes.get(["color", "missing"]) == {"color": third}


def test_data_alone_may_change(ns):
    notes = ns.keyed("notes")
    one = notes.put("n", "the count", data={"n": 1})
    two = notes.put("n", "the count", data={"n": 2})
    assert two.id != one.id and notes.get(["n"])["n"].data == {"n": 2}


def test_forget_tombstones_and_a_new_put_starts_again(ns):
    notes = ns.keyed("notes")
    assert notes.forget("nothing") is None
    first = notes.put("k", "some words", data={"a": 1})
    assert notes.forget("k") is not None
    assert notes.get(["k"]) == {}
    assert ns.get(first.id).status is NodeStatus.TOMBSTONED
    again = notes.put("k", "some words", data={"a": 1})  # identical content: a new memory
    assert again.id != first.id and again.status is NodeStatus.CURRENT
    assert [n.status for n in notes.history("k")] == [NodeStatus.TOMBSTONED, NodeStatus.CURRENT]


def test_two_keys_with_one_value_are_two_memories(ns):
    notes = ns.keyed("notes")
    a = notes.put("a", "same words", data={"v": 1})
    b = notes.put("b", "same words", data={"v": 1})
    assert a.id != b.id and set(notes.get(["a", "b"])) == {"a", "b"}


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        ("eq", 9, ["b"]),
        ("ne", 9, ["a", "c", "d", "s", "x"]),  # also the ones without the field
        ("gt", 9, ["c", "d"]),  # numbers compare as numbers: not "9" > "10"
        ("gte", 10, ["c", "d"]),
        ("lt", 10, ["a", "b"]),
        ("lte", 9.5, ["a", "b"]),
        ("gt", "apple", ["s"]),  # text compares as text; numbers never match it
    ],
)
def test_conditions_on_data(ns, op, value, expected):
    notes = ns.keyed("scores")
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11), ("s", "banana")]:
        notes.put(key, f"score {key}", data={"score": score})
    notes.put("x", "no score", data={"other": 1})
    found = notes.all(where=[DataCondition(path=("score",), op=op, value=value)], limit=100)
    assert sorted(n.label for n in found) == expected


def test_nested_conditions_order_and_paging(ns):
    notes = ns.keyed("docs")
    for i in range(5):
        notes.put(f"d{i}", f"document {i}", data={"meta": {"year": 2020 + i}, "tags": ["x"]})
    listed = notes.all(limit=10)
    assert [n.label for n in listed] == ["d4", "d3", "d2", "d1", "d0"]  # latest written first
    assert [n.label for n in notes.all(limit=2, offset=1)] == ["d3", "d2"]
    recent = notes.all(where=[{"path": ("meta", "year"), "op": "gte", "value": 2023}])
    assert [n.label for n in recent] == ["d4", "d3"]
    assert len(notes.all(where=[{"path": ("tags",), "value": ["x"]}])) == 5  # JSON equality
    assert notes.all(where=[{"path": ("tags",), "value": "x"}]) == []
    ids = [listed[0].id, listed[4].id]
    assert [n.label for n in notes.all(ids=ids)] == ["d4", "d0"]


def test_bad_input_is_refused_and_writes_nothing(ns, database_url):
    before = row_counts(database_url)
    for tier in ("scratchpad", "short_term", "policy", "", "x" * 300):
        with pytest.raises(InvalidInputError):
            ns.keyed(tier)
    notes = ns.keyed("notes")
    for kwargs in (
        {"key": "", "content": "x", "data": {}},
        {"key": "k", "content": "", "data": {}},
        {"key": "k", "content": "x", "data": {"bad": float("nan")}},
        {"key": "k", "content": "x", "data": ["not", "a", "mapping"]},
    ):
        with pytest.raises(InvalidInputError):
            notes.put(**kwargs)
    with pytest.raises(InvalidInputError):
        notes.all(where=[{"path": ("a",), "op": "like", "value": 1}])
    with pytest.raises(InvalidInputError):
        notes.get("not-a-list")
    assert row_counts(database_url) == before


def test_concurrent_puts_of_one_key_leave_one_current_version(ns):
    notes = ns.keyed("notes")
    notes.put("hot", "value 0", data={"v": 0})
    errors: list[BaseException] = []

    def put(i: int) -> None:
        try:
            notes.put("hot", f"value {i}", data={"v": i})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(i,)) for i in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    history = notes.history("hot")
    assert len(history) == 9
    assert [n.status for n in history].count(NodeStatus.CURRENT) == 1
    assert notes.get(["hot"])["hot"].id == history[-1].id


def test_put_many_is_one_transaction_in_order(ns, database_url):
    notes = ns.keyed("notes")
    written = notes.put_many(
        [
            {"key": "a", "content": "first a", "data": {"v": 1}},
            {"key": "b", "content": "first b", "data": {"v": 1}},
            {"key": "a", "content": "second a", "data": {"v": 2}},  # revises the one above
        ]
    )
    assert [n.label for n in written] == ["a", "b", "a"]
    assert [n.content for n in notes.history("a")] == ["first a", "second a"]
    assert notes.get(["a"])["a"].id == written[2].id
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError, match=r"entries\[1\]"):
        notes.put_many(
            [
                {"key": "c", "content": "fine", "data": {}},
                {"key": "d", "content": "bad", "data": {"x": float("inf")}},
            ]
        )
    assert row_counts(database_url) == before  # all or nothing
    assert notes.put_many([]) == []


def test_overlapping_batches_do_not_deadlock(ns):
    notes = ns.keyed("notes")
    errors: list[BaseException] = []

    def writer(keys: list[str], w: int) -> None:
        try:
            for i in range(4):
                notes.put_many(
                    [{"key": k, "content": f"{k} by {w} #{i}", "data": {}} for k in keys]
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(["x", "y", "z"], 1)),
        threading.Thread(target=writer, args=(["z", "y", "x"], 2)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for key in "xyz":
        history = notes.history(key)
        assert len(history) == 8
        assert [n.status for n in history].count(NodeStatus.CURRENT) == 1
