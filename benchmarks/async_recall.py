"""64 concurrent recalls from one event loop: is the loop ever blocked, and is it as fast
as the sync API from 8 threads on the same data?

Loads ``--memories`` memories (hashing embedder) into one namespace, then, in one run:

- ``sync``: ``--threads`` threads call ``ns.recall`` until ``--recalls`` are done;
- ``async``: one event loop runs ``--coroutines`` coroutines awaiting
  ``AsyncNamespace.recall`` (memstore.aio: the sync verb on a thread pool) until
  ``--recalls`` are done, once per thread count in ``--workers`` (default: the
  engine's pool size, what ``AsyncMemoryStore.open`` chooses);
- ``psycopg-async`` (``--alternative``): the same recall statement run by psycopg's
  async driver on the loop itself (an AsyncConnectionPool of the same size), the
  plan and the hits built on the loop: what a native async recall would cost.

While the async runs go, a ticker task sleeps 5 ms at a time and records how late
it wakes: its maximum lateness is the longest the loop was blocked (the garbage
collector's longest pause is reported beside it: a collection stops every thread).
Every run reports recalls a second and latency p50/p95; ``--rounds`` repeats the
runs interleaved and reports each one's median.

Usage (from the repository root)::

    .venv/bin/python benchmarks/async_recall.py --memories 10000 --recalls 3000 \
        --alternative --rounds 3 --gc-freeze

Embedded server in a temporary directory, or ``--database-url`` (migrated to head).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from memstore import AsyncMemoryStore, MemoryStore
from memstore.aio._offload import Runner
from memstore.config import Settings
from memstore.embedding import HashingEmbedder

TOPICS = [
    "Lisbon",
    "Porto",
    "cello",
    "peanuts",
    "dinner",
    "Friday",
    "invoice",
    "garden",
    "deploy",
    "budget",
    "holiday",
    "printer",
    "Maya",
    "Alice",
    "Bob",
    "meeting",
]
TICK_S = 0.005


def corpus(n: int) -> list[str]:
    return [
        f"note {i}: {TOPICS[i % 16]} and {TOPICS[(i * 7) % 16]} came up on day {i % 365}"
        f" with {TOPICS[(i * 3) % 16].lower()} details"
        for i in range(n)
    ]


def queries(n: int) -> list[str]:
    return [f"what about {TOPICS[i % 16]} and {TOPICS[(i * 5) % 16]}?" for i in range(n)]


def summary(name: str, seconds: float, latencies: list[float], **extra: Any) -> dict[str, Any]:
    latencies = sorted(latencies)
    return {
        "run": name,
        "recalls_per_s": round(len(latencies) / seconds, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p95_ms": round(latencies[int(len(latencies) * 0.95) - 1] * 1000, 2),
        **extra,
    }


def sync_run(ns: Any, texts: list[str], threads: int) -> dict[str, Any]:
    latencies: list[float] = []
    lock = threading.Lock()
    todo = iter(texts)

    def worker() -> None:
        while True:
            with lock:
                text = next(todo, None)
            if text is None:
                return
            start = time.perf_counter()
            ns.recall(text, k=10)
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)

    started = time.perf_counter()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return summary(f"sync, {threads} threads", time.perf_counter() - started, latencies)


async def on_loop(
    recall: Callable[[str], Awaitable[Any]], texts: list[str], coroutines: int
) -> tuple[float, list[float], list[float]]:
    """Run the recalls from ``coroutines`` coroutines while a ticker measures the loop."""
    latencies: list[float] = []
    lateness: list[float] = []
    todo = iter(texts)
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(TICK_S)
            lateness.append(time.perf_counter() - start - TICK_S)

    async def worker() -> None:
        for text in todo:
            start = time.perf_counter()
            await recall(text)
            latencies.append(time.perf_counter() - start)

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(TICK_S * 2)
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(coroutines)))
    seconds = time.perf_counter() - started
    done.set()
    await tick
    return seconds, latencies, lateness


async def idle_loop(seconds: float = 3.0) -> dict[str, Any]:
    """The ticker alone: how late an idle loop wakes on this machine (its noise floor)."""

    async def wait(_text: str) -> None:
        await asyncio.sleep(seconds / 10)

    return loop_report("idle loop (ticker only)", await on_loop(wait, ["x"] * 10, 1))


class GcPauses:
    """The garbage collector's pauses: a collection stops every thread, the loop's too."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append(time.perf_counter() - self._started)

    def take(self) -> float:
        longest = max(self.pauses, default=0.0)
        self.pauses.clear()
        return round(longest * 1000, 2)


GC = GcPauses()


def loop_report(name: str, result: tuple[float, list[float], list[float]]) -> dict[str, Any]:
    seconds, latencies, lateness = result
    lateness.sort()
    return summary(
        name,
        seconds,
        latencies,
        longest_gc_pause_ms=GC.take(),
        loop_max_lateness_ms=round(max(lateness) * 1000, 2),
        loop_p99_lateness_ms=round(lateness[int(len(lateness) * 0.99) - 1] * 1000, 2),
        ticks=len(lateness),
    )


async def async_run(
    store: MemoryStore, name: str, texts: list[str], coroutines: int, workers: int
) -> dict[str, Any]:
    astore = AsyncMemoryStore(store, Runner(workers))  # the store's own pool, this many threads
    ns = await astore.namespace(name)
    await ns.recall(texts[0], k=10)  # warm: the namespace's statistics
    result = await on_loop(lambda text: ns.recall(text, k=10), texts, coroutines)
    astore._runner.close()  # the sync store stays open for the next run
    return loop_report(f"async, {coroutines} coroutines, {workers} threads", result)


async def psycopg_async_run(
    store: MemoryStore, url: str, name: str, texts: list[str], coroutines: int, size: int
) -> dict[str, Any]:
    """The alternative: recall's statement on psycopg's async driver, on the loop."""
    from pgvector.psycopg import register_vector_async
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    from memstore.db.transaction import scope_settings, set_local
    from memstore.db.urls import sqlalchemy_url
    from memstore.inputs import validated
    from memstore.recall import RecallQuery
    from memstore.recall import hits as recall_hits

    ns = store.namespace(name)
    ceiling = store.settings.privacy_ceiling
    dsn = sqlalchemy_url(url).set(drivername="postgresql").render_as_string(hide_password=False)

    async def configure(conn: Any) -> None:
        await register_vector_async(conn)
        await conn.set_autocommit(True)

    async with AsyncConnectionPool(
        dsn, min_size=size, max_size=size, configure=configure, open=False
    ) as pool:

        async def recall(text: str) -> Any:
            spec = validated(RecallQuery, text=text, k=10, privacy_ceiling=ceiling)
            vector = ns.embedder.embed([spec.text])[0]
            run = ns._recall.plan(spec, vector)  # the facade's recall service: a prototype only
            async with pool.connection() as conn:
                async with conn.cursor(row_factory=dict_row) as cursor:
                    async with conn.pipeline():
                        await cursor.execute("BEGIN")
                        scope = scope_settings(ns.id, ceiling)
                        for statement in set_local({**scope, **run.settings}):
                            await cursor.execute(statement)
                        await cursor.execute(run.statement, run.params, prepare=True)
                        rows = await cursor.fetchall()
                        await cursor.execute("COMMIT")
            ns._recall.learn(rows)
            return recall_hits(rows, spec, ns.embedder, ns.name)

        await recall(texts[0])
        result = await on_loop(recall, texts, coroutines)
    return loop_report(f"psycopg async driver, {coroutines} coroutines, pool {size}", result)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--coroutines", type=int, default=64)
    parser.add_argument("--workers", default="", help="comma-separated thread counts")
    parser.add_argument("--alternative", action="store_true")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each kind, interleaved")
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        help="sys.setswitchinterval for the run (seconds; default 0.005)",
    )
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() once the data is loaded: collections skip the objects of startup",
    )
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)

    settings = Settings(data_dir=tempfile.mkdtemp(prefix="memstore-bench-async-"))
    with MemoryStore.open(
        args.database_url, settings=settings, embedder=HashingEmbedder()
    ) as store:
        name = f"async-bench-{uuid.uuid4().hex[:6]}"
        store.namespace(name).remember_many(corpus(args.memories))
        texts = queries(args.recalls)
        store.namespace(name).recall(texts[0], k=10)  # warm
        if args.gc_freeze:
            gc.collect()
            gc.freeze()
        pool_size = store.engine.pool.size()  # type: ignore[attr-defined]
        workers = [int(w) for w in args.workers.split(",") if w] or [pool_size]
        results = [asyncio.run(idle_loop())]
        # Rounds interleave the runs, so that a change in the machine's load (other
        # processes) falls on every run alike; the summary takes each run's median.
        for _ in range(args.rounds):
            results.append(sync_run(store.namespace(name), texts, args.threads))
            for count in workers:
                results.append(asyncio.run(async_run(store, name, texts, args.coroutines, count)))
            if args.alternative:
                results.append(
                    asyncio.run(
                        psycopg_async_run(
                            store, store._url, name, texts, args.coroutines, pool_size
                        )
                    )
                )
    runs: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        runs.setdefault(result["run"], []).append(result)
    medians = [
        {
            key: statistics.median(r[key] for r in same) if key != "run" else value
            for key, value in same[0].items()
        }
        for same in runs.values()
    ]
    report = {
        "memories": args.memories,
        "recalls": args.recalls,
        "switch_interval": sys.getswitchinterval(),
        "gc_freeze": args.gc_freeze,
        "load": os.getloadavg(),
        "rounds": args.rounds,
        "medians": medians,
        "results": results,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
