"""`memstore export` and `memstore restore` in a subprocess: a round trip through a file
and through a pipe, and one line on stderr with exit 1 for every file it refuses."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from tests.acceptance.test_cli import MEMSTORE, run
from tests.conftest import row_counts


def cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = run(*args, url=url, MEMSTORE_EMBEDDER="hashing")
    assert done.returncode == 0, done.stderr
    return done


def refused(url: str, *args: str) -> str:
    before = row_counts(url)
    done = run(*args, url=url, MEMSTORE_EMBEDDER="hashing")
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    assert row_counts(url) == before
    return lines[0]


def test_export_and_restore_round_trip(database_url: str, tmp_path: Path):
    name = f"cli-export-{uuid.uuid4().hex[:6]}"
    first = json.loads(
        cli(database_url, "remember", "Alice lives in Lisbon", "-n", name, "--json").stdout
    )
    cli(
        database_url,
        "revise",
        str(first["id"]),
        "Alice lives in Porto",
        "--reason",
        "moved",
        "-n",
        name,
    )
    path = tmp_path / "ns.jsonl"
    done = cli(database_url, "export", "-n", name, "--output", str(path))
    assert "exported namespace" in done.stdout and "2 memories" in done.stdout
    summary = json.loads(
        cli(database_url, "restore", str(path), "-n", f"{name}-copy", "--json").stdout
    )
    assert summary["rows"]["node"] == 2 and summary["rows"]["supersession"] == 1
    hits = json.loads(cli(database_url, "recall", "Alice", "-n", f"{name}-copy", "--json").stdout)
    assert [h["node"]["content"] for h in hits] == ["Alice lives in Porto"]

    # Through a pipe: export to stdout, restore from stdin.
    exported = subprocess.run(
        [MEMSTORE, "export", "-n", name, "--output", "-"],
        capture_output=True,
        env=_env(database_url),
        timeout=300,
        check=True,
    )
    assert exported.stdout.splitlines()[0].startswith(b'{"t":"header"')
    restored = subprocess.run(
        [MEMSTORE, "restore", "-", "-n", f"{name}-piped"],
        input=exported.stdout,
        capture_output=True,
        env=_env(database_url),
        timeout=300,
        check=False,
    )
    assert restored.returncode == 0, restored.stderr
    assert b"restored 2 memories" in restored.stdout

    # The target must be empty.
    line = refused(database_url, "restore", str(path), "-n", f"{name}-copy")
    assert "not empty" in line


def _env(url: str) -> dict[str, str]:
    import os

    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    return {**environment, "MEMSTORE_DATABASE_URL": url, "MEMSTORE_EMBEDDER": "hashing"}


def test_files_it_refuses(database_url: str, tmp_path: Path):
    target = f"cli-refused-{uuid.uuid4().hex[:6]}"
    assert "cannot read" in refused(
        database_url, "restore", str(tmp_path / "missing.jsonl"), "-n", target
    )
    bad = tmp_path / "bad.jsonl"
    name = f"cli-src-{uuid.uuid4().hex[:6]}"
    cli(database_url, "remember", "Bob drinks green tea", "-n", name)
    cli(database_url, "export", "-n", name, "--output", str(bad))
    lines = bad.read_text().splitlines(keepends=True)
    lines.insert(2, "{not json\n")
    bad.write_text("".join(lines))
    assert "line 3 is not JSON" in refused(database_url, "restore", str(bad), "-n", target)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:2]))
    assert "cut short" in refused(database_url, "restore", str(cut), "-n", target)
    assert "does not exist" in refused(
        database_url,
        "export",
        "-n",
        f"absent-{uuid.uuid4().hex[:6]}",
        "--output",
        str(tmp_path / "x"),
    )
    assert not (tmp_path / "x").exists()
