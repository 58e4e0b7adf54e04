"""Namespaces are created by their first successful write, never by looking (issue 17 §8).

"Nothing left behind" is checked by the superuser reading memstore.namespaces
directly, whatever the service says.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from memstore.errors import InvalidInputError, NodeNotFoundError, ProcedureNotFoundError
from memstore.services.scope import NAME_MAX_BYTES


def stored(url: str, name: str) -> bool:
    """Whether memstore.namespaces holds ``name``, read by the superuser."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM memstore.namespaces WHERE name = %s", (name,))
        return bool(row.fetchone()[0])  # type: ignore[index]


def fresh() -> str:
    return f"unseen-{uuid.uuid4().hex[:10]}"


READS: dict[str, Callable[[Any], Any]] = {
    "recall": lambda ns: ns.recall("anything at all"),
    "recall lexical": lambda ns: ns.recall("anything", mode="lexical"),
    "activate": lambda ns: ns.activate("anything"),
    "recall_context": lambda ns: ns.recall_context("anything at all"),
    "summary": lambda ns: ns.summary(),
    "status_summary": lambda ns: ns.status_summary(),
    "embedding_status": lambda ns: ns.embedding_status(),
    "policy": lambda ns: ns.policy(),
    "exists": lambda ns: ns.exists(),
    "timeline.recent": lambda ns: ns.timeline.recent(),
    "timeline.entry_count": lambda ns: ns.timeline.entry_count(),
    "scratchpad.get": lambda ns: ns.scratchpad.get("key"),
    "scratchpad.all": lambda ns: ns.scratchpad.all(),
    "lessons.all": lambda ns: ns.lessons.all(),
    "lessons.find_duplicate": lambda ns: ns.lessons.find_duplicate("a rule"),
    "procedures.all": lambda ns: ns.procedures.all(),
    "consolidation.total": lambda ns: ns.consolidation.total(),
    "review.pending": lambda ns: ns.review.pending(),
    "decay_hebbian": lambda ns: ns.decay_hebbian(0.5),
    "rebuild_embeddings": lambda ns: ns.rebuild_embeddings(),
    "empty apply": lambda ns: ns.apply([], phase="wake"),
    "empty remember_many": lambda ns: ns.remember_many([]),
}

EMPTY = {
    "recall": [],
    "recall lexical": [],
    "exists": False,
    "timeline.recent": [],
    "timeline.entry_count": 0,
    "scratchpad.get": None,
    "scratchpad.all": [],
    "lessons.all": [],
    "lessons.find_duplicate": None,
    "procedures.all": [],
    "consolidation.total": 0,
    "review.pending": [],
    "decay_hebbian": 0,
    "rebuild_embeddings": 0,
    "empty remember_many": [],
}


@pytest.mark.parametrize("read", sorted(READS))
def test_a_read_of_an_unknown_name_answers_empty_and_creates_nothing(store, database_url, read):
    name = fresh()
    got = READS[read](store.namespace(name))
    if read in EMPTY:
        assert got == EMPTY[read]
    assert not stored(database_url, name)


@pytest.mark.parametrize(
    "read",
    [
        lambda ns: ns.get(1),
        lambda ns: ns.lineage(1),
        lambda ns: ns.activate(seeds=[1]),
        lambda ns: ns.lessons.get(1),
        lambda ns: ns.procedures.stats("missing"),
    ],
)
def test_a_lookup_in_an_unknown_namespace_is_not_found_and_creates_nothing(
    store, database_url, read
):
    name = fresh()
    with pytest.raises((NodeNotFoundError, ProcedureNotFoundError)):
        read(store.namespace(name))
    assert not stored(database_url, name)


@pytest.mark.parametrize(
    "write",
    [
        lambda ns: ns.remember(""),
        lambda ns: ns.remember("text", kind="nonsense"),
        lambda ns: ns.remember_many(["fine", {"content": "bad", "importance": 7}]),
        lambda ns: ns.link(1, 2),
        lambda ns: ns.revise(1, "new", reason="r"),
        lambda ns: ns.forget(1, reason="r"),
        lambda ns: ns.redact(1, reason="r"),
        lambda ns: ns.scratchpad.pin("", "value"),
        lambda ns: ns.scratchpad.unpin("missing"),
        lambda ns: ns.timeline.ingest_turn("", "hello", "s1"),
        lambda ns: ns.lessons.add("rule", source="s", confidence=2.0),
        lambda ns: ns.apply([{"op": "no_such_operation"}], phase="wake"),
    ],
)
def test_a_write_that_fails_creates_nothing(store, database_url, write):
    name = fresh()
    with pytest.raises(Exception) as caught:
        result = write(store.namespace(name))
        if getattr(result, "applied", True) is False:  # a rejected batch is a receipt
            raise AssertionError("rejected")
    assert not isinstance(caught.value, AttributeError | TypeError), caught.value
    assert not stored(database_url, name)


def test_a_failed_transaction_rolls_the_creation_back(store, database_url):
    name = fresh()
    ns = store.namespace(name)
    with pytest.raises(RuntimeError), ns.transaction() as tx:
        tx.remember("written, then rolled back")
        raise RuntimeError("the caller gives up")
    assert not stored(database_url, name)
    assert not ns.exists() and ns.id == 0
    assert ns.recall("written rolled back", mode="lexical") == []
    # The next write creates it for good.
    node = ns.remember("written for good")
    assert stored(database_url, name) and ns.exists() and ns.id > 0
    assert ns.get(node.id).content == "written for good"


def test_the_first_write_creates_it_and_every_handle_sees_it(store, database_url):
    name = fresh()
    early = store.namespace(name)  # kept by the store before anything exists
    assert early.recall("anything") == []
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as other:
        written = other.namespace(name).remember("written through another store")
    assert stored(database_url, name)
    # The kept handle looks again and finds what the other store wrote.
    assert store.namespace(name) is early
    assert early.get(written.id).content == "written through another store"
    assert [h.node.id for h in early.recall("another store", mode="lexical")] == [written.id]
    assert early.exists() and early.id == written_namespace_id(database_url, name)


def written_namespace_id(url: str, name: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT id FROM memstore.namespaces WHERE name = %s", (name,))
        return int(row.fetchone()[0])  # type: ignore[index]


def test_concurrent_first_writes_agree_on_one_namespace(store, database_url):
    name = fresh()
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as other:
        handles = [store.namespace(name), other.namespace(name)]
        barrier = threading.Barrier(len(handles) * 2)
        ids: list[int] = []
        errors: list[BaseException] = []

        def write(ns: Any, i: int) -> None:
            try:
                barrier.wait()
                ns.remember(f"first write number {i}")
                ids.append(ns.id)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(handles[i % 2], i)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert len(set(ids)) == 1 and ids[0] == written_namespace_id(database_url, name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "empty"),
        (" leading", "whitespace"),
        ("trailing ", "whitespace"),
        ("tab\t", "whitespace"),
        ("new\nline", "control"),
        ("bell\x07", "control"),
        ("esc\x1b[31m", "control"),
        ("zero\u200bwidth", "U\\+200B"),
        ("bidi\u202eflip", "U\\+202E"),
        ("bom\ufeff", "U\\+FEFF"),
        ("nul\x00", "NUL"),
        ("x" * (NAME_MAX_BYTES + 1), "at most 2048 bytes"),
        ("é" * (NAME_MAX_BYTES // 2 + 1), "at most 2048 bytes"),
        (7, "text"),
    ],
)
def test_bad_names_are_refused_with_a_clear_error(store, database_url, name, message):
    with pytest.raises(InvalidInputError, match=message) as caught:
        store.namespace(name)
    assert caught.value.field == "name"


@pytest.mark.parametrize("name", ["a", "x" * NAME_MAX_BYTES, "inner space", "🧠", "john_doe%"])
def test_good_names_round_trip(store, database_url, name):
    ns = store.namespace(name)
    ns.remember(f"a memory of {name[:20]}")
    assert stored(database_url, name)


def test_store_namespaces_lists_them_with_counts(store):
    name = fresh()
    ns = store.namespace(name)
    assert name not in {info.name for info in store.namespaces()}
    ns.remember("public", privacy=0)
    ns.remember("secret", privacy=3)
    (info,) = [info for info in store.namespaces() if info.name == name]
    assert info.nodes == 2
    (low,) = [info for info in store.namespaces(privacy_ceiling=0) if info.name == name]
    assert low.nodes == 1
    names = [info.name for info in store.namespaces()]
    assert names == sorted(names)


# --- as memstore_app (row-level security) ----------------------------------------------


def test_the_app_role_finds_creates_and_cannot_list(app_url, database_url):
    with MemoryStore.open(app_url, embedder=HashingEmbedder()) as app:
        name = fresh()
        ns = app.namespace(name)
        assert ns.recall("anything") == [] and ns.summary().by_status["current"] == 0
        assert not stored(database_url, name)
        with pytest.raises(InvalidInputError):
            ns.remember("")
        assert not stored(database_url, name)
        node = ns.remember("written by the app role")
        assert stored(database_url, name)
        # A second handle (another store) finds it through memstore.find_namespace.
        with MemoryStore.open(app_url, embedder=HashingEmbedder()) as again:
            assert again.namespace(name).get(node.id).content == "written by the app role"
        assert app.namespaces() == []  # a confined role lists no namespace
    with psycopg.connect(app_url) as conn:
        found = conn.execute("SELECT memstore.find_namespace(%s)", (name,)).fetchone()
        assert found == (written_namespace_id(database_url, name),)
        assert conn.execute("SELECT memstore.find_namespace(%s)", ("nope-%",)).fetchone() == (None,)
