"""Concurrent writers on one database: throughput, and proof that nothing is lost or doubled.

``--processes`` real OS processes (multiprocessing, spawn: each has its own
interpreter, engine and connections) run ``--ops`` operations each against one
namespace of one database, all released at once by a barrier. Each operation
kind in :data:`KINDS` aims the workers at the *same* targets so they collide:

- ``remember_same``: remember one of 20 shared texts: idempotent, so every
  worker must get the same node for the same text, and the namespace holds
  exactly one node per text;
- ``remember_unique``: remember a text of one's own: every returned id must
  exist with exactly that text (no lost write);
- ``remember_many``: bulk-ingest 10 of 40 shared texts per call, overlapping
  between workers: one node per text, the same id for everyone;
- ``revise``: revise the current version of one of 3 shared memories (3 new
  ones every 50 operations); exactly
  one writer wins each version, the others get ``NodeSupersededError`` or
  ``SupersessionError`` (a conflict, counted, not an anomaly). Each chain must
  be one straight line holding every winning revision, with one current end;
- ``pin``: ``ns.scratchpad.pin`` one of 2 shared keys (2 new ones every 50
  operations) to a value of one's own:
  pins of one key are serialised, so none fails; each key has exactly one
  current pin and its history holds every value pinned;
- ``link``: link one shared pair of nodes with one of 10 shared relations:
  identical links are one edge, so every call with a relation must get the
  same edge, each relation its own, and the pair holds exactly those edges.

A scenario runs one kind, or ``mixed``: every kind, interleaved per worker.
After the run the parent checks the database against every worker's record
(:func:`verify`) and across the namespace (no duplicate node, no node
superseded twice). Any anomaly is printed and the exit status is 1.

Adding an operation kind (e.g. ``sleep`` or ``apply`` once they exist) is one
:class:`Kind` in :data:`KINDS`: a ``prepare`` that creates the shared targets,
a ``do`` that runs one operation and returns a JSON-able record, the errors
that count as conflicts, and a ``verify`` that returns anomalies.

Commands (from the repository root)::

    # the CI size runs in tests/reliability/test_concurrency.py (4 x 200)
    .venv/bin/python benchmarks/concurrency.py --processes 8 --ops 2000
    .venv/bin/python benchmarks/concurrency.py --processes 4 --ops 500 --scenario revise

The database: ``--database-url`` / ``MEMSTORE_DATABASE_URL`` (migrated to
head, or pass ``--upgrade``), else a private embedded server in a temporary
directory. Each run writes into a fresh namespace.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import os
import platform
import random
import signal
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from memstore.errors import MemstoreError, NodeSupersededError, SupersessionError
from memstore.namespace import Namespace

Plan = dict[str, Any]
Record = dict[str, Any]

SHARED_TEXTS = 20
MANY_TEXTS = 40
MANY_PER_CALL = 10
CHAINS = 3
PIN_KEYS = 2
# Every GROUP_OPS operations the workers move on to fresh chains and keys
# together: they still collide, but a chain stays ~100 versions long, so the
# benchmark measures contention rather than ever longer lineage walks.
GROUP_OPS = 50


def _group(i: int) -> int:
    return i // GROUP_OPS


@dataclass(frozen=True)
class Kind:
    """One operation kind: shared targets, one operation, and the checks afterwards."""

    name: str
    prepare: Callable[[Namespace, int], Plan]
    """(namespace, operations per process) -> the shared targets (JSON-able)."""
    do: Callable[[Namespace, Plan, int, int], Record]
    """(namespace, plan, worker, op index) -> a JSON-able record of what happened."""
    verify: Callable[[Namespace, Plan, list[Record]], list[str]]
    """(namespace, plan, the records of successful operations) -> anomalies."""
    conflicts: tuple[type[MemstoreError], ...] = ()
    """Errors that mean "another writer won": counted, not anomalies."""


# --- remember the same content -------------------------------------------------


def _same_texts(prefix: str, count: int) -> list[str]:
    return [f"{prefix} shared memory number {j}" for j in range(count)]


def _prepare_remember_same(ns: Namespace, ops: int) -> Plan:
    return {"texts": _same_texts("remember_same", SHARED_TEXTS)}


def _do_remember_same(ns: Namespace, plan: Plan, worker: int, i: int) -> Record:
    texts = plan["texts"]
    j = (i * 7 + worker) % len(texts)
    return {"text": j, "id": ns.remember(texts[j]).id}


def _one_node_per_text(ns: Namespace, texts: list[str], by_text: dict[int, set[int]]) -> list[str]:
    anomalies = [
        f"text {j} was stored as {len(ids)} nodes: {sorted(ids)}"
        for j, ids in sorted(by_text.items())
        if len(ids) != 1
    ]
    with ns.transaction() as tx:
        rows = tx.conn.execute(
            sa.text(
                "SELECT content, count(*) FROM memstore.nodes"
                " WHERE namespace_id = :ns AND content = ANY(:texts) GROUP BY content"
            ),
            {"ns": ns.id, "texts": texts},
        ).all()
    anomalies += [f"{n} nodes hold the text {text!r}" for text, n in rows if n != 1]
    stored = {text for text, _ in rows}
    touched = {texts[j] for j in by_text}
    anomalies += [f"lost write: {text!r} is not stored" for text in sorted(touched - stored)]
    return anomalies


def _verify_remember_same(ns: Namespace, plan: Plan, records: list[Record]) -> list[str]:
    by_text: dict[int, set[int]] = defaultdict(set)
    for record in records:
        by_text[record["text"]].add(record["id"])
    return _one_node_per_text(ns, plan["texts"], by_text)


# --- remember one's own content --------------------------------------------------


def _prepare_nothing(ns: Namespace, ops: int) -> Plan:
    return {}


def _unique_text(worker: int, i: int) -> str:
    return f"remember_unique: worker {worker} wrote memory {i}"


def _do_remember_unique(ns: Namespace, plan: Plan, worker: int, i: int) -> Record:
    return {"worker": worker, "i": i, "id": ns.remember(_unique_text(worker, i)).id}


def _verify_remember_unique(ns: Namespace, plan: Plan, records: list[Record]) -> list[str]:
    with ns.transaction() as tx:
        stored = dict(
            tx.conn.execute(
                sa.text(
                    "SELECT id, content FROM memstore.nodes"
                    " WHERE namespace_id = :ns AND id = ANY(:ids)"
                ),
                {"ns": ns.id, "ids": [r["id"] for r in records]},
            ).all()
        )
    anomalies = []
    ids = Counter(r["id"] for r in records)
    anomalies += [f"node {i} was returned for {n} different texts" for i, n in ids.items() if n > 1]
    for r in records:
        expected = _unique_text(r["worker"], r["i"])
        if stored.get(r["id"]) != expected:
            anomalies.append(f"lost write: node {r['id']} should hold {expected!r}")
    return anomalies


# --- bulk ingest of overlapping batches -------------------------------------------


def _prepare_remember_many(ns: Namespace, ops: int) -> Plan:
    return {"texts": _same_texts("remember_many", MANY_TEXTS)}


def _do_remember_many(ns: Namespace, plan: Plan, worker: int, i: int) -> Record:
    texts = plan["texts"]
    picked = [(i * 3 + worker + j) % len(texts) for j in range(MANY_PER_CALL)]
    ids = ns.remember_many([texts[j] for j in picked])
    return {"texts": picked, "ids": ids}


def _verify_remember_many(ns: Namespace, plan: Plan, records: list[Record]) -> list[str]:
    by_text: dict[int, set[int]] = defaultdict(set)
    for record in records:
        for j, node_id in zip(record["texts"], record["ids"], strict=True):
            by_text[j].add(node_id)
    return _one_node_per_text(ns, plan["texts"], by_text)


# --- revise the same memory -----------------------------------------------------


def _prepare_revise(ns: Namespace, ops: int) -> Plan:
    chains = CHAINS * (_group(ops - 1) + 1)
    return {"roots": [ns.remember(f"revise: chain {c}, version 0").id for c in range(chains)]}


def _do_revise(ns: Namespace, plan: Plan, worker: int, i: int) -> Record:
    chain = _group(i) * CHAINS + (i + worker) % CHAINS
    current = ns.lineage(plan["roots"][chain])[-1]
    new = ns.revise(
        current.id, f"revise: chain {chain}, by worker {worker}, op {i}", reason="concurrency"
    )
    return {"chain": chain, "old": current.id, "new": new.id}


def _verify_revise(ns: Namespace, plan: Plan, records: list[Record]) -> list[str]:
    anomalies = []
    for chain, root in enumerate(plan["roots"]):
        won = [r for r in records if r["chain"] == chain]
        versions = ns.lineage(root)
        ids = [v.id for v in versions]
        current = [v.id for v in versions if v.status == "current"]
        if len(current) != 1 or current[0] != ids[-1]:
            anomalies.append(f"chain {chain}: current versions {current}, lineage {ids}")
        if sorted(ids[1:]) != sorted(r["new"] for r in won):
            anomalies.append(
                f"chain {chain}: {len(won)} revisions won but the lineage holds {len(ids) - 1}"
            )
        olds = [r["old"] for r in won]
        if len(set(olds)) != len(olds):
            anomalies.append(f"chain {chain}: one version was revised twice")
        for before, after in itertools.pairwise(versions):
            if before.superseded_by != after.id:
                anomalies.append(f"chain {chain}: {before.id} -> {after.id} is not a straight line")
    return anomalies


# --- pin the same key -------------------------------------------------------------


def _prepare_pin(ns: Namespace, ops: int) -> Plan:
    return {"keys": [f"key-{k}" for k in range(PIN_KEYS * (_group(ops - 1) + 1))]}


def _do_pin(ns: Namespace, plan: Plan, worker: int, i: int) -> Record:
    key = plan["keys"][_group(i) * PIN_KEYS + (i + worker) % PIN_KEYS]
    value = f"value of worker {worker}, op {i}"
    return {"key": key, "value": value, "id": ns.scratchpad.pin(key, value).id}


def _verify_pin(ns: Namespace, plan: Plan, records: list[Record]) -> list[str]:
    anomalies = []
    for key in plan["keys"]:
        pinned = [r for r in records if r["key"] == key]
        with ns.transaction() as tx:
            current = tx.conn.execute(
                sa.text(
                    "SELECT count(*) FROM memstore.nodes n WHERE n.namespace_id = :ns"
                    " AND n.tier = 'scratchpad' AND n.label = :key AND NOT EXISTS ("
                    "  SELECT FROM memstore.supersessions s"
                    "  WHERE s.namespace_id = :ns AND s.old_id = n.id)"
                    " AND NOT EXISTS (SELECT FROM memstore.tombstones t"
                    "  WHERE t.namespace_id = :ns AND t.node_id = n.id)"
                ),
                {"ns": ns.id, "key": key},
            ).scalar_one()
        if current != (1 if pinned else 0):
            anomalies.append(f"pin {key!r} has {current} current values")
        history = ns.scratchpad.history(key)
        values = [node.data.get("value") for node in history]
        if sorted(map(str, values)) != sorted(r["value"] for r in pinned):
            anomalies.append(
                f"pin {key!r}: {len(pinned)} pins returned, the history holds {len(values)}"
            )
        if pinned and {node.id for node in history} != {r["id"] for r in pinned}:
            anomalies.append(f"pin {key!r}: returned nodes are missing from its history")
    return anomalies


# --- link the same pair ------------------------------------------------------------


def _prepare_link(ns: Namespace, ops: int) -> Plan:
    return {"ends": [ns.remember(f"link: shared end {e}").id for e in range(2)]}


def _do_link(ns: Namespace, plan: Plan, worker: int, i: int) -> Record:
    src, dst = plan["ends"]
    relation = f"r{i % 10}"  # the same link as other workers' i-th calls
    return {"id": ns.link(src, dst, relation=relation, weight=0.5).id, "relation": relation}


def _verify_link(ns: Namespace, plan: Plan, records: list[Record]) -> list[str]:
    src, dst = plan["ends"]
    with ns.transaction() as tx:
        stored = {
            row[0]
            for row in tx.conn.execute(
                sa.text(
                    "SELECT id FROM memstore.edges"
                    " WHERE namespace_id = :ns AND src = :src AND dst = :dst"
                ),
                {"ns": ns.id, "src": src, "dst": dst},
            )
        }
    by_relation: dict[str, set[int]] = {}
    for record in records:
        by_relation.setdefault(record["relation"], set()).add(record["id"])
    returned = {edge for edges in by_relation.values() for edge in edges}
    anomalies = [
        f"{len(edges)} edges returned for identical links ({relation})"
        for relation, edges in sorted(by_relation.items())
        if len(edges) != 1
    ]
    if len(returned) < len(by_relation):
        anomalies.append("two different links returned the same edge")
    if stored != returned:
        anomalies.append(f"{len(returned)} edges returned, {len(stored)} edges stored")
    return anomalies


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("remember_same", _prepare_remember_same, _do_remember_same, _verify_remember_same),
        Kind("remember_unique", _prepare_nothing, _do_remember_unique, _verify_remember_unique),
        Kind("remember_many", _prepare_remember_many, _do_remember_many, _verify_remember_many),
        Kind(
            "revise",
            _prepare_revise,
            _do_revise,
            _verify_revise,
            conflicts=(NodeSupersededError, SupersessionError),
        ),
        Kind("pin", _prepare_pin, _do_pin, _verify_pin),
        Kind("link", _prepare_link, _do_link, _verify_link),
    )
}
SCENARIOS: dict[str, tuple[str, ...]] = {name: (name,) for name in KINDS} | {"mixed": tuple(KINDS)}


# --- running ------------------------------------------------------------------------


@dataclass
class Report:
    """What one scenario did: counts per kind, wall time, and every anomaly found."""

    scenario: str
    processes: int
    ops_per_process: int
    seconds: float = 0.0
    ok: Counter[str] = field(default_factory=Counter)
    conflicts: Counter[str] = field(default_factory=Counter)
    anomalies: list[str] = field(default_factory=list)

    @property
    def operations(self) -> int:
        return self.processes * self.ops_per_process

    @property
    def throughput(self) -> float:
        """Operations (successful or conflicting) per second of wall time."""
        return self.operations / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "processes": self.processes,
            "ops_per_process": self.ops_per_process,
            "seconds": round(self.seconds, 3),
            "ops_per_second": round(self.throughput, 1),
            "ok": dict(self.ok),
            "conflicts": dict(self.conflicts),
            "anomalies": self.anomalies,
        }


def _worker(
    url: str,
    namespace: str,
    worker: int,
    ops: int,
    kinds: Sequence[str],
    plans: dict[str, Plan],
    barrier: Any,
    results: Any,
) -> None:
    """One process: open the store, wait for the others, run ``ops`` operations."""
    records: list[tuple[str, str, Record | str]] = []
    try:
        with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
            ns = store.namespace(namespace)
            order = random.Random(worker)
            barrier.wait()
            for i in range(ops):
                name = kinds[(i + order.randrange(len(kinds))) % len(kinds)]
                kind = KINDS[name]
                try:
                    records.append((name, "ok", kind.do(ns, plans[name], worker, i)))
                except kind.conflicts as exc:
                    records.append((name, "conflict", type(exc).__name__))
                except MemstoreError as exc:
                    records.append((name, "error", f"{type(exc).__name__}: {exc}"))
                except Exception as exc:  # a raw driver error leaking is an anomaly too
                    records.append((name, "raw", f"{type(exc).__qualname__}: {exc}"))
    except BaseException:
        results.put((worker, "crashed", traceback.format_exc()))
        return
    results.put((worker, "done", records))


def run_scenario(url: str, scenario: str, *, processes: int, ops: int) -> Report:
    """Run one scenario of :data:`SCENARIOS` in a fresh namespace; return its report."""
    kinds = SCENARIOS[scenario]
    report = Report(scenario, processes, ops)
    namespace = f"concurrency-{scenario}-{uuid.uuid4().hex[:8]}"
    with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(namespace)
        plans = {name: KINDS[name].prepare(ns, ops) for name in kinds}
        ctx = mp.get_context("spawn")
        barrier = ctx.Barrier(processes + 1)
        results = ctx.Queue()
        workers = [
            ctx.Process(
                target=_worker,
                args=(url, namespace, w, ops, kinds, plans, barrier, results),
            )
            for w in range(processes)
        ]
        for process in workers:
            process.start()
        try:
            # Spawned interpreters import memstore first: slow on a busy machine.
            barrier.wait(timeout=600)
        except Exception:
            for process in workers:
                process.kill()
            raise
        started = time.perf_counter()
        outcomes = [results.get(timeout=3600) for _ in workers]
        report.seconds = time.perf_counter() - started
        for process in workers:
            process.join()
        succeeded: dict[str, list[Record]] = defaultdict(list)
        for worker, status, payload in outcomes:
            if status == "crashed":
                report.anomalies.append(f"worker {worker} crashed: {payload}")
                continue
            for name, outcome, record in payload:
                if outcome == "ok":
                    report.ok[name] += 1
                    assert isinstance(record, dict)
                    succeeded[name].append(record)
                elif outcome == "conflict":
                    report.conflicts[name] += 1
                else:
                    report.anomalies.append(f"worker {worker}, {name}: {outcome} {record}")
        for name in kinds:
            report.anomalies += [
                f"{name}: {a}" for a in KINDS[name].verify(ns, plans[name], succeeded[name])
            ]
        report.anomalies += verify_namespace(ns)
    return report


def verify_namespace(ns: Namespace) -> list[str]:
    """Checks across the whole namespace: no duplicate node, no node superseded twice."""
    with ns.transaction() as tx:
        duplicates = tx.conn.execute(
            sa.text(
                "SELECT count(*) FROM (SELECT 1 FROM memstore.nodes WHERE namespace_id = :ns"
                " AND content_hash IS NOT NULL GROUP BY kind, node_type, content_hash"
                " HAVING count(*) > 1) d"
            ),
            {"ns": ns.id},
        ).scalar_one()
        twice = tx.conn.execute(
            sa.text(
                "SELECT count(*) FROM (SELECT 1 FROM memstore.supersessions"
                " WHERE namespace_id = :ns GROUP BY old_id HAVING count(*) > 1) d"
            ),
            {"ns": ns.id},
        ).scalar_one()
    anomalies = []
    if duplicates:
        anomalies.append(f"{duplicates} idempotency keys are stored more than once")
    if twice:
        anomalies.append(f"{twice} nodes were superseded more than once (two current versions)")
    return anomalies


def _markdown(reports: list[Report], command: str) -> str:
    lines = [
        f"`{command}` — {platform.node()}, {os.cpu_count()} CPUs,"
        f" Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}",
        "",
        "| scenario | processes × ops | seconds | ops/s | ok | conflicts | anomalies |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        ok = ", ".join(f"{k} {v}" for k, v in sorted(r.ok.items()))
        conflicts = ", ".join(f"{k} {v}" for k, v in sorted(r.conflicts.items())) or "0"
        lines.append(
            f"| {r.scenario} | {r.processes} × {r.ops_per_process} | {r.seconds:.1f}"
            f" | {r.throughput:.0f} | {ok} | {conflicts} | {len(r.anomalies)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--ops", type=int, default=2000, help="operations per process")
    parser.add_argument(
        "--scenario", action="append", choices=sorted(SCENARIOS), help="default: all"
    )
    parser.add_argument("--database-url", default=os.environ.get("MEMSTORE_DATABASE_URL"))
    parser.add_argument("--upgrade", action="store_true", help="migrate the database first")
    parser.add_argument("--json", type=Path, help="write the reports here")
    args = parser.parse_args(argv)
    scenarios = args.scenario or list(SCENARIOS)
    # A plain kill still stops the embedded server (the finally clause below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="memstore-concurrency-") as tmp:
        url = args.database_url
        server = None
        if url is None:
            from memstore.db.embedded import EmbeddedServer

            server = EmbeddedServer(Path(tmp))
            url = server.start()
        try:
            MemoryStore.open(url, auto_upgrade=args.upgrade or server is not None).close()
            reports = []
            for scenario in scenarios:
                report = run_scenario(url, scenario, processes=args.processes, ops=args.ops)
                reports.append(report)
                print(json.dumps(report.as_dict()), flush=True)
        finally:
            if server is not None:
                server.stop()
    print()
    print(_markdown(reports, "python benchmarks/concurrency.py " + " ".join(sys.argv[1:])))
    if args.json:
        args.json.write_text(json.dumps([r.as_dict() for r in reports], indent=2))
    anomalies = sum(len(r.anomalies) for r in reports)
    for r in reports:
        for anomaly in r.anomalies:
            print(f"ANOMALY {r.scenario}: {anomaly}", file=sys.stderr)
    return 1 if anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
