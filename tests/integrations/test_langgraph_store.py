"""MemstoreStore as LangGraph's own store tests use a BaseStore (libs/checkpoint and
libs/checkpoint-postgres in the LangGraph repository), written as memstore's tests."""

from __future__ import annotations

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)

from memstore.errors import InvalidInputError
from memstore.integrations.langgraph import (
    NODE_TYPE,
    TIER,
    MemstoreStore,
    namespace_name,
    namespace_tuple,
)
from memstore.models import NodeStatus


def test_put_get_update_delete(store):
    namespace = ("test", "documents")
    store.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(namespace, "doc1")
    assert isinstance(item, Item)
    assert (item.namespace, item.key) == (namespace, "doc1")
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    assert item.created_at <= item.updated_at

    store.put(namespace, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = store.get(namespace, "doc1")
    assert updated.value["title"] == "Updated Document"
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at  # the key's first put

    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None
    store.delete(namespace, "never-there")  # deleting a missing key is no error


def test_updates_and_deletes_keep_history(store, memory_store):
    namespace = ("users", "alice")
    store.put(namespace, "color", {"text": "Alice likes red"})
    store.put(namespace, "color", {"text": "Alice likes blue"})
    store.delete(namespace, "color")
    history = store.history(namespace, "color")
    assert [item.value["text"] for item in history] == ["Alice likes red", "Alice likes blue"]
    # The same versions through memstore's own API, with their status.
    nodes = memory_store.namespace("users.alice").keyed(TIER).history("color")
    assert [n.status for n in nodes] == [NodeStatus.SUPERSEDED, NodeStatus.TOMBSTONED]
    assert {n.node_type for n in nodes} == {NODE_TYPE}
    assert memory_store.namespace("users.alice").lineage(nodes[0].id)[-1].id == nodes[1].id


def test_batch_runs_in_order_and_answers_each_op(store):
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), filter={"data": "value1"}),
            ListNamespacesOp(),
            GetOp(("test",), "key3"),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test",), "key3"),  # sees the put before it
            PutOp(("test",), "key3", None),
            GetOp(("test",), "key3"),
        ]
    )
    assert results[0].value == {"data": "value1"}
    assert results[1] is None
    assert [item.key for item in results[2]] == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None
    assert results[6].value == {"data": "value3"}
    assert results[8] is None


def test_search_without_query_filters_and_pages(store):
    data = [
        (("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "n": 1}),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "n": 2}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "n": 3}),
    ]
    for namespace, key, value in data:
        store.put(namespace, key, value)
    everything = store.search(("test",))
    assert [item.key for item in everything] == ["img1", "doc2", "doc1"]  # latest first
    assert all(item.score is None for item in everything)
    assert [i.key for i in store.search(("test", "docs"))] == ["doc2", "doc1"]
    assert [i.key for i in store.search(())] == ["img1", "doc2", "doc1"]
    assert {i.key for i in store.search(("test",), filter={"author": "Alice"})} == {
        "doc1",
        "img1",
    }
    assert [i.key for i in store.search(("test",), limit=2)] == ["img1", "doc2"]
    assert [i.key for i in store.search(("test",), offset=2)] == ["doc1"]
    assert [i.key for i in store.search(("test", "docs"), limit=1, offset=1)] == ["doc1"]
    assert store.search(("nothing",)) == []
    assert store.search(("test",), limit=0) == []


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({"score": 9}, [9]),
        ({"score": {"$eq": 9}}, [9]),
        ({"score": {"$ne": 9}}, [2, 10, 11]),
        ({"score": {"$gt": 9}}, [10, 11]),  # numerically, not "9" > "10"
        ({"score": {"$gte": 10}}, [10, 11]),
        ({"score": {"$lt": 10}}, [2, 9]),
        ({"score": {"$lte": 9}}, [2, 9]),
        ({"score": {"$gt": 2, "$lt": 11}}, [9, 10]),
        ({"score": {"$gte": 9}, "color": "red"}, [9, 11]),
        ({"meta.rank": {"$lt": 3}}, [2, 9]),  # a nested field
    ],
)
def test_every_filter_operator(store, filter, expected):
    for key, score, color, rank in [("a", 2, "blue", 1), ("b", 9, "red", 2), ("c", 10, "blue", 3),
                                    ("d", 11, "red", 4)]:  # fmt: skip
        store.put(("scores",), key, {"score": score, "color": color, "meta": {"rank": rank}})
    found = store.search(("scores",), filter=filter, limit=10)
    assert sorted(item.value["score"] for item in found) == expected
    # With a query the same filter holds.
    found = store.search(("scores",), query="score color", filter=filter, limit=10)
    assert sorted(item.value["score"] for item in found) == expected


def test_filters_compare_text_as_text_and_refuse_unknown_operators(store):
    for key, name in [("a", "apple"), ("b", "banana"), ("c", 7)]:
        store.put(("names",), key, {"name": name})
    assert [
        i.value["name"] for i in store.search(("names",), filter={"name": {"$gt": "apple"}})
    ] == ["banana"]
    with pytest.raises(InvalidInputError, match=r"\$like"):
        store.search(("names",), filter={"name": {"$like": "a%"}})


def test_search_with_a_query_finds_words(store):
    store.put(("mem",), "1", {"text": "Alice moved to Lisbon in May"})
    store.put(("mem",), "2", {"text": "Bob likes green tea"})
    store.put(("mem", "deep"), "3", {"text": "Lisbon has trams"})
    found = store.search(("mem",), query="Lisbon")
    assert {item.key for item in found[:2]} == {"1", "3"}
    assert all(item.score is not None for item in found)
    assert found[0].score >= found[-1].score
    assert [item.key for item in store.search(("mem",), query="green tea", limit=1)] == ["2"]
    paged = store.search(("mem",), query="Lisbon", limit=1, offset=1)
    assert [item.key for item in paged] == [found[1].key]
    # An empty query lists; punctuation around words is no matter; a query with
    # nothing to compare (no word, a zero vector) finds nothing.
    assert len(store.search(("mem",), query="")) == 3
    assert [i.key for i in store.search(("mem",), query="tea!@#$%^&*()", limit=1)] == ["2"]
    assert store.search(("mem",), query="!@#$%") == []
    long = store.search(("mem",), query="trams " * 3000)  # cut to recall's limit
    assert long[0].key == "3"


def test_search_skips_deleted_and_old_versions(store):
    store.put(("mem",), "k", {"text": "zebra crossing"})
    store.put(("mem",), "k", {"text": "penguin parade"})
    store.put(("mem",), "gone", {"text": "zebra stripes"})
    store.delete(("mem",), "gone")
    found = store.search(("mem",), query="zebra")
    assert [(item.key, item.value["text"]) for item in found] == [("k", "penguin parade")]


def test_list_namespaces_prefix_suffix_depth_and_paging(store):
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, namespace in enumerate(namespaces):
        store.put(namespace, f"id_{i}", {"data": f"value_{i:02d}"})
    assert store.list_namespaces() == sorted(namespaces)
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")
    ]  # fmt: skip
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")
    ]  # fmt: skip
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    # A prefix is whole labels: "a" does not match "admin".
    assert ("admin", "users", "789") not in store.list_namespaces(prefix=("a",))
    # A namespace whose items are all deleted is no longer listed.
    store.delete(("users", "123"), "id_6")
    assert store.list_namespaces(prefix=("users",)) == [("users", "456", "settings")]


def test_list_namespaces_of_an_empty_store_and_memstore_own_namespaces(store, memory_store):
    assert store.list_namespaces() == []
    memory_store.namespace("native").remember("not a LangGraph item")
    assert store.list_namespaces() == []  # only namespaces holding LangGraph items


def test_namespace_validation_is_langgraph_own(store):
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", doc)])  # past the public put too
    with pytest.raises(InvalidNamespaceError):
        store.search(("a.b",))
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces(prefix=("a.b",))
    # "langgraph" is refused as a root only; past put() it is just a label (as upstream).
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert store.search(("langgraph", "foo"))[0].value == doc


@pytest.mark.parametrize(
    "namespace",
    [("users", "alice"), ("50%", " padded ", "tab\there"), ("zero\u200bwidth",), ("é", "日本")],
)
def test_namespace_names_round_trip(store, memory_store, namespace):
    name = namespace_name(namespace)
    assert namespace_tuple(name) == namespace
    store.put(namespace, "k", {"text": "x"})
    assert store.get(namespace, "k").value == {"text": "x"}
    assert store.list_namespaces() == [namespace]
    assert memory_store.namespace(name).keyed(TIER).get(["k"])["k"].data == {"text": "x"}


def test_bad_values_and_ttl_are_refused(store):
    with pytest.raises(NotImplementedError):
        store.put(("t",), "k", {"a": 1}, ttl=5)
    with pytest.raises(InvalidInputError):
        store.put(("t",), "k", {"a": float("nan")})
    with pytest.raises(InvalidInputError):
        store.put(("t",), "", {"a": 1})
    assert MemstoreStore.supports_ttl is False
    assert store.list_namespaces() == []


def test_from_conn_string_opens_and_closes(fresh_url):
    with MemstoreStore.from_conn_string(fresh_url) as store:
        store.setup()  # a no-op, as code written for PostgresStore calls it
        store.put(("a",), "k", {"v": 1})
    with MemstoreStore.from_conn_string(fresh_url) as again:
        item = again.get(("a",), "k")
        assert item is not None and item.value == {"v": 1}


def test_consecutive_puts_are_one_transaction(store):
    store.batch(
        [
            PutOp(("b",), "k", {"v": 1}),
            PutOp(("b",), "k", {"v": 2}),  # the same key twice: two versions, the last wins
            PutOp(("b",), "j", {"v": 3}),
        ]
    )
    assert [item.value for item in store.history(("b",), "k")] == [{"v": 1}, {"v": 2}]
    with pytest.raises(InvalidInputError):
        store.batch([PutOp(("b",), "m", {"v": 4}), PutOp(("b",), "n", {"v": float("nan")})])
    assert store.get(("b",), "m") is None  # the batch's puts were one transaction
    assert [i.key for i in store.search(("b",))] == ["j", "k"]
