"""The async side of MemstoreStore (abatch and LangGraph's a* methods) and concurrent
batches, as LangGraph's test_async_store.py exercises AsyncPostgresStore."""

from __future__ import annotations

import asyncio
import threading

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from memstore.errors import StoreClosedError
from memstore.integrations.langgraph import TIER, MemstoreStore
from memstore.models import NodeStatus


def test_async_put_get_search_delete_and_list(store):
    async def body() -> None:
        await store.aput(("users", "alice"), "color", {"text": "Alice likes red"})
        await store.aput(("users", "bob"), "color", {"text": "Bob likes tea"})
        item = await store.aget(("users", "alice"), "color")
        assert item is not None and item.value == {"text": "Alice likes red"}
        found = await store.asearch(("users",), query="tea")
        assert found[0].key == "color" and found[0].namespace == ("users", "bob")
        listed = await store.asearch(("users",), filter={"text": "Alice likes red"})
        assert [i.namespace for i in listed] == [("users", "alice")]
        assert await store.alist_namespaces(prefix=("users",)) == [
            ("users", "alice"),
            ("users", "bob"),
        ]
        await store.adelete(("users", "alice"), "color")
        assert await store.aget(("users", "alice"), "color") is None
        assert await store.alist_namespaces(max_depth=1) == [("users",)]

    asyncio.run(body())


def test_abatch_answers_in_order(store):
    async def body() -> None:
        results = await store.abatch(
            [
                PutOp(("t",), "a", {"n": 1}),
                GetOp(("t",), "a"),
                SearchOp(("t",), filter={"n": {"$gte": 1}}),
                GetOp(("t",), "missing"),
            ]
        )
        assert results[0] is None and results[1].value == {"n": 1}
        assert [i.key for i in results[2]] == ["a"] and results[3] is None

    asyncio.run(body())


def test_concurrent_async_puts(store, memory_store):
    async def body() -> None:
        await asyncio.gather(*(store.aput(("c",), f"k{i}", {"n": i}) for i in range(12)))
        got = await asyncio.gather(*(store.aget(("c",), f"k{i}") for i in range(12)))
        assert [item.value["n"] for item in got] == list(range(12))
        # Many writers of one key: each put is a version, exactly one is current.
        await asyncio.gather(*(store.aput(("c",), "hot", {"n": i}) for i in range(8)))
        history = memory_store.namespace("c").keyed(TIER).history("hot")
        assert len(history) == 8
        assert [n.status for n in history].count(NodeStatus.CURRENT) == 1
        assert (await store.aget(("c",), "hot")).value == history[-1].data

    asyncio.run(body())


def test_concurrent_batches_from_threads(store):
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            for i in range(5):
                store.batch(
                    [
                        PutOp(("w", str(w)), f"k{i}", {"w": w, "i": i}),
                        PutOp(("shared",), "k", {"w": w, "i": i}),
                        SearchOp(("w",), limit=100),
                    ]
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.search(("w",), limit=100)) == 20
    assert len(store.history(("shared",), "k")) == 20
    assert store.get(("shared",), "k") is not None


def test_async_from_conn_string(fresh_url):
    async def body() -> None:
        async with MemstoreStore.from_conn_string(fresh_url) as store:
            await store.aput(("a",), "k", {"v": 1})
            item = await store.aget(("a",), "k")
            assert item is not None and item.value == {"v": 1}
        with pytest.raises(StoreClosedError):
            store.get(("a",), "k")

    asyncio.run(body())
