"""The default recall statement, two variants interleaved question by question in one process:
the server's own account, which load inflates less than wall time.

``--against REV``: recall.sql at git revision REV against the working tree's, both composed
by today's statement.py, compared by EXPLAIN (ANALYZE, TIMING OFF)'s planning and execution
time (not prepared: a custom plan each call).

``--plans``: today's statement prepared (as ``ns.recall`` sends it), under
``plan_cache_mode = force_custom_plan`` against ``force_generic_plan`` (``SET LOCAL``),
compared by wall time and the server's CPU time per call.

    .venv/bin/python benchmarks/recall_statement_ab.py --data-dir /tmp/retr-db --against 7a9a068
    .venv/bin/python benchmarks/recall_statement_ab.py --data-dir /tmp/retr-db --plans \\
        --embedder neural

The namespace is a ``locomo.py --timeline --data-dir DIR`` conversation (recall_latency.py's).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo
from recall_latency import percentile, server_cpu

from memstore import MemoryStore
from memstore.config import Settings
from memstore.db.queries import named_queries
from memstore.db.transaction import in_one_round_trip, pipelined_namespace_transaction, set_local
from memstore.recall import RecallQuery
from memstore.recall import statement as composing

ROOT = Path(__file__).resolve().parents[1]


def queries_at(revision: str) -> dict[str, str]:
    """recall.sql's fragments at ``revision``, in today's fragment names."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{revision}:memstore/recall/recall.sql"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = named_queries(text)
    if "semantic_ranked" not in found:  # before stop 28: one fragment for both searches
        search, ranked = found["semantic"].split("), semantic_ranked AS (")
        found["semantic"] = found["semantic_exact"] = search + ")\n"
        found["semantic_ranked"] = "semantic_ranked AS (" + ranked
    return found


def composed(queries: dict[str, str], model: str, dims: int, exact: bool) -> sql.Composed:
    """The default (hybrid, graph) statement composed from ``queries`` (the module's own
    fragments and cache are left as they were)."""
    kept = dict(composing.QUERIES)
    composing.QUERIES.clear()
    composing.QUERIES.update(queries)
    composing.recall_statement.cache_clear()
    try:
        return composing.recall_statement(model, dims, exact, "hybrid", False, True)
    finally:
        composing.QUERIES.clear()
        composing.QUERIES.update(kept)
        composing.recall_statement.cache_clear()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--conversation", default="conv-48")
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--embedder", default="hashing", help="hashing or neural (MiniLM)")
    choice = parser.add_mutually_exclusive_group(required=True)
    choice.add_argument("--against", metavar="REV", help="recall.sql at REV vs the working tree")
    choice.add_argument("--plans", action="store_true", help="custom vs generic plans, prepared")
    args = parser.parse_args()
    conversation = {c.sample_id: c for c in locomo.load(locomo.DATA)}[args.conversation]
    questions = [q.text for q in conversation.questions[: args.questions]]
    embedder = locomo.make_embedder(args.embedder)
    pid_file = args.data_dir / "pg" / "postmaster.pid"
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    today = dict(composing.QUERIES)
    variants = ["before", "after"] if args.against else ["custom", "generic"]
    first: dict[str, list[float]] = {name: [] for name in variants}
    second: dict[str, list[float]] = {name: [] for name in variants}
    settings = Settings(data_dir=args.data_dir)
    with MemoryStore.open(settings=settings, embedder=embedder, auto_upgrade=True) as store:
        prefix = f"locomo-timeline-{embedder.name}"
        ns, _ = locomo.timeline_ingest(store, conversation, prefix, args.data_dir)
        ns.recall(questions[0], k=10)
        recaller = ns._recall  # benchmark-side: the statement a recall runs
        scope = recaller.scope
        old = queries_at(args.against) if args.against else {}

        def explained(text: str, name: str) -> Callable[[], Any]:
            spec = RecallQuery(text=text, k=10, privacy_ceiling=scope.ceiling(None))
            run = recaller.plan(spec, recaller.vector(spec))
            exact = "e.embedding <=>" in run.statement.as_string(None)
            queries = old if name == "before" else today
            statement = composed(queries, embedder.name, embedder.dims, exact)

            def call() -> Any:
                with pipelined_namespace_transaction(scope.engine, scope.id) as tx:
                    with tx.raw.cursor() as cursor:
                        for setting in set_local(run.settings):
                            tx.raw.execute(setting)
                        explain = sql.SQL("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ")
                        cursor.execute(explain + statement, run.params)
                        row = cursor.fetchone()
                assert row is not None
                return row[0][0]

            return call

        def prepared(text: str, name: str) -> Callable[[], Any]:
            spec = RecallQuery(text=text, k=10, privacy_ceiling=scope.ceiling(None))
            run = recaller.plan(spec, recaller.vector(spec))
            mode = "force_generic_plan" if name == "generic" else "force_custom_plan"
            return lambda: in_one_round_trip(
                scope.engine,
                scope.id,
                run.statement,
                run.params,
                settings={**run.settings, "plan_cache_mode": mode},
                prepare=True,
            )

        for text in questions[:5]:  # warm-up
            for name in variants:
                (explained if args.against else prepared)(text, name)()
        for round_ in range(args.rounds):
            for i, text in enumerate(questions):
                order = variants if (i + round_) % 2 == 0 else variants[::-1]
                for name in order:
                    call = (explained if args.against else prepared)(text, name)
                    before, started = server_cpu(pid_file), time.perf_counter()
                    report = call()
                    wall = 1000 * (time.perf_counter() - started)
                    if args.against:
                        first[name].append(report["Planning Time"])
                        second[name].append(report["Execution Time"])
                    else:
                        first[name].append(wall)
                        second[name].append(1000 * (server_cpu(pid_file) - before))
    labels = ("planning", "execution") if args.against else ("wall", "server CPU")
    for name in variants:
        a, b = first[name], second[name]
        print(
            f"{args.embedder} {name}: {labels[0]} p50 {percentile(a, 0.5):.2f}"
            f" p95 {percentile(a, 0.95):.2f} ms, {labels[1]} p50 {percentile(b, 0.5):.2f}"
            f" p95 {percentile(b, 0.95):.2f} mean {sum(b) / len(b):.2f} ms (n={len(a)})"
        )
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
