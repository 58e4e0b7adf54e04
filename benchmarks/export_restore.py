"""Export and restore of one namespace, against raw COPY TO / COPY FROM of the same tables.

Seeds a namespace with ``--size`` memories (``remember_many``: binary COPY, the
hashing embedder) and as many edges (COPY as
the owner), then measures, each in a fresh child process so its peak RSS is its
own:

- ``ns.export(path)`` without and with ``--with-vectors``;
- ``store.restore(path, namespace=NEW)`` of each file (without vectors the
  store's embedder computes them in the restore's transaction);
- raw ``COPY (SELECT … WHERE namespace_id = …) TO STDOUT`` of nodes, edges and
  embeddings to files, and ``COPY … FROM STDIN`` of those files into plain
  copies of the tables (no indexes, triggers or id remapping): the floor.

No HNSW index is built in this run (``ensure_index`` is switched off in the
benchmark's processes): with the model's index in place every vector waits for
HNSW insertion, a few hundred rows/s per backend whatever wrote it, and a
restore (like ``remember_many``) builds a missing index after its commit at
CREATE INDEX speed — both pgvector's cost, measured in recall_scale.py, not
the export's or the restore's. Raw COPY builds none either.

Rows/s counts every line of the file (memories, edges, vectors, …) for export
and restore, and every row copied for raw COPY. Peak RSS is the child's
``ru_maxrss``; ``py peak`` is tracemalloc's peak of Python allocations during
the call, the number that would grow if anything were held per row.

Usage (embedded server in a temporary directory, or ``--database-url`` of a
superuser on a scratch database)::

    .venv/bin/python benchmarks/export_restore.py --size 100000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg import sql

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder, cache

TABLES = ("nodes", "edges", "embeddings")


def _owner_url(store: MemoryStore) -> str:
    url = sa.engine.make_url(store._url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _no_index() -> None:
    """Switch off the HNSW index build (see above), in this process."""
    from memstore.services import snapshot

    snapshot.cache.ensure_index = lambda *args, **kwargs: False  # type: ignore[assignment]
    cache.ensure_index = snapshot.cache.ensure_index


def child(args: argparse.Namespace) -> None:
    """One measured step, in its own process; prints one JSON line."""
    _no_index()
    with MemoryStore.open(args.database_url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(args.namespace)
        ns.exists()
        before = _rss_mb()
        tracemalloc.start()
        start = time.perf_counter()
        result: dict[str, Any] = {}
        if args.phase == "export":
            summary = ns.export(args.file, with_vectors=args.with_vectors)
            result["rows"] = sum(summary.rows.values()) + 2
            result["bytes"] = summary.bytes
        elif args.phase == "restore":
            marks: dict[str, float] = {}

            def mark(section: str, count: int) -> None:
                marks[section] = time.perf_counter() - start

            restored = store.restore(
                args.file, namespace=f"{args.namespace}-r-{uuid.uuid4().hex[:6]}", progress=mark
            )
            result["rows"] = sum(restored.rows.values()) + restored.vectors_restored
            result["embedded"] = restored.vectors_embedded
            result["until_vectors_seconds"] = marks["vectors"]
        elif args.phase == "raw_out":
            result["rows"] = _raw_out(_owner_url(store), ns.id, Path(args.file))
        elif args.phase == "raw_in":
            result["rows"] = _raw_in(_owner_url(store), Path(args.file))
        elif args.phase != "idle":
            raise SystemExit(f"unknown phase {args.phase}")
        result["seconds"] = time.perf_counter() - start
        result["py_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        result["rss_before_mb"] = before
        result["rss_peak_mb"] = _rss_mb()
    print(json.dumps(result))


def _raw_out(url: str, namespace_id: int, directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    rows = 0
    with psycopg.connect(url) as conn:
        for table in TABLES:
            query = sql.SQL("COPY (SELECT * FROM memstore.{} WHERE namespace_id = {}) TO STDOUT")
            statement = query.format(sql.Identifier(table), sql.Literal(namespace_id))
            with open(directory / f"{table}.copy", "wb") as out, conn.cursor() as cur:
                with cur.copy(statement) as copy:
                    for block in copy:
                        out.write(block)
                        rows += bytes(block).count(b"\n")
    return rows


def _raw_in(url: str, directory: Path) -> int:
    rows = 0
    with psycopg.connect(url) as conn:
        for table in TABLES:
            target = sql.Identifier(f"bench_raw_{table}_{uuid.uuid4().hex[:6]}")
            # Same columns, no indexes, triggers or constraints: what COPY alone costs.
            conn.execute(
                sql.SQL("CREATE TABLE {} (LIKE memstore.{})").format(target, sql.Identifier(table))
            )
            with open(directory / f"{table}.copy", "rb") as src, conn.cursor() as cur:
                with cur.copy(sql.SQL("COPY {} FROM STDIN").format(target)) as copy:
                    while block := src.read(1 << 20):
                        copy.write(block)
                rows += max(cur.rowcount, 0)
            conn.execute(sql.SQL("DROP TABLE {}").format(target))
        conn.commit()
    return rows


def _run(
    args: argparse.Namespace, url: str, phase: str, file: Path, **flags: bool
) -> dict[str, Any]:
    command = [
        sys.executable, __file__, "--child", phase, "--database-url", url,
        "--namespace", args.namespace, "--file", str(file),
    ]  # fmt: skip
    if flags.get("with_vectors"):
        command.append("--with-vectors")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{phase} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _seed(store: MemoryStore, name: str, size: int) -> None:
    ns = store.namespace(name)
    start = time.perf_counter()
    ids = ns.remember_many(
        [f"memory {i}: agent {i % 97} noted topic {i % 1013} at step {i}" for i in range(size)]
    )
    with psycopg.connect(_owner_url(store)) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY memstore.edges (namespace_id, src, dst, relation, weight) FROM STDIN"
        ) as copy:
            for i in range(size):
                dst = ids[(i * 7 + 1) % size]
                if dst != ids[i]:
                    copy.write_row((ns.id, ids[i], dst, "related", 0.5))
    print(f"seeded {size} memories and edges in {time.perf_counter() - start:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--child", dest="phase", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--namespace", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--file", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--with-vectors", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase is not None:
        child(args)
        return
    _no_index()
    settings = Settings(data_dir=tempfile.mkdtemp(prefix="memstore-bench-export-"))
    work = Path(tempfile.mkdtemp(prefix="memstore-bench-export-files-"))
    with MemoryStore.open(
        args.database_url, settings=settings, embedder=HashingEmbedder()
    ) as store:
        args.namespace = f"export-bench-{uuid.uuid4().hex[:6]}"
        _seed(store, args.namespace, args.size)
        url = store._url
        results: dict[str, dict[str, Any]] = {}
        results["idle"] = _run(args, url, "idle", work)
        plain, vectors = work / "plain.jsonl", work / "vectors.jsonl"
        steps = [
            ("export", "export", plain, False),
            ("export --with-vectors", "export", vectors, True),
            ("raw COPY TO", "raw_out", work / "raw", False),
            ("restore (re-embed)", "restore", plain, False),
            ("restore --with-vectors", "restore", vectors, False),
            ("raw COPY FROM", "raw_in", work / "raw", False),
        ]
        for label, phase, file, with_vectors in steps:
            print(f"{label} ...", flush=True)
            results[label] = _run(args, url, phase, file, with_vectors=with_vectors)
            print(f"  {json.dumps(results[label])}", flush=True)
    idle = results.pop("idle")
    print(
        f"\n{args.size} memories + {args.size} edges;"
        f" child process idle RSS {idle['rss_peak_mb']:.0f} MB"
    )
    print(
        f"{'step':24} {'rows':>8} {'seconds':>8} {'rows/s':>8}"
        f" {'peak RSS MB':>11} {'py peak MB':>10}"
    )
    for label, r in results.items():
        print(
            f"{label:24} {r['rows']:>8} {r['seconds']:>8.1f} {r['rows'] / r['seconds']:>8.0f}"
            f" {r['rss_peak_mb']:>11.0f} {r['py_peak_mb']:>10.1f}"
        )
    sizes = {p.name: p.stat().st_size for p in (plain, vectors)}
    print(f"file sizes: {sizes}")


if __name__ == "__main__":
    main()
