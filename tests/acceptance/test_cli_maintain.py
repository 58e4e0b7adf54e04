"""`memstore maintain` and the procedure-outcome commands, run as installed (subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memstore import MemoryStore
from memstore.embedding.hashing import HashingEmbedder
from tests.conftest import row_counts

MEMSTORE = str(Path(sys.executable).with_name("memstore"))
STEPS = json.dumps([{"tool": "git", "purpose": "tag it", "instruction": "git tag v1"}])


def run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    environment.update(MEMSTORE_DATABASE_URL=url, MEMSTORE_EMBEDDER="hashing")
    return subprocess.run(
        [MEMSTORE, *args], capture_output=True, text=True, env=environment, timeout=300
    )


def test_maintain_every_namespace_then_nothing_is_due(database_url):
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        for name in ("cli-maintain-a", "cli-maintain-b"):
            store.namespace(name).lessons.add("Test first", source="review", confidence=0.5)

    dry = run(database_url, "maintain", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    planned = {r["namespace"]: r for r in json.loads(dry.stdout)}
    assert {"cli-maintain-a", "cli-maintain-b"} <= set(planned)
    assert planned["cli-maintain-a"]["dry_run"] and planned["cli-maintain-a"]["decay_steps"] == 1

    done = run(database_url, "maintain")
    assert done.returncode == 0, done.stderr
    assert "cli-maintain-a: changed" in done.stdout

    before = row_counts(database_url)
    again = run(database_url, "maintain", "-n", "cli-maintain-a", "-n", "cli-maintain-b")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "cli-maintain-a: nothing due",
        "cli-maintain-b: nothing due",
    ]
    assert row_counts(database_url) == before


def test_procedure_outcomes_from_the_command_line(database_url):
    ns = ["-n", "cli-outcomes"]
    assert run(database_url, "procedures", "add", "release", "--steps", STEPS, *ns).returncode == 0
    good = run(
        database_url, "procedures", "outcome", "release", "--success", "--episode", "run-7", *ns
    )
    assert good.returncode == 0, good.stderr
    bad = run(database_url, "procedures", "outcome", "release", "--failure", "--note", "broke", *ns)
    assert bad.returncode == 0, bad.stderr
    listed = run(
        database_url, "procedures", "outcomes", "release", "--only", "golden", "--json", *ns
    )
    assert listed.returncode == 0, listed.stderr
    assert [o["episode_run"] for o in json.loads(listed.stdout)] == ["run-7"]
    wrong = run(database_url, "procedures", "outcomes", "release", "--only", "best", *ns)
    assert wrong.returncode == 1 and "golden" in wrong.stderr and "Traceback" not in wrong.stderr
