"""Real OS processes writing to one database at once: nothing lost, nothing doubled.

The harness (and the larger benchmark) is ``benchmarks/concurrency.py``; here
each scenario runs at CI size, in its own namespace of this module's database.
"""

from __future__ import annotations

import pytest

from benchmarks.concurrency import SCENARIOS, run_scenario

PROCESSES = 4
OPS = 200


@pytest.mark.parametrize("scenario", ["remember_same", "revise", "pin", "mixed"])
def test_concurrent_writers_leave_no_anomaly(database_url, scenario):
    report = run_scenario(database_url, scenario, processes=PROCESSES, ops=OPS)
    assert report.anomalies == []
    kinds = SCENARIOS[scenario]
    assert sum(report.ok.values()) + sum(report.conflicts.values()) == PROCESSES * OPS
    assert set(report.ok) == set(kinds)  # every kind ran and succeeded at least once
    assert set(report.conflicts) <= {"revise"}
