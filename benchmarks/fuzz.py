"""Hostile input at scale: run the fuzz test of the public API with many examples.

``tests/reliability/test_hostile_input.py`` calls every public entry point
with junk (random Unicode with NUL bytes and lone surrogates, huge strings,
NaN and infinities, ids beyond bigint, deeply nested or non-JSON data, wrong
types) and requires a named ``MemstoreError`` and an unchanged store, or
success. CI runs 25 examples per entry point; this script runs it with
``--examples`` in total (spread evenly over the entry points), then prints how
many examples each entry point actually tried and the total.

    .venv/bin/python benchmarks/fuzz.py --examples 10000

The database is the test suite's: ``MEMSTORE_TEST_DATABASE_URL``, else
testcontainers, else an embedded server in a temporary directory. Exit status:
pytest's (0 when every example passed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEST = "tests/reliability/test_hostile_input.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--examples", type=int, default=10_000, help="in total (at least)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.reliability.test_hostile_input import ENTRY_POINTS

    per_entry = math.ceil(args.examples / len(ENTRY_POINTS))
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "tried.json"
        env = dict(
            os.environ,
            MEMSTORE_FUZZ_EXAMPLES=str(per_entry),
            MEMSTORE_FUZZ_REPORT=str(report),
        )
        started = time.perf_counter()
        command = [sys.executable, "-m", "pytest", TEST, "-q", "-p", "no:cacheprovider",
                   "-k", "refused_cleanly"]  # fmt: skip
        status = subprocess.call(command, env=env)
        seconds = time.perf_counter() - started
        tried: dict[str, int] = json.loads(report.read_text()) if report.exists() else {}
    for name, count in sorted(tried.items()):
        print(f"{name:18} {count:6d}")
    total = sum(tried.values())
    print(f"{'total':18} {total:6d} examples in {seconds:.0f} s; pytest exit status {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
