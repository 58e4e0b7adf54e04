"""How long ``memstore --help`` takes, in fresh interpreters, for one or more checkouts.

Each run starts a new Python (this one's executable, so the same installed
dependencies) with ``PYTHONPATH`` set to the checkout, so that tree's
``memstore`` package is the one imported, and prints the help
once; the wall time includes interpreter start, imports, typer building the
command tree and rich rendering the help. ``-X importtime`` of
``memstore.cli`` says where the import part goes.

Usage: ``python benchmarks/cli_startup.py [--runs 7] [CHECKOUT ...]`` (default:
this checkout). Prints JSON: the load average before and after, and per
checkout every time sorted, the median and the minimum.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HELP = "import sys; sys.argv = ['memstore', '--help']; from memstore.cli import main; main()"


def time_help(checkout: Path, runs: int) -> list[float]:
    # Bytecode first: with PYTHONDONTWRITEBYTECODE (set on some machines) every
    # run would compile the package anew, which a user's second run never does.
    compileall.compile_dir(checkout / "memstore", quiet=2)
    environment = {**os.environ, "PYTHONPATH": str(checkout)}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        # cwd "/": with -c the working directory comes first on sys.path.
        subprocess.run(
            [sys.executable, "-c", HELP], env=environment, cwd="/", capture_output=True, check=True
        )
        times.append(time.perf_counter() - start)
    return sorted(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("checkouts", nargs="*", type=Path)
    args = parser.parse_args()
    checkouts = args.checkouts or [Path(__file__).resolve().parent.parent]
    report: dict[str, object] = {"load_before": os.getloadavg()}
    for checkout in checkouts:
        times = time_help(checkout.resolve(), args.runs)
        report[str(checkout)] = {
            "seconds": [round(t, 3) for t in times],
            "median": round(statistics.median(times), 3),
            "min": round(times[0], 3),
        }
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
