"""Scale: one namespace of a million memories, and many tenants against few (issue 23).

Resumable: every phase writes its result into a state file (JSON) as it ends, the bulk
load after every chunk, and a second run with the same ``--state`` skips what is done
and reuses the databases. The embedded server keeps its data in ``--data-dir`` (or pass
``--database-url``, a role that may CREATE DATABASE). The hashing embedder (384-d)
turns synthetic texts into vectors; no model is downloaded.

Scenario ``one`` (database ``memstore_scale_one``, namespace ``big``, ``--size`` rows):

1. load       ``remember_many`` in chunks of ``--chunk`` (binary COPY, one transaction a
              chunk), the HNSW index built once at the end (memstore's bulk import into
              an empty model: the chunks are loaded as one import would be), then 3 edges
              per node (server-side INSERT … SELECT, for activation to have a graph);
2. raw        the same vectors in a plain ``bench_raw(id, embedding vector(384))`` with
              its own HNSW index (built server-side from memstore.embeddings);
3. search     k=10 semantic ``ns.recall`` vs the raw pgvector query with the same vector
              and ``hnsw.ef_search``, interleaved: p50/p95 (goal: memstore p95 <= 1.5x);
4. live       ``remember_many`` of ``--live`` new rows into the live index: rows/s;
5. single     ``ns.remember`` one at a time: p50/p95;
6. activate   ``ns.activate(query)`` (depth 2): p50/p95;
7. context    ``ns.recall_context(query, 1000)``: p50/p95.

Scenario ``tenants`` (``--tenants 10000x100,10x100000``: the same total rows split two
ways, one database each, ``memstore_scale_t<N>x<M>``): load every namespace (index once
at the end), then per-namespace recall p50/p95 over ``--queries`` random tenants, then
ingest into the live index (20 rows into each of 50 random tenants): rows/s. Goal:
p95 with many tenants <= 1.3x p95 with few. Three passes: ``first_touch`` (the first
recall of each picked tenant), the same recalls again with every tenant's object kept
(the top-level p50/p95), and ``random_tenant``: as many recalls of tenants drawn at
random from all of them, first touches included as they come (``tenants_new`` of them)
-- the honest per-tenant figure for a service with many tenants.

Commands (from the repository root)::

    # validation: ~3 minutes on 2 shared cores
    .venv/bin/python benchmarks/scale.py --size 20000 --tenants 100x100,10x1000 \\
        --state /tmp/scale-small.json --data-dir /tmp/scale-small
    # the full run (hours on 2 cores; rerun the same command to resume after a stop)
    .venv/bin/python benchmarks/scale.py --size 1000000 --tenants 10000x100,10x100000 \\
        --state scale-1m.json --data-dir ~/.cache/memstore-scale
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from memstore import MemoryStore
from memstore.db.embedded import EmbeddedServer
from memstore.embedding import HashingEmbedder, cache
from memstore.recall.statement import search_settings

WORDS = (
    "alice bob carol dave erin frank grace heidi ivan judy mallory nick olivia peggy rupert"
    " sybil trent victor walter lisbon porto madrid paris berlin tea coffee train flight"
    " hotel meeting report budget deadline contract invoice project launch review bug fix"
    " deploy server database backup restore monday tuesday friday morning evening summer"
    " winter birthday gift dinner lunch doctor dentist gym run swim book movie music"
).split()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def text_of(seed: int, i: int) -> str:
    rng = random.Random(seed * 1_000_003 + i)
    return f"memory {i}: " + " ".join(rng.choice(WORDS) for _ in range(12))


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
        "n": len(ordered),
    }


class State:
    """The state file: results per phase, rewritten after every step."""

    def __init__(self, path: Path):
        self.path = path
        self.data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=True))
        tmp.replace(self.path)

    def phase(self, key: str, run: Callable[[], Any]) -> Any:
        if key in self.data:
            log(f"{key}: done before, kept")
            return self.data[key]
        log(f"{key}: running")
        started = time.perf_counter()
        result = run()
        result["seconds"] = round(time.perf_counter() - started, 1)
        self.put(key, result)
        log(f"{key}: {json.dumps(result)}")
        return result


@contextmanager
def server(args: argparse.Namespace) -> Iterator[str]:
    if args.database_url:
        yield args.database_url
        return
    embedded = EmbeddedServer(Path(args.data_dir).expanduser())
    try:
        yield embedded.start()
    finally:
        embedded.stop()


def database(admin_url: str, name: str, build_memory: str) -> str:
    """The URL of database ``name``, created if missing (the store migrates it).

    Index builds in it, memstore's and the raw table's alike, get ``build_memory``
    of ``maintenance_work_mem``: a 1M-row HNSW graph (about 2 GB) overflowing it is
    built on disk, many times slower, and an operator loading a million rows sets it.
    """
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("ALTER DATABASE {} SET maintenance_work_mem = {}").format(
                sql.Identifier(name), sql.Literal(build_memory)
            )
        )
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


class PrimedEmbedder(HashingEmbedder):
    """The hashing embedder, answering primed texts (the queries) from memory: search
    timings then compare the statement, not the embedding, with raw pgvector's."""

    def __init__(self) -> None:
        super().__init__()
        self.primed: dict[str, np.ndarray[Any, Any]] = {}

    def prime(self, texts: list[str]) -> np.ndarray[Any, Any]:
        vectors = super().embed(texts)
        self.primed.update(zip(texts, vectors, strict=True))
        return vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        if texts and all(text in self.primed for text in texts):
            return np.stack([self.primed[text] for text in texts])
        return super().embed(texts)


def open_store(url: str) -> MemoryStore:
    # Owner URL of a private database: migrate it to the package's head on first use.
    return MemoryStore.open(url, embedder=PrimedEmbedder(), auto_upgrade=True)


def queries(store: MemoryStore, seed: int, count: int) -> list[str]:
    """The query texts (primed: their embedding is not timed)."""
    texts = [text_of(seed + 1, i) for i in range(count)]
    embedder = store.embedder
    assert isinstance(embedder, PrimedEmbedder)
    embedder.prime(texts)
    return texts


@contextmanager
def index_deferred() -> Iterator[None]:
    """While loading in chunks, the chunks after the first do not find the index the
    first would build: the import builds it once, after the last chunk."""
    with mock.patch.object(cache, "index_exists", lambda *_: True):
        yield


def load(state: State, key: str, store: MemoryStore, names: list[str], per: int, chunk: int,
         seed: int) -> dict[str, Any]:  # fmt: skip
    """Bulk-load ``per`` memories into each namespace, resumably, then build the index."""
    done = state.get(key + ".progress") or {"rows": 0, "copy_s": 0.0}
    embedder = store.embedder
    total = per * len(names)
    with index_deferred():
        while done["rows"] < total:
            at = done["rows"]
            name = names[at // per]
            count = min(chunk, per - at % per, total - at)
            texts = [text_of(seed, at + i) for i in range(count)]
            started = time.perf_counter()
            store.namespace(name).remember_many(texts, batch_size=5000)
            done = {"rows": at + count, "copy_s": done["copy_s"] + time.perf_counter() - started}
            state.put(key + ".progress", done)
            if (at // chunk) % 20 == 0 or done["rows"] == total:
                rate = done["rows"] / done["copy_s"]
                log(f"{key}: {done['rows']:,}/{total:,} rows, {rate:,.0f}/s")
    started = time.perf_counter()
    cache.ensure_index(store.engine, embedder.name, embedder.dims)
    index_s = time.perf_counter() - started
    return {
        "rows": total,
        "copy_rows_per_s": round(total / max(done["copy_s"], 1e-9)),
        "copy_s": round(done["copy_s"], 1),
        "index_build_s": round(index_s, 1),
    }


def footprint(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_relation_size(c.oid), pg_total_relation_size(c.oid)"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname IN ('memstore', 'public')"
            " AND (c.relname IN ('nodes', 'embeddings', 'edges', 'bench_raw', 'bench_raw_hnsw')"
            "      OR c.relname LIKE %s)",
            (cache.INDEX_PREFIX + "%",),
        ).fetchall()
    out: dict[str, int] = {}
    for name, own, total in rows:
        out[f"{name}_bytes"] = int(own)
        out[f"{name}_total_bytes"] = int(total)
    return out


def add_edges(url: str, namespace_id: int, per_node: int = 3) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        ids = conn.execute(
            "SELECT min(id), max(id), count(*) FROM memstore.nodes WHERE namespace_id = %s",
            (namespace_id,),
        ).fetchone()
        assert ids is not None
        low, high, count = ids
        conn.execute(
            "INSERT INTO memstore.edges (namespace_id, src, dst, relation, weight)"
            " SELECT n.namespace_id, n.id, m.id, 'related', 0.3 + 0.1 * k"
            " FROM memstore.nodes n CROSS JOIN generate_series(1, %(per)s) k"
            " JOIN memstore.nodes m ON m.namespace_id = n.namespace_id"
            "  AND m.id = %(low)s + (n.id - %(low)s + k * 7919) %% (%(high)s - %(low)s + 1)"
            " WHERE n.namespace_id = %(ns)s AND m.id <> n.id",
            {"per": per_node, "low": low, "high": high, "ns": namespace_id},
        )
        conn.execute("ANALYZE memstore.edges")
    return {"edges_per_node": per_node, "nodes": count}


def raw_table(url: str, namespace_id: int, model: str) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS public.bench_raw")
        started = time.perf_counter()
        conn.execute(
            "CREATE TABLE public.bench_raw AS SELECT node_id AS id, embedding::vector(384)"
            " AS embedding FROM memstore.embeddings WHERE namespace_id = %s AND model = %s",
            (namespace_id, model),
        )
        conn.execute(
            "CREATE INDEX bench_raw_hnsw ON public.bench_raw USING hnsw"
            " (embedding vector_cosine_ops)"
        )
        conn.execute("ANALYZE public.bench_raw")
        return {"index_build_s": round(time.perf_counter() - started, 1)}


def timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def search(store: MemoryStore, url: str, name: str, count: int, seed: int) -> dict[str, Any]:
    ns = store.namespace(name)
    texts = queries(store, seed, count)
    vectors = store.embedder.embed(texts)
    settings = search_settings(50)
    ours: list[float] = []
    raw: list[float] = []
    with psycopg.connect(url) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        statement = "SELECT id FROM public.bench_raw ORDER BY embedding <=> %s LIMIT 10"
        scope = [
            sql.SQL("SET LOCAL {} = {}").format(sql.SQL(key), sql.Literal(value))
            for key, value in settings.items()
        ]

        def raw_query(vector: np.ndarray[Any, Any]) -> None:
            with conn.transaction():
                for statement_of_scope in scope:
                    conn.execute(statement_of_scope)
                conn.execute(statement, (vector,), prepare=True).fetchall()

        for text, vector in zip(texts, vectors, strict=True):  # interleaved: drift hits both
            ours.append(timed(lambda t=text: ns.recall(t, k=10, mode="semantic")))
            raw.append(timed(lambda v=vector: raw_query(v)))
    mine, theirs = percentiles(ours[5:]), percentiles(raw[5:])
    ratio = round(mine["p95_ms"] / theirs["p95_ms"], 2)
    return {"memstore": mine, "raw": theirs, "p95_ratio": ratio}


def latencies(call: Callable[[int], Any], count: int) -> dict[str, Any]:
    samples = [timed(lambda i=i: call(i)) for i in range(count)]
    return percentiles(samples[3:])


def scenario_one(state: State, admin_url: str, args: argparse.Namespace) -> None:
    key = f"one.{args.size}"
    url = database(admin_url, f"memstore_scale_one_{args.size}", args.build_memory)
    with open_store(url) as store:
        state.phase(f"{key}.load", lambda: load(state, f"{key}.load", store, ["big"], args.size,
                                                args.chunk, args.seed))  # fmt: skip
        ns = store.namespace("big")
        model = store.embedder.name
        state.phase(f"{key}.edges", lambda: add_edges(url, ns.id))
        state.phase(f"{key}.footprint", lambda: footprint(url))
        state.phase(f"{key}.raw", lambda: raw_table(url, ns.id, model))
        state.phase(f"{key}.search", lambda: search(store, url, "big", args.queries, args.seed))

        def live() -> dict[str, Any]:
            texts = [text_of(args.seed + 2, i) for i in range(args.live)]
            started = time.perf_counter()
            ns.remember_many(texts, batch_size=500)
            rate = args.live / (time.perf_counter() - started)
            return {"rows": args.live, "rows_per_s": round(rate)}

        state.phase(f"{key}.live", live)
        state.phase(f"{key}.single", lambda: latencies(
            lambda i: ns.remember(text_of(args.seed + 3, i)), args.queries))  # fmt: skip
        asked = queries(store, args.seed, args.queries)
        state.phase(f"{key}.activate", lambda: latencies(
            lambda i: ns.activate(asked[i]), args.queries))  # fmt: skip
        state.phase(f"{key}.context", lambda: latencies(
            lambda i: ns.recall_context(asked[i], 1000), args.queries // 2))  # fmt: skip


def scenario_tenants(state: State, admin_url: str, args: argparse.Namespace, shape: str) -> None:
    count, per = (int(part) for part in shape.split("x"))
    key = f"tenants.{shape}"
    url = database(admin_url, f"memstore_scale_t{shape}", args.build_memory)
    names = [f"tenant-{i:05d}" for i in range(count)]
    with open_store(url) as store:
        # A chunk never spans two namespaces; small tenants go one call each.
        state.phase(f"{key}.load", lambda: load(state, f"{key}.load", store, names, per,
                                                min(args.chunk, per), args.seed))  # fmt: skip
        state.phase(f"{key}.footprint", lambda: footprint(url))
        rng = random.Random(args.seed)
        picks = [rng.choice(names) for _ in range(args.queries)]
        asked = queries(store, args.seed, args.queries)

        def recall() -> dict[str, Any]:
            # First touch of a tenant (the store opens its namespace object and reads its
            # statistics), then the same recalls again with every tenant's object kept
            # (the store keeps 256: --queries should not exceed that).
            def run(i: int) -> Any:
                return store.namespace(picks[i]).recall(asked[i], k=10, mode="semantic")

            first = latencies(run, len(picks))
            again = latencies(run, len(picks))
            # The honest figure: recalls of tenants drawn at random from all of them, on
            # the store as the passes above left it (it keeps 256 namespace objects), so
            # a service with many tenants pays its first touches here as they come.
            drawn = [rng.choice(names) for _ in range(len(picks))]
            seen = set(picks[-256:])
            new = sum(1 for name in drawn if name not in seen and not seen.add(name))
            anyone = latencies(
                lambda i: store.namespace(drawn[i]).recall(asked[i], k=10, mode="semantic"),
                len(drawn),
            )
            return {
                **again,
                "first_touch": first,
                "random_tenant": {**anyone, "tenants_new": new},
                "tenants_touched": len(set(picks)),
            }

        state.phase(f"{key}.recall", recall)

        def ingest() -> dict[str, Any]:
            started = time.perf_counter()
            for i, name in enumerate(picks[:50]):
                store.namespace(name).remember_many(
                    [text_of(args.seed + 4, i * 100 + j) for j in range(20)]
                )
            return {"rows": 1000, "rows_per_s": round(1000 / (time.perf_counter() - started))}

        state.phase(f"{key}.ingest", ingest)


def report(state: State) -> None:
    for key, value in sorted(state.data.items()):
        if not key.endswith(".progress"):
            print(f"{key:40s} {json.dumps(value)}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--tenants", default="10000x100,10x100000")
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--live", type=int, default=2_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--build-memory",
        default="4GB",
        help="maintenance_work_mem for every index build (memstore's and raw's)",
    )
    parser.add_argument("--state", default="scale-state.json")
    parser.add_argument("--data-dir", default="~/.cache/memstore-scale")
    parser.add_argument("--database-url", default=os.environ.get("MEMSTORE_BENCH_DATABASE_URL"))
    parser.add_argument("--only", choices=["one", "tenants"], default=None)
    parser.add_argument("--report", action="store_true", help="print the state file and stop")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    state = State(Path(args.state).expanduser())
    if args.report:
        report(state)
        return 0
    command = shlex.join([".venv/bin/python", "benchmarks/scale.py", *sys.argv[1:]])
    machine = {"python": sys.version.split()[0], "platform": platform.platform(),
               "cpus": os.cpu_count(), "load_at_start": os.getloadavg(),
               "command": command}  # fmt: skip
    state.put("machine.last_run", machine)
    with server(args) as admin_url:
        if args.only in (None, "one"):
            scenario_one(state, admin_url, args)
        if args.only in (None, "tenants"):
            for shape in args.tenants.split(","):
                scenario_tenants(state, admin_url, args, shape.strip())
    report(state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
