"""memstore side by side with a peer: LangGraph's PostgresStore with its pgvector index.

The peer (``langgraph-checkpoint-postgres``) is installed only in the benchmark
environment (``make bench`` builds ``.venv-bench`` from benchmarks/requirements.txt);
it is never a memstore dependency. Both stores, and a raw pgvector table as the
floor, run on the **same PostgreSQL server** in one fresh database per size, and
receive the **same vectors**: memstore gets numpy arrays as the ``embedding`` of
each item, the peer an ``index={"dims": 384, "embed": f, "fields": ["text"]}``
whose ``f`` maps each stored text ("d:<i>", "l:<i>", "q:<i>") to the prepared
vector, as a list of floats (the Embeddings contract). Data: recall_scale.py's
clustered 384-d vectors with the same --seed, so sizes are prefixes of each other.

Per size N (``--sizes``):

1. time to first search: a bulk import of N items into an empty store, then
   one k=10 search. memstore: ``remember_many`` into an empty namespace of a
   model with no index yet (the HNSW index is built after the load) + ``recall``;
   raw: binary COPY into an unindexed table + CREATE INDEX + one query; peer:
   ``setup()`` (which creates its HNSW index on the empty table) + ``batch`` of
   PutOps, 1,000 per call, + ``search``. Goal: memstore <= 1/5 of the peer.
2. search k=10 on the N items: memstore ``recall(mode="semantic")``, raw
   ``ORDER BY embedding <=> q LIMIT 10`` (memstore's hnsw.ef_search), peer
   ``search(("bench",), query=..., limit=10)`` (its defaults), interleaved in
   rotating order, ``--rounds`` rounds of ``--queries`` queries; p50/p95 are
   the medians over rounds, recall@10 against exact numpy top-10. Goals:
   memstore p95 <= 1/3 of the peer's and <= 1.5x raw.
3. ingest into a live index: ``--live-sample`` new items (at most N/5) spread
   over 10 small namespaces, into the now indexed stores, order memstore, raw,
   peer, peer, raw, memstore (two halves) to cancel drift. Goals: memstore rows/s
   >= 90% of raw COPY into the indexed table and >= 1.7x the peer.
4. namespace-filtered search: each query in one of those 10 namespaces (each
   with more than k items): results returned, short results (fewer than k),
   recall@10 against the exact top-10 of that namespace. Goal: never short.

With ``--locomo EMBEDDERS`` the peer also answers LoCoMo (../shared/data, read
in place): one namespace ("locomo", sample_id) per conversation, each turn an
item keyed by its dia_id, every question searched with limit 20 in its
conversation's namespace; turn recall@k (k = 1..20) and session recall@5 exactly
as benchmarks/locomo.py scores memstore, plus short results (fewer than 10).

    .venv-bench/bin/python benchmarks/peer.py --sizes 10000 --locomo hashing --json /tmp/peer.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo
import recall_scale as rs

from memstore import MemoryStore
from memstore.embedding import cache
from memstore.recall import MIN_EF_SEARCH
from memstore.recall.query import RecallQuery

K = 10
NAMESPACES = 10  # small namespaces of the live sample
PUT_BATCH = 1000
GOALS = {
    "first_search_vs_peer": ("<=", 0.2),
    "live_ingest_vs_raw": (">=", 0.9),
    "live_ingest_vs_peer": (">=", 1.7),
    "search_p95_vs_peer": ("<=", 1 / 3),
    "search_p95_vs_raw": ("<=", 1.5),
    "namespace_short_results": ("<=", 0),
}
log = rs.log


def peer_store(url: str, embed: Callable[[Sequence[str]], list[list[float]]]) -> Any:
    """The peer's context manager, configured as its docs show (HNSW, cosine, one field)."""
    from langgraph.store.postgres import PostgresStore

    return PostgresStore.from_conn_string(
        url,
        index={
            "dims": rs.DIMS,
            "embed": embed,
            "fields": ["text"],
            "distance_type": "cosine",
            "ann_index_config": {
                "kind": "hnsw",
                "m": cache.HNSW_M,
                "ef_construction": cache.HNSW_EF_CONSTRUCTION,
            },
        },
    )


def peer_version() -> str:
    from importlib.metadata import version

    return version("langgraph-checkpoint-postgres")


class Lookup:
    """The peer's embed function: "d:<i>", "l:<i>", "q:<i>" to the prepared vectors."""

    def __init__(self, **tables: rs.Vectors) -> None:
        self.tables = tables

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            table, index = text.split(":", 1)
            out.append(self.tables[table][int(index)].tolist())
        return out


def put_all(
    peer: Any, namespace: tuple[str, ...], keys: Sequence[str], texts: Sequence[str]
) -> None:
    from langgraph.store.base import PutOp

    for start in range(0, len(keys), PUT_BATCH):
        peer.batch(
            [
                PutOp(namespace, key, {"text": text})
                for key, text in zip(
                    keys[start : start + PUT_BATCH], texts[start : start + PUT_BATCH], strict=True
                )
            ]
        )


def judge(values: dict[str, float]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, value in values.items():
        op, target = GOALS[name]
        met = value >= target if op == ">=" else value <= target
        out[name] = {"value": value, "goal": f"{op} {target:.3g}", "met": bool(met)}
    return out


def run_size(size: int, args: argparse.Namespace, admin_url: str) -> dict[str, Any]:
    clusters = rs.Clusters.make(args.seed, 1000, 0.35, 0.25)
    vectors, _ = rs.dataset(clusters, args.seed, size)
    queries = rs.extra_points(clusters, args.seed, 2, args.queries)
    live_n = min(args.live_sample, size // 5)
    live = rs.extra_points(clusters, args.seed, 3, live_n)
    database = f"memstore_bench_peer_{size}"
    log(f"=== peer comparison, {size:,} items: database {database}")
    rs.drop_database(admin_url, database)
    rs.admin(admin_url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    url = rs.with_database(admin_url, database)
    store = MemoryStore.open(url, embedder=rs.QueryEmbedder(rs.MODEL, queries), auto_upgrade=True)
    raw = psycopg.connect(url, autocommit=True)
    result: dict[str, Any] = {"size": size, "live_sample": live_n}
    try:
        register_vector(raw)
        result["server"] = rs.server_facts(raw)
        embed = Lookup(d=vectors, l=live, q=queries)
        with peer_store(url, embed) as peer:
            result.update(measure(size, args, store, raw, peer, vectors, queries, live))
    finally:
        raw.close()
        store.close()
        rs.drop_database(admin_url, database)
    result["goals"] = judge(
        {
            "first_search_vs_peer": result["first_search"]["memstore_vs_peer"],
            "live_ingest_vs_raw": result["ingest_live"]["memstore_vs_raw"],
            "live_ingest_vs_peer": result["ingest_live"]["memstore_vs_peer"],
            "search_p95_vs_peer": result["search"]["p95_memstore_vs_peer"],
            "search_p95_vs_raw": result["search"]["p95_memstore_vs_raw"],
            "namespace_short_results": result["namespace_search"]["memstore"]["short_results"],
        }
    )
    return result


def measure(
    size: int,
    args: argparse.Namespace,
    store: MemoryStore,
    raw: psycopg.Connection[Any],
    peer: Any,
    vectors: rs.Vectors,
    queries: rs.Vectors,
    live: rs.Vectors,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ef_search = max(MIN_EF_SEARCH, RecallQuery(text="q:0", k=K).pool)
    raw_sql = rs.raw_search_sql(K)

    # 1. time to first search ------------------------------------------------------------
    ns = store.namespace("bench")
    items = [
        {"content": f"bench memory {i}", "kind": "episodic", "embedding": vectors[i]}
        for i in range(size)
    ]
    log(f"first search: memstore remember_many of {size:,} items, then recall")
    rs.checkpoint(raw)
    t0 = time.perf_counter()
    ids = ns.remember_many(items, batch_size=1000)
    loaded = time.perf_counter()
    ns.recall("q:0", k=K, mode="semantic")
    m_first = time.perf_counter() - t0
    m_import = loaded - t0
    del items
    index_of = {node_id: i for i, node_id in enumerate(ids)}
    log(f"  memstore: {m_first:.1f} s (import {m_import:.1f} s)")

    log(f"first search: raw COPY of {size:,} rows + CREATE INDEX + one query")
    raw.execute(
        sql.SQL("CREATE TABLE {} (id bigint, embedding vector({}))").format(
            sql.Identifier(rs.RAW_TABLE), sql.Literal(rs.DIMS)
        )
    )
    rs.checkpoint(raw)
    t0 = time.perf_counter()
    rs.raw_copy(raw, np.arange(size), vectors)
    raw.execute(
        sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(rs.MAINTENANCE_WORK_MEM))
    )
    raw.execute(rs.raw_index_ddl())
    raw.execute("RESET maintenance_work_mem")
    raw.execute(raw_sql, (queries[0],)).fetchall()
    r_first = time.perf_counter() - t0
    log(f"  raw: {r_first:.1f} s")

    log(f"first search: peer setup() + {size:,} puts ({PUT_BATCH} per batch) + search")
    rs.checkpoint(raw)
    t0 = time.perf_counter()
    peer.setup()
    t1 = time.perf_counter()
    put_all(peer, ("bench",), [f"d{i}" for i in range(size)], [f"d:{i}" for i in range(size)])
    t2 = time.perf_counter()
    peer.search(("bench",), query="q:0", limit=K)
    p_first = time.perf_counter() - t0
    log(f"  peer: {p_first:.1f} s ({size / (t2 - t1):.0f} puts/s)")
    out["first_search"] = {
        "memstore_s": m_first,
        "memstore_import_s": m_import,
        "raw_s": r_first,
        "peer_s": p_first,
        "peer_put_rows_per_s": size / (t2 - t1),
        "memstore_vs_peer": m_first / p_first,
        "memstore_vs_raw": m_first / r_first,
    }

    # 2. search ------------------------------------------------------------------------------
    raw.execute(
        sql.SQL("ANALYZE memstore.nodes, memstore.embeddings, {}, store, store_vectors").format(
            sql.Identifier(rs.RAW_TABLE)
        )
    )
    raw.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(ef_search)))
    truth = rs.exact_topk(vectors, queries, K)

    def m_search(i: int) -> list[int]:
        return [index_of[h.node.id] for h in ns.recall(f"q:{i}", k=K, mode="semantic")]

    def r_search(i: int) -> list[int]:
        return [int(r[0]) for r in raw.execute(raw_sql, (queries[i],)).fetchall()]

    def p_search(i: int) -> list[int]:
        return [int(item.key[1:]) for item in peer.search(("bench",), query=f"q:{i}", limit=K)]

    sides = {"memstore": m_search, "raw": r_search, "peer": p_search}
    out["search"] = interleaved(sides, args, truth)
    raw.execute("RESET hnsw.ef_search")

    # 3. ingest into a live index ------------------------------------------------------------
    n = len(live)
    groups = np.array_split(np.arange(n), NAMESPACES)
    half = NAMESPACES // 2
    log(f"live ingest: {n:,} items in {NAMESPACES} namespaces, order m r p p r m")

    live_index: dict[int, int] = {}  # memstore node id -> row of ``live``

    def m_part(which: range) -> float:
        rs.checkpoint(raw)
        t0 = time.perf_counter()
        for g in which:
            got = store.namespace(f"t{g}").remember_many(
                [
                    {"content": f"live memory {i}", "kind": "episodic", "embedding": live[i]}
                    for i in groups[g]
                ],
                batch_size=1000,
            )
            live_index.update(zip(got, map(int, groups[g]), strict=True))
        return time.perf_counter() - t0

    def r_part(which: range) -> float:
        rs.checkpoint(raw)
        rows = np.concatenate([groups[g] for g in which])
        t0 = time.perf_counter()
        rs.raw_copy(raw, size + rows, live[rows])
        return time.perf_counter() - t0

    def p_part(which: range) -> float:
        rs.checkpoint(raw)
        t0 = time.perf_counter()
        for g in which:
            put_all(peer, (f"t{g}",), [f"l{i}" for i in groups[g]], [f"l:{i}" for i in groups[g]])
        return time.perf_counter() - t0

    first, second = range(half), range(half, NAMESPACES)
    times = {"memstore": m_part(first), "raw": r_part(first)}
    times["peer"] = p_part(first) + p_part(second)
    times["raw"] += r_part(second)
    times["memstore"] += m_part(second)
    rates = {side: n / t for side, t in times.items()}
    log("  " + ", ".join(f"{side} {rate:.0f} rows/s" for side, rate in rates.items()))
    out["ingest_live"] = {
        "rows": n,
        "namespaces": NAMESPACES,
        "index_rows_before": size,
        **{f"{side}_rows_per_s": rate for side, rate in rates.items()},
        "memstore_vs_raw": rates["memstore"] / rates["raw"],
        "memstore_vs_peer": rates["memstore"] / rates["peer"],
    }

    # 4. namespace-filtered search ------------------------------------------------------------
    raw.execute("ANALYZE memstore.nodes, memstore.embeddings, store, store_vectors")
    log(f"namespace search: {args.queries} queries, each in one of the {NAMESPACES} namespaces")
    ns_truth = []
    for i in range(len(queries)):
        members = groups[i % NAMESPACES]
        best = rs.exact_topk(live[members], queries[i : i + 1], K)[0]
        ns_truth.append([int(members[j]) for j in best])

    def m_ns(i: int) -> list[int]:
        nsg = store.namespace(f"t{i % NAMESPACES}")
        return [live_index[h.node.id] for h in nsg.recall(f"q:{i}", k=K, mode="semantic")]

    def p_ns(i: int) -> list[int]:
        found = peer.search((f"t{i % NAMESPACES}",), query=f"q:{i}", limit=K)
        return [int(item.key[1:]) for item in found]

    out["namespace_search"] = interleaved({"memstore": m_ns, "peer": p_ns}, args, ns_truth)
    out["namespace_search"]["items_per_namespace"] = [len(g) for g in groups]
    return out


def interleaved(
    sides: dict[str, Callable[[int], list[int]]],
    args: argparse.Namespace,
    truth: list[list[int]],
) -> dict[str, Any]:
    """Every side answers every query in rotating order, ``--rounds`` times; medians over rounds."""
    names = list(sides)
    n = len(truth)
    for i in range(min(args.warmup, n)):
        for fn in sides.values():
            fn(i)
    rounds: list[dict[str, dict[str, float]]] = []
    found: dict[str, list[list[int]]] = {name: [] for name in names}
    for r in range(args.rounds):
        times: dict[str, list[float]] = {name: [] for name in names}
        for i in range(n):
            shift = (i + r) % len(names)
            for name in names[shift:] + names[:shift]:
                t0 = time.perf_counter()
                got = sides[name](i)
                times[name].append(time.perf_counter() - t0)
                if r == 0:
                    found[name].append(got)
        rounds.append({name: rs.percentiles(t) for name, t in times.items()})
    out: dict[str, Any] = {"queries": n, "rounds": args.rounds, "k": K}
    for name in names:
        out[name] = {
            "p50_ms": statistics.median(x[name]["p50_ms"] for x in rounds),
            "p95_ms": statistics.median(x[name]["p95_ms"] for x in rounds),
            "rounds_p50_ms": [x[name]["p50_ms"] for x in rounds],
            "rounds_p95_ms": [x[name]["p95_ms"] for x in rounds],
            "recall_at_10": rs.recall_at(found[name], truth, K),
            "short_results": sum(len(f) < K for f in found[name]),
            "results_min": min(len(f) for f in found[name]),
        }
        log(
            f"  {name}: p50 {out[name]['p50_ms']:.2f} ms, p95 {out[name]['p95_ms']:.2f} ms,"
            f" recall@10 {out[name]['recall_at_10']:.3f}, short {out[name]['short_results']}"
        )
    for other in names[1:]:
        for p in ("p50", "p95"):
            # the ratio within each round, then the median over rounds
            out[f"{p}_memstore_vs_{other}"] = statistics.median(
                x["memstore"][f"{p}_ms"] / x[other][f"{p}_ms"] for x in rounds
            )
    return out


# --- LoCoMo ---------------------------------------------------------------------------


def locomo_peer(admin_url: str, embedder_name: str, data: Path) -> dict[str, Any]:
    """The peer on LoCoMo, and memstore's semantic recall beside it in the same process:
    each question goes to both stores, in alternating order, so their latencies compare
    (separate runs on the shared cores drifted by 2x; the embedder dominates both)."""
    conversations = locomo.load(data)
    embedder = locomo.make_embedder(embedder_name)
    database = "memstore_bench_peer_locomo"
    rs.drop_database(admin_url, database)
    rs.admin(admin_url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    url = rs.with_database(admin_url, database)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [row.tolist() for row in embedder.embed(list(texts))]

    scores = locomo.Scores()
    ours = locomo.Scores()
    # memstore's LangGraph adapter on the same data and embedder: semantic (the peer's kind
    # of search) and hybrid (its default), with native hybrid recall for its overhead.
    adapted = {"semantic": locomo.Scores(), "hybrid": locomo.Scores()}
    ours_hybrid = locomo.Scores()
    short = 0
    log(f"LoCoMo on the peer, memstore and its LangGraph adapter with the {embedder.name} embedder")
    store = MemoryStore.open(url, embedder=embedder, auto_upgrade=True)
    adapters = {mode: adapter_store(store, mode) for mode in adapted}
    try:
        with peer_store(url, embed) as peer:
            peer.setup()
            t0 = time.perf_counter()
            for c in conversations:
                put_all(
                    peer,
                    ("locomo", c.sample_id),
                    [t["dia_id"] for t in c.turns],
                    [t["content"] for t in c.turns],
                )
            ingest_s = time.perf_counter() - t0
            stored = [locomo.ingest(store, c, "locomo") for c in conversations]
            t0 = time.perf_counter()
            for c in conversations:
                put_all(
                    adapters["hybrid"],
                    ("adapter", c.sample_id),
                    [t["dia_id"] for t in c.turns],
                    [t["content"] for t in c.turns],
                )
            adapter_ingest_s = time.perf_counter() - t0
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ANALYZE")
            turn = 0
            for c, (ns, dia_ids) in zip(conversations, stored, strict=True):
                for q in c.questions:
                    turn += 1
                    sides = ["peer", "memstore", "adapter semantic", "memstore hybrid"]
                    sides += ["adapter hybrid"]
                    for side in sides[turn % len(sides) :] + sides[: turn % len(sides)]:
                        started = time.perf_counter()
                        if side.startswith("adapter"):
                            mode = side.split()[1]
                            found = adapters[mode].search(
                                ("adapter", c.sample_id), query=q.text, limit=20
                            )
                            adapted[mode].latencies.append(time.perf_counter() - started)
                            locomo.score_ranking(q, [item.key for item in found], adapted[mode])
                        elif side == "memstore hybrid":
                            hits = ns.recall(q.text, k=20)
                            ours_hybrid.latencies.append(time.perf_counter() - started)
                            ids = [hit.node.id for hit in hits]
                            locomo.score_ranking(q, locomo.ranked_turns(ids, dia_ids), ours_hybrid)
                        elif side == "peer":
                            found = peer.search(("locomo", c.sample_id), query=q.text, limit=20)
                            scores.latencies.append(time.perf_counter() - started)
                            ranked = [item.key for item in found]
                            short += len(ranked) < K
                            locomo.score_ranking(q, ranked, scores)
                        else:
                            hits = ns.recall(q.text, k=20, mode="semantic")
                            ours.latencies.append(time.perf_counter() - started)
                            ids = [hit.node.id for hit in hits]
                            locomo.score_ranking(q, locomo.ranked_turns(ids, dia_ids), ours)
    finally:
        store.close()
        rs.drop_database(admin_url, database)
    summary = locomo.summary(scores)
    memstore_semantic = locomo.summary(ours)
    log(
        f"  peer LoCoMo ({embedder.name}): R@10 {summary['turn_recall'][10]:.3f},"
        f" {short} of {summary['questions']} questions got fewer than {K} results;"
        f" memstore semantic R@10 {memstore_semantic['turn_recall'][10]:.3f}"
    )
    adapter = {mode: locomo.summary(adapted[mode]) for mode in adapted}
    memstore_hybrid = locomo.summary(ours_hybrid)
    log(
        f"  adapter LoCoMo: semantic R@10 {adapter['semantic']['turn_recall'][10]:.3f}"
        f" p50 {adapter['semantic']['latency_ms']['p50']:.2f} ms (native"
        f" {memstore_semantic['latency_ms']['p50']:.2f}), hybrid R@10"
        f" {adapter['hybrid']['turn_recall'][10]:.3f} p50"
        f" {adapter['hybrid']['latency_ms']['p50']:.2f} ms (native"
        f" {memstore_hybrid['latency_ms']['p50']:.2f}); ingest {adapter_ingest_s:.1f} s"
        f" (peer {ingest_s:.1f} s)"
    )
    return {
        "embedder": embedder.name,
        "ingest_s": ingest_s,
        "short_results": short,
        **summary,
        "memstore_semantic": memstore_semantic,
        "memstore_hybrid": memstore_hybrid,
        "adapter": {**adapter, "ingest_s": adapter_ingest_s},
    }


# --- memstore's LangGraph adapter beside memstore's own calls --------------------------

ADAPTER_GOAL = 1.2  # the adapter's p50 and p95 over the native call's


def adapter_store(store: MemoryStore, mode: str) -> Any:
    """memstore.integrations.langgraph over ``store``: its embedder, the "text" field."""
    from memstore.integrations.langgraph import MemstoreStore

    return MemstoreStore(store, index={"fields": ["text"]}, mode=mode)  # type: ignore[arg-type]


def adapter_texts(count: int, data: Path) -> list[str]:
    """LoCoMo's turns (repeated with a number when there are fewer), else made-up sentences."""
    turns: list[str] = []
    if data.exists():
        turns = [t["content"] for c in locomo.load(data) for t in c.turns]
    if not turns:
        rng = np.random.default_rng(1)
        words = [f"w{i}" for i in range(2000)]
        turns = [" ".join(rng.choice(words, 12)) for _ in range(count)]
    return [f"{turns[i % len(turns)]} ({i})" for i in range(count)]


def adapter_overhead(admin_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """The adapter's put, get and search beside the native calls they stand for, in one
    fresh database, one operation of each side in turn (rotating order).

    put: ``store.put(ns, key, {"text": t})`` beside ``ns.remember(t)`` and beside
    ``ns.keyed("langgraph").put(key, t, data=...)`` (the native keyed verb the adapter
    calls: a key lookup under a lock, then remember or revise); get: ``store.get`` beside
    ``ns.get(node_id)`` and the keyed get; search: ``store.search(ns, query=q, limit=10)``
    beside ``ns.recall(q, k=10)`` (hybrid both).
    """
    from memstore.integrations.langgraph import TIER

    count = args.adapter
    database = "memstore_bench_adapter"
    rs.drop_database(admin_url, database)
    rs.admin(admin_url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    url = rs.with_database(admin_url, database)
    texts = adapter_texts(count, args.data)
    queries = [" ".join(t.split()[:6]) for t in texts[:: max(1, count // args.queries)]]
    samples: dict[str, list[float]] = {
        name: [] for name in ("put", "remember", "keyed put", "get", "node get", "keyed get",
                              "search", "recall")
    }  # fmt: skip
    log(f"LangGraph adapter beside native calls: {count:,} items, {len(queries)} queries")
    store = MemoryStore.open(url, auto_upgrade=True)
    try:
        adapter = adapter_store(store, "hybrid")
        lg_ns = ("bench", "adapter")
        native = store.namespace("bench.native")
        keyed = store.namespace("bench.keyed").keyed(TIER)
        node_ids: list[int] = []

        def timed(name: str, call: Callable[[], Any]) -> Any:
            started = time.perf_counter()
            result = call()
            samples[name].append(time.perf_counter() - started)
            return result

        for i, text in enumerate(texts):
            key, value = f"k{i}", {"text": text}
            calls: list[tuple[str, Callable[[], Any]]] = [
                ("put", lambda k=key, v=value: adapter.put(lg_ns, k, v)),
                ("remember", lambda t=text: node_ids.append(native.remember(t).id)),
                ("keyed put", lambda k=key, t=text, v=value: keyed.put(k, t, data=v)),
            ]
            for name, call in calls[i % 3 :] + calls[: i % 3]:
                timed(name, call)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        rng = np.random.default_rng(args.seed)
        for j, i in enumerate(rng.integers(0, count, size=min(count, 2000))):
            calls = [
                ("get", lambda i=i: adapter.get(lg_ns, f"k{i}")),
                ("node get", lambda i=i: native.get(node_ids[i])),
                ("keyed get", lambda i=i: keyed.get([f"k{i}"])),
            ]
            for name, call in calls[j % 3 :] + calls[: j % 3]:
                timed(name, call)
        for _ in range(args.rounds):
            for j, q in enumerate(queries):
                calls = [
                    ("search", lambda q=q: adapter.search(lg_ns, query=q, limit=K)),
                    ("recall", lambda q=q: native.recall(q, k=K)),
                ]
                for name, call in calls[j % 2 :] + calls[: j % 2]:
                    timed(name, call)
    finally:
        store.close()
        rs.drop_database(admin_url, database)
    stats = {name: rs.percentiles(values) for name, values in samples.items()}
    ratios = {}
    for ours, theirs in [("put", "remember"), ("put", "keyed put"), ("get", "node get"),
                         ("get", "keyed get"), ("search", "recall")]:  # fmt: skip
        for p in ("p50_ms", "p95_ms"):
            ratio = stats[ours][p] / stats[theirs][p]
            ratios[f"{ours} / {theirs} {p[:3]}"] = {
                "value": ratio,
                "goal": f"<= {ADAPTER_GOAL}",
                "met": ratio <= ADAPTER_GOAL,
            }
    for name, r in ratios.items():
        log(f"  {name}: {r['value']:.2f} ({'met' if r['met'] else 'MISS'} {r['goal']})")
    return {"items": count, "queries": len(queries), "latency": stats, "ratios": ratios}


# --- driver ---------------------------------------------------------------------------


@contextlib.contextmanager
def server(database_url: str | None) -> Iterator[tuple[str, str]]:
    with rs.server(database_url) as found:
        yield found


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="memstore vs LangGraph PostgresStore vs raw pgvector, one server, same vectors",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--sizes", default="10000,100000", help="comma-separated item counts")
    p.add_argument("--queries", type=int, default=200, help="search queries per round")
    p.add_argument("--rounds", type=int, default=3, help="search rounds (medians over rounds)")
    p.add_argument("--warmup", type=int, default=20, help="untimed queries per side")
    p.add_argument("--live-sample", type=int, default=5000, help="live-index items (<= size/5)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--locomo",
        default="",
        help="comma-separated embedders for LoCoMo on the peer (hashing,neural)",
    )
    p.add_argument("--data", type=Path, default=locomo.DATA)
    p.add_argument(
        "--adapter",
        type=int,
        default=0,
        help="items for the LangGraph adapter beside native calls (0: skip)",
    )
    p.add_argument(
        "--database-url",
        default=os.environ.get("MEMSTORE_DATABASE_URL"),
        help="server to use (env MEMSTORE_DATABASE_URL; role needs CREATEDB); default: embedded",
    )
    p.add_argument("--json", default=None, help="write every number as JSON here")
    args = p.parse_args(argv)
    args.size_list = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if any(s < 5 * NAMESPACES * K for s in args.size_list):
        p.error(f"--sizes needs sizes of at least {5 * NAMESPACES * K}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    report: dict[str, Any] = {
        "benchmark": "peer",
        "peer": f"langgraph-checkpoint-postgres {peer_version()}",
        "args": {k: v for k, v in vars(args).items() if k not in ("database_url", "data")},
        "goals": {name: f"{op} {target:.3g}" for name, (op, target) in GOALS.items()},
        "results": [],
        "locomo": [],
        "adapter": None,
    }

    def save() -> None:
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2, default=float) + "\n")

    with server(args.database_url) as (admin_url, description):
        report["environment"] = rs.environment(description)
        for size in args.size_list:
            report["results"].append(run_size(size, args, admin_url))
            save()
        if args.adapter:
            report["adapter"] = adapter_overhead(admin_url, args)
            save()
        for name in [e for e in args.locomo.split(",") if e]:
            if not args.data.exists():
                log(f"LoCoMo data not found at {args.data}: skipped")
                break
            report["locomo"].append(locomo_peer(admin_url, name, args.data))
            save()
    for r in report["results"]:
        for name, g in r["goals"].items():
            print(
                f"{r['size']:>9,}  {'met ' if g['met'] else 'MISS'}  {name} = {g['value']:.3f}"
                f" (goal {g['goal']})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
