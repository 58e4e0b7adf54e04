"""The async API on a real PostgreSQL: the sync verbs, awaited from one event loop."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from memstore import AsyncMemoryStore, AsyncNamespace, MemoryStore
from memstore.aio import AsyncNamespaceTransaction, TransactionOverError
from memstore.embedding.hashing import HashingEmbedder
from memstore.errors import InvalidInputError, NodeNotFoundError, StoreClosedError
from memstore.models import Hit, Node
from tests.conftest import row_counts
from tests.integration.test_lifecycle import record


def run(database_url: str, body: Callable[[AsyncMemoryStore], Awaitable[Any]]) -> Any:
    """Open an async store on the module's database, run ``body`` with it, close it."""

    async def main() -> Any:
        async with await AsyncMemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
            return await body(store)

    return asyncio.run(main())


async def fresh(store: AsyncMemoryStore) -> AsyncNamespace:
    return await store.namespace(f"async-{uuid.uuid4().hex[:10]}")


def test_the_verbs_answer_as_the_sync_ones_do(database_url):
    async def body(store: AsyncMemoryStore) -> tuple[str, list[int]]:
        ns = await fresh(store)
        assert not await ns.exists()
        home = await ns.remember("Alice lives in Lisbon", kind="semantic")
        await ns.remember("Bob plays the cello", kind="semantic")
        assert isinstance(home, Node) and await ns.exists() and ns.id > 0
        hits: list[Hit] = await ns.recall("where does Alice live?", k=2)
        assert hits[0].node.id == home.id
        newer = await ns.revise(home.id, "Alice lives in Porto", reason="moved")
        assert [n.id for n in await ns.lineage(newer.id)] == [home.id, newer.id]
        spread = await ns.activate("Alice", depth=1)
        assert newer.id in {item.node.id for item in spread.working_memory}
        packet = await ns.recall_context("Alice", 200)
        assert "Porto" in packet.render()
        receipt = await ns.apply(
            [record("Maya is allergic to peanuts")], phase="rumination", actor="agent"
        )
        assert receipt.applied
        names = [info.name for info in await store.namespaces()]
        assert ns.name in names and (await store.status()).row_counts["nodes"] >= 3
        return ns.name, [hit.node.id for hit in await ns.recall("Alice Porto", k=3)]

    name, async_ids = run(database_url, body)
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as sync:
        assert [hit.node.id for hit in sync.namespace(name).recall("Alice Porto", k=3)] == async_ids


def test_tiers_have_async_twins(database_url):
    async def body(store: AsyncMemoryStore) -> None:
        ns = await fresh(store)
        await ns.scratchpad.pin("city", "Lisbon")
        pinned = await ns.scratchpad.get("city")
        assert pinned is not None and pinned.data["value"] == "Lisbon"
        await ns.timeline.ingest_turn("user", "I moved to Lisbon", "s1")
        assert [t.content for t in await ns.timeline.recent(5)] == ["user: I moved to Lisbon"]
        lesson = await ns.lessons.add("Check the menu for peanuts", source="dinner", confidence=0.9)
        assert [item.id for item in await ns.lessons.all()] == [lesson.id]
        step = {"tool": "chat", "purpose": "greet", "instruction": "say hello"}
        await ns.procedures.add("greet", description="Greet a user", steps=[step])
        assert await ns.procedures.find_by_name("greet") is not None
        assert await ns.consolidation.total() == 0
        assert await ns.review.pending() == []
        assert ns.timeline is ns.timeline  # one async tier object per namespace object

    run(database_url, body)


def test_errors_arrive_unchanged_and_change_nothing(database_url):
    async def body(store: AsyncMemoryStore) -> None:
        ns = await fresh(store)
        await ns.remember("Alice lives in Lisbon")
        before = row_counts(database_url)
        with pytest.raises(NodeNotFoundError):
            await ns.get(2**40)
        with pytest.raises(InvalidInputError, match="k"):
            await ns.recall("Alice", k=0)
        with pytest.raises(InvalidInputError):
            await ns.remember("x", privacy=7)
        assert row_counts(database_url) == before

    run(database_url, body)


def test_a_transaction_commits_all_or_nothing_on_its_own_thread(database_url):
    async def body(store: AsyncMemoryStore) -> None:
        ns = await fresh(store)  # created by the transaction's first write
        threads: set[str] = set()
        async with ns.transaction() as tx:
            assert isinstance(tx, AsyncNamespaceTransaction)
            a = await tx.remember("Team dinner on Friday")
            b = await tx.remember("Maya is allergic to peanuts")
            await tx.link(a.id, b.id, relation="constrained_by")
            threads.add(threading.current_thread().name)
        assert [n.id for n in await ns.lineage(b.id)] == [b.id]
        before = row_counts(database_url)
        with pytest.raises(ZeroDivisionError):  # the block's own error, unchanged
            async with ns.transaction() as tx:
                await tx.remember("never stored")
                1 / 0  # noqa: B018
        with pytest.raises(NodeNotFoundError):  # a verb's error rolls back the rest
            async with ns.transaction() as tx:
                await tx.remember("never stored either")
                await tx.node(2**40)
        assert row_counts(database_url) == before
        with pytest.raises(TransactionOverError):
            await tx.remember("after the block")
        with pytest.raises(InvalidInputError, match="privacy_ceiling"):  # refused on entry
            async with ns.transaction(privacy_ceiling=9):
                pass
        async with ns.reading() as reader:
            assert (await reader.node(a.id)).content == "Team dinner on Friday"

    run(database_url, body)


def test_a_cancelled_transaction_rolls_back_and_a_cancelled_verb_finishes(database_url):
    async def body(store: AsyncMemoryStore) -> None:
        ns = await fresh(store)
        await ns.remember("first")
        before = row_counts(database_url)
        started = asyncio.Event()

        async def writer() -> None:
            async with ns.transaction() as tx:
                await tx.remember("half a transaction")
                started.set()
                await asyncio.sleep(30)
                await tx.remember("the other half")

        task = asyncio.create_task(writer())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert row_counts(database_url) == before  # rolled back, connection returned
        # A verb cancelled while it runs finishes its transaction on its thread.
        inside, release = threading.Event(), threading.Event()

        def progress(_done: int) -> None:  # called in the worker, mid-transaction
            inside.set()
            release.wait(10)

        items = [f"bulk memory {i}" for i in range(20)]
        loading = asyncio.create_task(ns.remember_many(items, batch_size=10, progress=progress))
        await asyncio.to_thread(inside.wait, 10)
        loading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loading
        release.set()
        for _ in range(100):  # the thread commits after the cancelled await returned
            if row_counts(database_url)["nodes"] == before["nodes"] + 20:
                break
            await asyncio.sleep(0.05)
        assert row_counts(database_url)["nodes"] == before["nodes"] + 20

    run(database_url, body)


def test_64_concurrent_recalls_share_a_bounded_pool(database_url):
    async def body(store: AsyncMemoryStore) -> None:
        ns = await fresh(store)
        await ns.remember_many([f"memory number {i} about topic {i % 7}" for i in range(300)])
        queries = [f"topic {i % 7}" for i in range(64)]
        expected = {q: [h.node.id for h in await ns.recall(q, k=5)] for q in set(queries)}
        answers = await asyncio.gather(*(ns.recall(q, k=5) for q in queries))
        assert all(
            [h.node.id for h in answer] == expected[q]
            for q, answer in zip(queries, answers, strict=True)
        )
        workers = [t for t in threading.enumerate() if t.name.startswith("memstore-aio_")]
        assert 0 < len(workers) <= store.sync.engine.pool.size()  # type: ignore[attr-defined]

    run(database_url, body)


def test_close_and_async_with(database_url):
    async def main() -> None:
        store = await AsyncMemoryStore.open(database_url, embedder=HashingEmbedder())
        ns = await fresh(store)
        await store.close()
        await store.close()  # twice is harmless, as for the sync store
        with pytest.raises(StoreClosedError):
            await store.status()
        with pytest.raises(StoreClosedError):
            await ns.recall("anything")
        async with await AsyncMemoryStore.open(database_url, embedder=HashingEmbedder()) as opened:
            assert (await opened.status()).schema_revision
        with pytest.raises(StoreClosedError):
            await opened.namespaces()

    asyncio.run(main())


def test_the_sync_object_is_reachable(database_url):
    async def body(store: AsyncMemoryStore) -> None:
        ns = await fresh(store)
        assert isinstance(store.sync, MemoryStore) and ns.sync.name == ns.name
        assert repr(ns).startswith("<async ")

    run(database_url, body)
