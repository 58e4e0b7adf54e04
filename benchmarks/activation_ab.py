"""Activation, old code against new, call by call on one loaded graph (benchmarks/activation.py).

Absolute times on a shared machine drift by tens of percent between runs, so a
change to the pull is measured by running both versions *interleaved*: two
worker processes, one importing memstore from ``--base`` (a checkout of the
older commit, e.g. ``git worktree add /tmp/act-base 7747cc2``), one from
``--head`` (this tree), answer the same calls in lock step — the same seeds
and query vectors as benchmarks/activation.py draws, the sides in rotating
order, one call at a time so they never compete for the CPU. The raw CTE runs
once per call, in the head worker.

Both versions use the same database, so the same cache: the head worker opens
the store (migrating the database to its head revision), and the base worker
installs the base tree's sql/05_neighbourhood.sql in a scratch schema
``actbase`` (its function names rewritten, tables untouched) and calls
``actbase.neighbourhood(...)``; it skips the schema revision check, since the
database is at the newer revision. If the database holds an earlier draft of
the head revision, ``--refresh-sql`` re-runs the head's newest migration SQL.

The graph must be loaded first (benchmarks/activation.py without --reuse, same
--data-dir). Development tool: it monkeypatches the base worker's memstore.

    .venv/bin/python benchmarks/activation.py --sizes 10000,100000 --repeats 20 \\
        --data-dir /tmp/act-data
    .venv/bin/python benchmarks/activation_ab.py --base /tmp/act-base --size 100000 \\
        --depths 2,3 --repeats 60 --data-dir /tmp/act-data
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SIDES = (
    ("base", "activate"),
    ("head", "activate"),
    ("base", "pull_score"),
    ("head", "pull_score"),
    ("head", "raw"),
)
BASE_FUNCTIONS = (
    "node_visible",
    "resolved_version",
    "own_versions",
    "live_end",
    "heaviest_edges",
    "neighbourhood",
    "neighbourhood_v2",
    "neighbourhood_v3",
    "plain_edges",
    "current_of",
    "node_rows",
)
# Numbers are compared between the sides with this relative tolerance: node
# ages come from now(), which moves between two calls by milliseconds, and
# salience (so every activation) moves with them by ~1e-6 on this graph.
RTOL = 1e-4


def worker(role: str, tree: str, url: str, size: int) -> None:
    """Serve calls (one JSON line each) with the memstore of ``tree`` (on PYTHONPATH)."""
    sys.path.insert(0, str(Path(tree) / "benchmarks"))
    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector

    import memstore.db.migrate as migrate

    if role == "base":
        migrate.require_current = lambda conn: None  # type: ignore[assignment]
        # The base's statements call its own functions, installed in actbase.
        pull_module = importlib.import_module("memstore.activation.pull")
        calls = re.compile(r"memstore\.(" + "|".join(BASE_FUNCTIONS) + r")\(")
        for statement in ("PULL", "NODE_ROWS"):
            if hasattr(pull_module, statement):
                text = getattr(pull_module, statement).as_string(None)
                setattr(
                    pull_module, statement, type(pull_module.PULL)(calls.sub(r"actbase.\1(", text))
                )
    bench = importlib.import_module("activation")
    from memstore import MemoryStore

    args = bench.parse_args(["--sizes", str(size)])
    spec = bench.GraphSpec.of(size, args)
    raw = psycopg.connect(url, autocommit=True, prepare_threshold=None)
    register_vector(raw)
    name = bench.find_loaded(raw, spec)
    if name is None:
        raise SystemExit(f"no complete load of {size} nodes: run benchmarks/activation.py first")
    if role == "base":
        sql = (Path(tree) / "sql" / "05_neighbourhood.sql").read_text()
        # Every function the file defines or calls goes to actbase (the
        # recursive helpers of sql/04_versions.sql stay shared), so the
        # head's definitions in memstore are never replaced.
        pattern = r"memstore\.(" + "|".join(BASE_FUNCTIONS) + r")\("
        raw.execute("DROP SCHEMA IF EXISTS actbase CASCADE")
        raw.execute("CREATE SCHEMA actbase")
        raw.execute("GRANT USAGE ON SCHEMA actbase TO PUBLIC")
        raw.execute(re.sub(pattern, r"actbase.\1(", sql))
    store = MemoryStore.open(
        url, embedder=bench.VectorsOnly(bench.model_for(name)), auto_upgrade=role == "head"
    )
    ns = store.namespace(name)
    print(json.dumps({"ready": role}), flush=True)
    for line in sys.stdin:
        call = json.loads(line)
        seeds, depth = call["seeds"], call["depth"]
        vector = np.asarray(call["vector"], dtype=np.float32)
        if call["side"] == "activate":
            sample = bench.run_activate(ns, seeds, depth)
        elif call["side"] == "pull_score":
            sample = bench.run_pull_score(store, ns, seeds, depth, vector)
        else:
            sample = bench.run_raw(raw, ns.id, ns.embedder.name, seeds, depth, vector)
        answer = {"ms": sample.seconds * 1000, "nodes": sample.nodes, "stages": sample.stages_ms}
        if call["side"] != "raw" and call.get("compare"):
            # Outside the timed part: what the call returned, for the other side.
            answer["result"] = result_of(bench, store, ns, call["side"], seeds, depth, vector)
        print(json.dumps(answer), flush=True)
    store.close()


def result_of(
    bench: Any, store: Any, ns: Any, side: str, seeds: list[int], depth: int, vector: Any
) -> dict[str, Any]:
    """What a side's call returns, as JSON: compared between base and head."""
    if side == "activate":
        act = ns.activate(seeds=seeds, depth=depth, fanout=bench.FANOUT)
        return {
            "working": [
                [
                    i.node.id,
                    i.score,
                    i.raw_score,
                    i.depth,
                    [s.node_id for s in i.path],
                    [s.edge_id for s in i.path],
                    i.node.content,
                ]
                for i in act.working_memory
            ],
            # By id: near-equal activations may swap places as the ages move.
            "background": sorted(
                [r.id, r.activation, r.raw_activation, r.depth, r.via_edge, r.in_working_memory]
                for r in act.background
            ),
            "stats": [act.stats.seeds, act.stats.nodes, act.stats.edges],
        }
    import numpy as np

    from memstore.activation import scoring
    from memstore.activation.model import ActivationParams
    from memstore.activation.pull import pull

    with store.transaction() as conn:
        nb = pull(
            conn,
            ns.id,
            sorted(seeds),
            depth=depth,
            fanout=bench.FANOUT,
            both_directions=False,
            privacy_ceiling=None,
            as_of=None,
            vector=vector,
            model=ns.embedder.name,
        )
    scores = scoring.score(
        nb,
        np.asarray(seeds, dtype=np.int64),
        np.ones(len(seeds)),
        depth=depth,
        limit=20,
        has_query=True,
        params=ActivationParams(),
    )
    edges = sorted(
        zip(
            nb.edge_src.tolist(),
            nb.edge_dst.tolist(),
            nb.edge_id.tolist(),
            nb.edge_weight.tolist(),
            nb.edge_hebb.tolist(),
            nb.edge_inhibitory.tolist(),
            nb.edge_relation,
            nb.edge_reverse.tolist(),
            nb.edge_depth.tolist(),
            strict=True,
        )
    )
    order = np.argsort(nb.node_id)
    sim = np.nan_to_num(nb.node_similarity[order], nan=-9.0)
    return {
        "edges": edges,
        "nodes": [
            nb.node_id[order].tolist(),
            nb.node_depth[order].tolist(),
            nb.node_layer[order].tolist(),
            [nb.node_type[i] for i in order],
            [nb.node_label[i] for i in order],
            [nb.node_tier[i] for i in order],
        ],
        "numbers": [
            sim.tolist(),
            nb.node_importance[order].tolist(),
            nb.node_decay_rate[order].tolist(),
            scores.final[order].tolist(),
            scores.raw[order].tolist(),
        ],
        "access": sorted(
            zip(nb.access_node.tolist(), np.round(nb.access_age).tolist(), strict=True)
        ),
        "working": nb.node_id[scores.working_memory].tolist(),
    }


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two results differ (floats within RTOL are equal)."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if abs(a - b) <= RTOL * max(abs(a), abs(b), 1e-12):
                return []
        return [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: {len(a)} != {len(b)} entries"]
        found: list[str] = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found += differences(x, y, f"{where}[{i}]")
            if found:
                return found
        return found
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for key in sorted(set(a) | set(b)):
            found += differences(a.get(key), b.get(key), f"{where}.{key}")
            if found:
                return found
        return found
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def start(role: str, tree: str, url: str, size: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=tree)
    command = [sys.executable, __file__, "--worker", role, "--tree", tree, "--url", url]
    command += ["--size", str(size)]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, cwd=tree
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("{"):
        raise SystemExit(f"the {role} worker did not start")
    return process


def ask(process: subprocess.Popen[str], call: dict[str, Any]) -> dict[str, Any]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(call) + "\n")
    process.stdin.flush()
    answer: dict[str, Any] = json.loads(process.stdout.readline())
    return answer


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", help="checkout of the older commit")
    p.add_argument("--head", default=str(HERE.parent), help="checkout of the newer commit")
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--depths", default="2,3")
    p.add_argument("--repeats", type=int, default=60)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--data-dir", default="/tmp/memstore-bench-activation")
    p.add_argument("--refresh-sql", action="store_true")
    p.add_argument("--no-compare", action="store_true", help="do not compare the results")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--tree", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.tree, args.url, args.size)
        return 0
    if not args.base:
        p.error("--base is required")

    sys.path.insert(0, str(HERE))
    import numpy as np
    import psycopg

    bench = importlib.import_module("activation")
    from memstore.db.embedded import EmbeddedServer

    server = EmbeddedServer(Path(args.data_dir), database=bench.DATABASE)
    url = server.start()
    try:
        settings = bench.parse_args(["--sizes", str(args.size)])
        spec = bench.GraphSpec.of(args.size, settings)
        with psycopg.connect(url, autocommit=True) as raw:
            name = bench.find_loaded(raw, spec)
            row = raw.execute("SELECT id FROM memstore.namespaces WHERE name = %s", (name,))
            ns_id = row.fetchone()[0]  # type: ignore[index]
            pool = bench.seed_pool(raw, ns_id)
            if args.refresh_sql:
                newest = sorted((Path(args.head) / "migrations" / "versions").glob("0*.py"))[-1]
                text = newest.read_text()
                frozen = text.split('NEIGHBOURHOOD_SQL = r"""', 1)[1].split('"""', 1)[0]
                raw.execute(frozen)
        clusters = bench.Clusters.make(
            settings.seed, settings.clusters, settings.spread, settings.noise
        )
        workers = {"head": start("head", args.head, url, args.size)}  # migrates first
        workers["base"] = start("base", args.base, url, args.size)
        summary: dict[str, list[float]] = {}
        compared = different = 0
        for depth in [int(d) for d in args.depths.split(",")]:
            rng = np.random.default_rng([settings.seed, 20, args.size, depth])
            total = args.warmup + args.repeats
            seed_sets = [rng.choice(pool, size=10, replace=False).tolist() for _ in range(total)]
            queries = clusters.sample(np.random.default_rng([settings.seed, 21, args.size]), total)
            got: dict[tuple[str, str], list[dict[str, Any]]] = {side: [] for side in SIDES}
            got_all: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for i in range(total):
                for role, side in SIDES[i % 5 :] + SIDES[: i % 5]:
                    call = {
                        "side": side,
                        "seeds": seed_sets[i],
                        "depth": depth,
                        "vector": queries[i].tolist(),
                        "compare": not args.no_compare,
                    }
                    answer = ask(workers[role], call)
                    got_all.setdefault((role, side), []).append(answer)
                    if i >= args.warmup:
                        got[(role, side)].append(answer)
            print(f"== {args.size:,} nodes, {depth} hops, {args.repeats} calls per side")
            if not args.no_compare:
                # Every call, warm-up included: base's answer against head's.
                for side in ("activate", "pull_score"):
                    pairs = zip(got_all[("base", side)], got_all[("head", side)], strict=True)
                    found = [d for a, b in pairs for d in differences(a["result"], b["result"])]
                    compared += total
                    different += len(found)
                    print(
                        f"  {side:10} results compared: {total}, differences: {len(found)}"
                        + (f" (first: {found[0][:300]})" if found else "")
                    )
            for (role, side), answers in got.items():
                ms = np.array([a["ms"] for a in answers])
                stages = {
                    k: round(float(np.median([a["stages"].get(k, 0.0) for a in answers])), 2)
                    for k in answers[0]["stages"]
                }
                p50, p95 = float(np.percentile(ms, 50)), float(np.percentile(ms, 95))
                summary[f"{depth}/{role}/{side}"] = [p50, p95]
                print(f"  {role:4} {side:10} p50 {p50:7.2f}  p95 {p95:7.2f}  stages {stages}")
        print(json.dumps(summary))
        if not args.no_compare:
            print(f"results compared: {compared}, differences: {different}")
        for process in workers.values():
            assert process.stdin is not None
            process.stdin.close()
            process.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
