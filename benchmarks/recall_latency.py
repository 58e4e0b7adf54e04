"""Recall latency at LoCoMo size, taken apart (issue 22): wall time, client CPU, server CPU,
statements and round trips per call, and EXPLAIN ANALYZE's planning against execution.

One conversation's namespace from a ``locomo.py --timeline --data-dir DIR`` database
(~600 turns; the hashing embedder, or MiniLM with ``--embedder neural``), its questions
asked in turn by each call below, the calls rotating question by question (same load,
same caches):

- ``ns.recall(q, k=10)`` (default: graph and scope evidence), the same with
  ``neighbour_share=0`` (plain hybrid), ``mode="semantic"``;
- ``ns.recall_context(q, 2000)``;
- the query's embedding alone;
- the default recall's statement alone, planned beforehand (one round trip, rows only).

Server CPU is the embedded server's processes' CPU time (``/proc``; the
postmaster's reaped children count, so parallel workers do) between the start
and the end of a call: CPU time, not wall time, so a loaded machine inflates it
less than the latencies. Background processes count too, and /proc accounts CPU on
scheduler ticks, so a call's figure smears into its neighbour's (docs/benchmark-notes.md,
stop 27: ± 5 ms a call; the mean over the rotation holds). Statements and round trips are counted on
psycopg's cursors and pipelines in this process.

    .venv/bin/python benchmarks/recall_latency.py --data-dir /tmp/retr-db \\
        --conversation conv-48 --questions 100 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo

from memstore import MemoryStore
from memstore.config import Settings
from memstore.db.transaction import (
    in_one_round_trip,
    pipelined_namespace_transaction,
    set_local,
)
from memstore.recall import RecallQuery

COUNTS: Counter[str] = Counter()


def count_statements() -> None:
    """Count statements and round trips (a statement outside a pipeline, a pipeline's
    sync or exit, a commit) on psycopg's connections of this process."""
    execute, connection_execute = psycopg.Cursor.execute, psycopg.Connection.execute
    sync, leave, commit = (
        psycopg.Pipeline.sync,
        psycopg.Pipeline.__exit__,
        psycopg.Connection.commit,
    )

    def cursor_execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        COUNTS["statements"] += 1
        COUNTS["round trips"] += self.connection._pipeline is None
        return execute(self, *args, **kwargs)

    def conn_execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        COUNTS["statements"] += 1
        COUNTS["round trips"] += self._pipeline is None
        return connection_execute(self, *args, **kwargs)

    def pipeline_sync(self: Any) -> Any:
        COUNTS["round trips"] += 1
        return sync(self)

    def pipeline_exit(self: Any, *args: Any) -> Any:
        COUNTS["round trips"] += 1
        return leave(self, *args)

    def conn_commit(self: Any) -> Any:
        COUNTS["statements"] += 1
        COUNTS["round trips"] += 1
        return commit(self)

    psycopg.Cursor.execute = cursor_execute  # type: ignore[method-assign]
    psycopg.Connection.execute = conn_execute  # type: ignore[method-assign]
    psycopg.Pipeline.sync = pipeline_sync  # type: ignore[method-assign]
    psycopg.Pipeline.__exit__ = pipeline_exit  # type: ignore[method-assign]
    psycopg.Connection.commit = conn_commit  # type: ignore[method-assign]


def server_cpu(pid_file: Path) -> float:
    """CPU seconds of the server's processes so far (its children, and what it reaped)."""
    clock = os.sysconf("SC_CLK_TCK")
    postmaster = int(pid_file.read_text().splitlines()[0])
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == postmaster:
            total += int(fields[13]) + int(fields[14])  # cutime, cstime: reaped children
        elif int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / clock


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--conversation", default="conv-48")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--embedder", default="hashing", help="hashing or neural (MiniLM, the neural extra)"
    )
    args = parser.parse_args()
    count_statements()
    conversation = {c.sample_id: c for c in locomo.load(locomo.DATA)}[args.conversation]
    questions = [q.text for q in conversation.questions[: args.questions]]
    uptime = os.popen("uptime").read().strip()
    print(f"{conversation.sample_id}: {len(conversation.turns)} turns, {len(questions)} questions")
    print(f"uptime: {uptime}", flush=True)
    embedder = locomo.make_embedder(args.embedder)
    settings = Settings(data_dir=args.data_dir)
    pid_file = args.data_dir / "pg" / "postmaster.pid"
    with MemoryStore.open(settings=settings, embedder=embedder, auto_upgrade=True) as store:
        prefix = f"locomo-timeline-{embedder.name}"
        ns, _ = locomo.timeline_ingest(store, conversation, prefix, args.data_dir)
        recaller = ns._recall  # benchmark-side: the statement a recall runs
        scope = recaller.scope
        prepare = scope.settings.prepared_statements

        def planned(text: str) -> Callable[[], Any]:
            spec = RecallQuery(text=text, k=10, privacy_ceiling=scope.ceiling(None))
            run = recaller.plan(spec, recaller.vector(spec))
            return lambda: in_one_round_trip(
                scope.engine,
                scope.id,
                run.statement,
                run.params,
                privacy_ceiling=spec.privacy_ceiling,
                settings=run.settings,
                prepare=prepare,
            )

        calls: dict[str, Callable[[str], Any]] = {
            "default ns.recall(q, k=10)": lambda q: ns.recall(q, k=10),
            "neighbour_share=0 (plain hybrid)": lambda q: ns.recall(q, k=10, neighbour_share=0.0),
            'mode="semantic"': lambda q: ns.recall(q, k=10, mode="semantic"),
            "ns.recall_context(q, 2000)": lambda q: ns.recall_context(q, 2000),
            "the query's embedding alone": lambda q: embedder.embed([q]),
            "default statement alone (planned before)": lambda q: None,
        }
        for text in questions[:10]:  # warm-up
            for call in calls.values():
                call(text)
        wall: dict[str, list[float]] = {name: [] for name in calls}
        cpu: dict[str, list[float]] = {name: [] for name in calls}
        server: Counter[str] = Counter()
        sent: dict[str, Counter[str]] = {name: Counter() for name in calls}
        names = list(calls)
        for _ in range(args.rounds):
            for i, text in enumerate(questions):
                statement = planned(text)
                for name in names[i % len(names) :] + names[: i % len(names)]:
                    call = calls[name]
                    run = statement if name.startswith("default statement") else None
                    COUNTS.clear()
                    before = server_cpu(pid_file)
                    started, started_cpu = time.perf_counter(), time.process_time()
                    if run is not None:
                        run()
                    else:
                        call(text)
                    wall[name].append(1000 * (time.perf_counter() - started))
                    cpu[name].append(1000 * (time.process_time() - started_cpu))
                    server[name] += server_cpu(pid_file) - before
                    sent[name].update(COUNTS)
        n = args.rounds * len(questions)
        print(
            f"{'call':42} {'p50':>7} {'p95':>7} {'client CPU p50':>15} {'p95':>6}"
            f" {'server CPU/call':>16} {'statements':>11} {'round trips':>12}"
        )
        for name in names:
            print(
                f"{name:42} {percentile(wall[name], 0.5):7.2f} {percentile(wall[name], 0.95):7.2f}"
                f" {percentile(cpu[name], 0.5):15.2f} {percentile(cpu[name], 0.95):6.2f}"
                f" {1000 * server[name] / n:16.2f} {sent[name]['statements'] / n:11.1f}"
                f" {sent[name]['round trips'] / n:12.1f}"
            )
        # The default statement's planning against its execution, as the server reports them.
        planning: list[float] = []
        execution: list[float] = []
        for text in questions[:60]:
            spec = RecallQuery(text=text, k=10, privacy_ceiling=scope.ceiling(None))
            plan = recaller.plan(spec, recaller.vector(spec))
            with pipelined_namespace_transaction(
                scope.engine, scope.id, privacy_ceiling=spec.privacy_ceiling
            ) as tx:
                with tx.raw.cursor() as cursor:
                    for setting in set_local(plan.settings):
                        tx.raw.execute(setting)
                    explain = sql.SQL("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ")
                    cursor.execute(explain + plan.statement, plan.params)
                    row = cursor.fetchone()
            assert row is not None
            report = row[0][0]
            planning.append(report["Planning Time"])
            execution.append(report["Execution Time"])
        print(
            f"EXPLAIN ANALYZE of the default statement ({len(planning)} questions):"
            f" planning p50 {percentile(planning, 0.5):.2f}"
            f" p95 {percentile(planning, 0.95):.2f} ms,"
            f" execution p50 {percentile(execution, 0.5):.2f}"
            f" p95 {percentile(execution, 0.95):.2f} ms"
        )
    print(f"uptime: {os.popen('uptime').read().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
