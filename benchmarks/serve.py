"""What HTTP costs: `memstore serve` recall against the in-process call, same data, same run.

Part ``http``: a store of ``--size`` memories; ``memstore serve`` started as a
subprocess on 127.0.0.1 against the same database; then, ``--rounds`` times,
interleaved: ``--queries`` in-process ``ns.recall`` calls one after another,
then the same queries over HTTP (``POST /v1/namespaces/{ns}/recall``, k=10)
from 1, 8 and 32 concurrent clients (asyncio + httpx, one connection per
client, sharing one queue of requests). Reported per level: p50/p95 latency
(medians over rounds), throughput, errors. Goals (printed met/MISS): the
server's added p50 at 1 client ≤ 2 ms; throughput at 8 clients ≥ 1.6× that at
1; no errors.

Part ``embedding``: the neural embedder's query embedding (one text a call,
as recall does) from 1, 8 and 32 threads at once, with ONNX intra-op threads 1
and 2, and with 1 thread behind the server's BatchingEmbedder (interleaved):
per-call p50/p95 and throughput. With ``--parts
http --embedder neural --embedder-threads N`` the server itself runs with N
intra-op threads (``MEMSTORE_SERVE_EMBEDDER_THREADS``).

Commands (from the repository root)::

    .venv/bin/python benchmarks/serve.py --size 10000 --json /tmp/serve.json
    .venv/bin/python benchmarks/serve.py --parts embedding --queries 200
    .venv/bin/python benchmarks/serve.py --size 10000 --embedder neural --embedder-threads 1

The database: ``--database-url`` / ``MEMSTORE_DATABASE_URL`` (migrated to
head), else a private embedded server in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding.select import choose_embedder
from memstore.keys import create_key

NAMESPACE = "bench-serve"
CLIENT_LEVELS = (1, 8, 32)
WORDS = (
    "alice bob maya lisbon porto tea coffee dinner friday deploy server database index "
    "peanut allergy restaurant team meeting project deadline budget travel train flight "
    "hotel paper review code test release bug memory graph vector recall lesson procedure"
).split()
MEMSTORE = str(Path(sys.executable).with_name("memstore"))


def sentence(rng: random.Random, words: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- http ------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux /proc): load-independent."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(url: str, embedder: str, threads: int | None) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env.update({"MEMSTORE_DATABASE_URL": url, "MEMSTORE_EMBEDDER": embedder})
    if threads is not None:
        env["MEMSTORE_SERVE_EMBEDDER_THREADS"] = str(threads)
    process = subprocess.Popen(
        [MEMSTORE, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(
                f"memstore serve exited: {process.stderr.read() if process.stderr else ''}"
            )
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return process, base
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit("memstore serve did not become ready")


async def http_level(
    base: str, key: str, queries: list[str], clients: int, pid: int
) -> dict[str, Any]:
    """``queries`` over HTTP from ``clients`` concurrent clients: latencies, wall, errors,
    and the server process's CPU time per request."""
    pending = list(queries)
    latencies: list[float] = []
    errors = 0
    headers = {"Authorization": f"Bearer {key}"}
    url = f"/v1/namespaces/{NAMESPACE}/recall"

    async def client() -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as session:
            while pending:
                text = pending.pop()
                started = time.perf_counter()
                response = await session.post(url, json={"text": text, "k": 10})
                latencies.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200 or len(response.json()) == 0:
                    errors += 1

    cpu = cpu_seconds(pid)
    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - started
    return {
        "p50_ms": percentile(latencies, 0.5),
        "p95_ms": percentile(latencies, 0.95),
        "throughput_rps": len(latencies) / wall,
        "server_cpu_ms": (cpu_seconds(pid) - cpu) * 1000 / max(1, len(latencies)),
        "errors": errors,
        "requests": len(latencies),
    }


def in_process(store: MemoryStore, queries: list[str]) -> dict[str, Any]:
    ns = store.namespace(NAMESPACE)
    latencies = []
    cpu = time.process_time()
    for text in queries:
        started = time.perf_counter()
        ns.recall(text, k=10)
        latencies.append((time.perf_counter() - started) * 1000)
    return {
        "p50_ms": percentile(latencies, 0.5),
        "p95_ms": percentile(latencies, 0.95),
        "throughput_rps": len(latencies) / (sum(latencies) / 1000),
        "cpu_ms": (time.process_time() - cpu) * 1000 / len(latencies),
    }


def paired(store: MemoryStore, base: str, key: str, queries: list[str]) -> dict[str, Any]:
    """Each query in process and over HTTP (one client), back to back, the order
    alternating: the difference of each pair is the HTTP layer's cost under the same
    load, which a loaded machine's drift between two separate runs would swamp."""
    ns = store.namespace(NAMESPACE)
    url = f"/v1/namespaces/{NAMESPACE}/recall"
    local: list[float] = []
    remote: list[float] = []
    errors = 0
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as client:
        for i, text in enumerate(queries):
            for side in ("local", "remote") if i % 2 else ("remote", "local"):
                started = time.perf_counter()
                if side == "local":
                    ns.recall(text, k=10)
                    local.append((time.perf_counter() - started) * 1000)
                else:
                    response = client.post(url, json={"text": text, "k": 10})
                    remote.append((time.perf_counter() - started) * 1000)
                    errors += response.status_code != 200
    added = [there - here for there, here in zip(remote, local, strict=True)]
    return {
        "in_process_p50_ms": percentile(local, 0.5),
        "http_p50_ms": percentile(remote, 0.5),
        "added_p50_ms": percentile(added, 0.5),
        "added_p95_ms": percentile(added, 0.95),
        "errors": errors,
    }


def run_http(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    rng = random.Random(args.seed)
    embedder = choose_embedder(args.embedder)
    with MemoryStore.open(
        args.database_url, settings=settings, embedder=embedder, auto_upgrade=True
    ) as store:
        ns = store.namespace(NAMESPACE)
        if not ns.exists():
            started = time.perf_counter()
            ns.remember_many([{"content": f"{i}: {sentence(rng)}"} for i in range(args.size)])
            print(f"ingested {args.size} memories in {time.perf_counter() - started:.1f} s")
        key = create_key(store.engine, namespace=NAMESPACE, scopes=["read"], name="bench").key
        url = store._url
        process, base = start_server(url, args.embedder, args.embedder_threads)
        try:
            queries = [sentence(rng, 5) for _ in range(args.queries)]
            warm = queries[: min(50, len(queries))]
            in_process(store, warm)
            asyncio.run(http_level(base, key, warm, 8, process.pid))
            rounds: list[dict[str, Any]] = []
            for number in range(args.rounds):
                shuffled = random.Random(number).sample(queries, len(queries))
                result: dict[str, Any] = {"paired_1": paired(store, base, key, shuffled)}
                result["in_process"] = in_process(store, shuffled)
                for clients in args.clients:
                    result[f"http_{clients}"] = asyncio.run(
                        http_level(base, key, shuffled, clients, process.pid)
                    )
                rounds.append(result)
                print(f"round {number + 1}: " + json.dumps(_brief(result)))
        finally:
            process.terminate()
            process.wait(timeout=60)
    summary = {
        name: {
            metric: statistics.median(r[name][metric] for r in rounds)
            for metric in rounds[0][name]
            if metric != "requests"
        }
        for name in rounds[0]
    }
    for name in summary:
        if "errors" in summary[name]:
            summary[name]["errors"] = sum(r[name]["errors"] for r in rounds)
    one = summary.get("http_1")
    eight = summary.get("http_8")
    goals = {}
    added = summary["paired_1"]["added_p50_ms"]
    goals["added_p50_at_1_client_ms"] = {
        "value": round(added, 2),
        "goal": "<= 2",
        "met": added <= 2,
    }
    if one is not None and eight is not None:
        ratio = eight["throughput_rps"] / one["throughput_rps"]
        goals["throughput_8_over_1"] = {
            "value": round(ratio, 2),
            "goal": ">= 1.6",
            "met": ratio >= 1.6,
        }
    if one is not None:
        layer = one["server_cpu_ms"] - summary["in_process"]["cpu_ms"]
        goals["http_layer_cpu_ms_per_request"] = {
            "value": round(layer, 2),
            "goal": "(informative)",
            "met": True,
        }
    errors = sum(v.get("errors", 0) for v in summary.values())
    goals["errors"] = {"value": errors, "goal": "0", "met": errors == 0}
    return {"summary": summary, "goals": goals, "rounds": rounds}


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    return {
        name: {k: round(v, 2) if isinstance(v, float) else v for k, v in part.items()}
        for name, part in result.items()
    }


# --- embedding -------------------------------------------------------------------------


def embed_level(embed: Callable[[str], Any], queries: list[str], threads: int) -> dict[str, Any]:
    pending = list(queries)
    latencies: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not pending:
                    return
                text = pending.pop()
            started = time.perf_counter()
            embed(text)
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                latencies.append(elapsed)

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    started = time.perf_counter()
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    wall = time.perf_counter() - started
    return {
        "p50_ms": percentile(latencies, 0.5),
        "p95_ms": percentile(latencies, 0.95),
        "throughput_per_s": len(latencies) / wall,
    }


def run_embedding(args: argparse.Namespace) -> dict[str, Any]:
    from memstore.embedding import onnx

    rng = random.Random(args.seed)
    queries = [sentence(rng, 8) for _ in range(args.queries)]
    from memstore.server.batching import BatchingEmbedder

    single = {t: onnx.load_default(threads=t) for t in (1, 2)}
    embedders: dict[str, Any] = {f"intra{t}": e for t, e in single.items()}
    embedders["batched_intra1"] = BatchingEmbedder(single[1])
    for embedder in single.values():
        embedder.embed(queries[:20])
    rounds = []
    for number in range(args.rounds):
        result = {}
        for clients in args.clients:
            for label, embedder in embedders.items():
                result[f"{label}_clients{clients}"] = embed_level(
                    lambda text, e=embedder: e.embed([text]), queries, clients
                )
        rounds.append(result)
        print(f"round {number + 1}: " + json.dumps(_brief(result)))
    summary = {
        name: {
            metric: statistics.median(r[name][metric] for r in rounds) for metric in rounds[0][name]
        }
        for name in rounds[0]
    }
    return {"summary": summary, "rounds": rounds}


# --- main ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="http", help="http, embedding, or both (comma)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(map(str, CLIENT_LEVELS)))
    parser.add_argument("--embedder", default="hashing", help="hashing or neural")
    parser.add_argument("--embedder-threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--database-url", default=os.environ.get("MEMSTORE_DATABASE_URL"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    args.clients = [int(c) for c in args.clients.split(",")]
    settings = Settings(data_dir=tempfile.mkdtemp(prefix="memstore-bench-serve-"))
    parts = {p.strip() for p in args.parts.split(",")}
    out: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_before": os.getloadavg(),
    }
    if "http" in parts:
        out["http"] = run_http(args, settings)
        for name, goal in out["http"]["goals"].items():
            print(
                f"{'met ' if goal['met'] else 'MISS'} {name}: {goal['value']} (goal {goal['goal']})"
            )
        print(json.dumps(_brief(out["http"]["summary"]), indent=1))
    if "embedding" in parts:
        out["embedding"] = run_embedding(args)
        print(json.dumps(_brief(out["embedding"]["summary"]), indent=1))
    out["load_after"] = os.getloadavg()
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
