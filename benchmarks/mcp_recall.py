"""What MCP adds to a recall: ``memory_recall`` over stdio and over streamable HTTP beside
the in-process ``ns.recall``, on the same data, in the same run.

One namespace of ``--memories`` synthetic memories (``remember_many``); then, for
each of ``--queries`` queries (after ``--warmup`` untimed rounds), the same
recall (k=10, hybrid) three ways in rotating order:

1. ``ns.recall(query, k=10)`` in this process;
2. ``memory_recall`` through ``memstore mcp --namespace NS`` (a subprocess
   driven by the official client over stdio);
3. ``memory_recall`` through ``memstore serve`` (a subprocess) at ``/mcp``, with
   an API key, by the official client over streamable HTTP;
4. for reference, the REST route ``POST /v1/namespaces/NS/recall`` of the same
   server with the same key (httpx2, one kept-alive connection).

Each MCP time is the client's wall time of ``call_tool`` (JSON-RPC, validation,
the key check and rate limit over HTTP, the thread hop, rendering both outputs).
Prints p50/p95/mean per path and what MCP adds at p50.

Usage (from the repository root)::

    .venv/bin/python benchmarks/mcp_recall.py                      # 2,000 memories, 200 queries
    .venv/bin/python benchmarks/mcp_recall.py --embedder neural --json mcp.json

Embedded server in a temporary directory, or ``--database-url`` (a role that
may create tables: the schema is migrated).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder
from memstore.keys import create_key

MEMSTORE = str(Path(sys.executable).with_name("memstore"))
WORDS = (
    "deploy release friday incident garden lisbon porto coffee meeting budget invoice"
    " alice bob maya peanut allergy dinner train flight hotel museum python postgres"
    " vector index memory recall lesson procedure timeline session review proposal"
).split()


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def stats(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "mean": statistics.fmean(ordered),
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_serve(environment: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with log.open("w") as sink:
        process = subprocess.Popen(
            [MEMSTORE, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx2.get(f"{base}/healthz", timeout=1).status_code == 200:
                return process, base
        except httpx2.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"memstore serve did not start:\n{log.read_text()}")
        time.sleep(0.2)


async def measure(args: argparse.Namespace, store: MemoryStore) -> dict[str, Any]:
    rng = random.Random(args.seed)
    ns = store.namespace(f"mcp-bench-{uuid.uuid4().hex[:6]}")
    ns.remember_many([text(rng, rng.randint(6, 30)) for _ in range(args.memories)])
    queries = [text(rng, rng.randint(2, 5)) for _ in range(args.queries + args.warmup)]
    key = create_key(store.engine, namespace=ns.name, scopes=["read"], name="bench").key
    environment = {
        **os.environ,
        "MEMSTORE_DATABASE_URL": store._url,  # the same server, as the owner
        "MEMSTORE_EMBEDDER": args.embedder,
    }
    work = Path(tempfile.mkdtemp(prefix="memstore-bench-mcp-"))
    serve, base = start_serve(environment, work / "serve.log")
    stdio = StdioServerParameters(
        command=MEMSTORE, args=["mcp", "--namespace", ns.name], env=environment
    )
    times: dict[str, list[float]] = {"in-process": [], "stdio": [], "http": [], "rest": []}
    try:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
            Client(streamable_http_client(f"{base}/mcp/", http_client=http)) as over_http,
            Client(stdio, read_timeout_seconds=120) as over_stdio,
        ):

            async def by(client: Client, query: str) -> None:
                result = await client.call_tool("memory_recall", {"query": query, "k": 10})
                if result.is_error:
                    raise SystemExit(f"memory_recall failed: {result.content}")

            async def in_process(query: str) -> None:
                ns.recall(query, k=10)

            async def rest(query: str) -> None:
                answer = await http.post(
                    f"{base}/v1/namespaces/{ns.name}/recall", json={"text": query, "k": 10}
                )
                if answer.status_code != 200:
                    raise SystemExit(f"REST recall failed: {answer.text}")

            paths: dict[str, Callable[[str], Awaitable[None]]] = {
                "in-process": in_process,
                "stdio": lambda q: by(over_stdio, q),
                "http": lambda q: by(over_http, q),
                "rest": rest,
            }
            order = list(paths)
            for i, query in enumerate(queries):
                order = order[1:] + order[:1]  # rotate: no path always goes first
                for name in order:
                    started = time.perf_counter()
                    await paths[name](query)
                    if i >= args.warmup:
                        times[name].append((time.perf_counter() - started) * 1000)
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    result = {name: stats(ms) for name, ms in times.items()}
    base_p50 = result["in-process"]["p50"]
    for name in ("stdio", "http", "rest"):
        result[name]["added_p50"] = result[name]["p50"] - base_p50
    return {
        "memories": args.memories,
        "queries": args.queries,
        "embedder": args.embedder,
        "results": result,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embedder", choices=("hashing", "neural"), default="hashing")
    parser.add_argument("--database-url", default=os.environ.get("MEMSTORE_DATABASE_URL"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    settings = Settings(
        data_dir=tempfile.mkdtemp(prefix="memstore-bench-mcp-db-"), embedder=args.embedder
    )
    embedder = HashingEmbedder() if args.embedder == "hashing" else None
    with MemoryStore.open(
        args.database_url, settings=settings, embedder=embedder, auto_upgrade=True
    ) as store:
        report = anyio.run(measure, args, store)
    print(
        f"{report['memories']} memories, {report['queries']} queries, k=10 hybrid,"
        f" {report['embedder']} embedder"
    )
    print(f"{'path':<12}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}{'added p50':>11}")
    for name, row in report["results"].items():
        added = f"{row['added_p50']:+.2f}" if "added_p50" in row else ""
        print(f"{name:<12}{row['p50']:>9.2f}{row['p95']:>9.2f}{row['mean']:>9.2f}{added:>11}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
