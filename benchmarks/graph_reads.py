"""Graph reads on a power-law graph: ``ns.edges`` and ``ns.neighbours`` at 1-3 hops.

The graph, the namespace and the database are those of benchmarks/activation.py
(its ``GraphSpec``, ``load`` and ``--reuse``: a graph that benchmark loaded is
measured without loading again): ``size`` nodes, 5 edges a node drawn
Chung-Lu style from Zipf-like degree weights (hubs both ways), 1% of the edges
and 0.5% of the nodes tombstoned, some nodes revised.

For each depth in ``--depths``, ``--repeats`` calls each (after ``--warmup``
untimed ones), every call from a new random live, never revised node:

- ``edges``: ``ns.edges(node)`` (both directions, limit 100);
- ``neighbours`` at ``--limit`` (default 50: what a caller shows) and at
  10,000 (the most it returns: the whole reachable set, to see what the walk
  itself costs without a fan-out cap);
- ``activate``: ``ns.activate(seeds=[node], depth=d, fanout=16,
  both_directions=True)``, the capped walk, for scale.

Reports p50/p95 in ms and the median number of memories returned.

Commands (from the repository root)::

    .venv/bin/python benchmarks/graph_reads.py --sizes 10000
    .venv/bin/python benchmarks/graph_reads.py --sizes 10000,100000 --reuse
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
from activation import (
    GraphSpec,
    VectorsOnly,
    find_loaded,
    load,
    model_for,
    seed_pool,
    server,
)
from activation import parse_args as activation_args
from pgvector.psycopg import register_vector
from recall_scale import Clusters, log

from memstore import MemoryStore
from memstore.namespace import Namespace


def timed(call: Callable[[], int], warmup: int, repeats: int) -> dict[str, float]:
    for _ in range(warmup):
        call()
    times, sizes = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sizes.append(call())
        times.append((time.perf_counter() - t0) * 1000)
    return {
        "p50_ms": float(np.percentile(times, 50)),
        "p95_ms": float(np.percentile(times, 95)),
        "median_returned": float(np.median(sizes)),
    }


def measure(
    ns: Namespace, pool: np.ndarray[Any, Any], args: argparse.Namespace
) -> list[dict[str, Any]]:
    rng = np.random.default_rng(args.seed)
    rows: list[dict[str, Any]] = []

    def node() -> int:
        return int(rng.choice(pool))

    rows.append(
        {"read": "edges", "depth": 1,
         **timed(lambda: len(ns.edges(node())), args.warmup, args.repeats)}
    )  # fmt: skip
    for depth in args.depth_list:
        for limit in (args.limit, 10_000):
            rows.append(
                {
                    "read": f"neighbours limit {limit}",
                    "depth": depth,
                    **timed(
                        lambda d=depth, n=limit: len(ns.neighbours(node(), depth=d, limit=n)),
                        args.warmup,
                        args.repeats,
                    ),
                }
            )
        rows.append(
            {
                "read": "activate fanout 16",
                "depth": depth,
                **timed(
                    lambda d=depth: (
                        ns.activate(seeds=[node()], depth=d, both_directions=True).stats.nodes
                    ),
                    args.warmup,
                    args.repeats,
                ),
            }
        )
    return rows


def run_size(
    size: int, args: argparse.Namespace, url: str, clusters: Clusters
) -> list[dict[str, Any]]:
    spec = GraphSpec.of(size, args)
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as raw:
        installed = raw.execute("SELECT to_regclass('memstore.namespaces')").fetchone()
        name = find_loaded(raw, spec) if args.reuse and installed and installed[0] else None
        reused = name is not None
        name = name or spec.prefix + datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        log(f"=== {size:,} nodes: namespace {name} ({'reused' if reused else 'new'})")
        with MemoryStore.open(
            url, embedder=VectorsOnly(model_for(name)), auto_upgrade=True
        ) as store:
            ns = store.namespace(name)
            register_vector(raw)
            if not reused:
                load(store, ns, raw, spec, clusters)
            pool = seed_pool(raw, ns.id)
            return [{"size": size, **row} for row in measure(ns, pool, args)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=50, help="neighbours' usual limit")
    own, rest = parser.parse_known_args(argv)
    defaults = ["--depths", "1,2,3", "--repeats", "50", "--warmup", "5"]
    args = activation_args([*defaults, *rest])
    args.limit = own.limit
    clusters = Clusters.make(args.seed, args.clusters, args.spread, args.noise)
    rows: list[dict[str, Any]] = []
    with server(args) as (url, description):
        for size in args.size_list:
            rows.extend(run_size(size, args, url, clusters))
    print(f"\n{description}; {args.repeats} calls each\n")
    print("| nodes | read | depth | p50 ms | p95 ms | median returned |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['size']:,} | {r['read']} | {r['depth']} | {r['p50_ms']:.1f}"
            f" | {r['p95_ms']:.1f} | {r['median_returned']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
