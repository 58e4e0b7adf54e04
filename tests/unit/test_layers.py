"""Imports point downward only: cli -> store/namespace/tx/tiers/lifecycle -> core (graph,
recall, embedding, activation) -> db; the law (memstore.law) is pure and touches no database.

models, errors and config are leaves: they import nothing above them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "memstore"

# module (or package) -> memstore modules it must never import
SERVICES = (
    "memstore.namespace",
    "memstore.services",
    "memstore.tx",
    "memstore.tiers",
    "memstore.lifecycle",
    "memstore.store",
    "memstore.cli",
    "memstore.server",
)
CORE = ("memstore.graph", "memstore.recall", "memstore.embedding", "memstore.activation")
# The law is pure: it may import the API models and nothing that reaches a database.
FORBIDDEN = {
    "db": CORE + SERVICES,
    "graph": SERVICES,
    "recall": SERVICES,
    "embedding": SERVICES,
    "activation": SERVICES,
    "namespace": ("memstore.store", "memstore.cli"),
    "tx": ("memstore.store", "memstore.cli"),
    "tiers": ("memstore.store", "memstore.cli"),
    "lifecycle": ("memstore.store", "memstore.cli"),
    "law": ("memstore.db", *CORE, *SERVICES),
    "inputs": ("memstore.db", *CORE, *SERVICES),
    "store": ("memstore.cli",),
    "errors": ("memstore.",),
    "models": ("memstore.db", *CORE, *SERVICES),
    "config": ("memstore.db", *CORE, *SERVICES),
    "services": ("memstore.namespace", "memstore.store", "memstore.cli"),
    # API keys are a service over db; the server is a shell like the CLI.
    "keys": ("memstore.namespace", "memstore.store", "memstore.cli", "memstore.server"),
    "server": ("memstore.cli",),
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_upward_imports(layer):
    target = PACKAGE / layer
    files = sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]
    assert files
    for path in files:
        for name in _imports(path):
            for forbidden in FORBIDDEN[layer]:
                assert not name.startswith(forbidden), f"{path.name} imports {name}"


# The facade sits on top: what it delegates to never imports it back, not even for
# type checking (the ``if TYPE_CHECKING:`` imports are in the tree ast.walk reads).
@pytest.mark.parametrize("layer", ["tiers", "lifecycle", "services", "tx"])
def test_nothing_below_the_facade_imports_it(layer):
    target = PACKAGE / layer
    files = sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]
    for path in files:
        assert "memstore.namespace" not in _imports(path), f"{path.name} imports the facade"


# Services build no SQL: statements live in core modules (graph, recall, embedding,
# activation) or packaged .sql files, and raw driver connections only in db/.
SERVICE_MODULES = ("namespace.py", "tx.py", "store.py", "tiers", "lifecycle", "services")
STATEMENT_BUILDERS = {
    "select", "insert", "update", "delete", "text", "exists", "union", "union_all",
    "values", "lateral", "tuple_", "cte",
}  # fmt: skip
RAW_DRIVER = {"driver_connection", "exec_driver_sql", "dbapi_connection"}
COMPOSERS = {"SQL", "Identifier", "Literal", "Composed", "Placeholder"}  # psycopg.sql


def _service_files() -> list[Path]:
    files: list[Path] = []
    for name in SERVICE_MODULES:
        target = PACKAGE / name
        files += sorted(target.rglob("*.py")) if target.is_dir() else [target]
    return files


def _sql_built(path: Path) -> list[str]:
    """Calls that build a statement (``sa.select(...)``, ``select(...)``, ``text(...)``, a
    table's ``.insert()``) or reach the raw driver connection, with their line numbers."""
    tree = ast.parse(path.read_text())
    found = []
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy")
        for alias in node.names
    }
    composing = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "psycopg"
        for alias in node.names
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in RAW_DRIVER:
            found.append(f"{node.attr} (line {node.lineno})")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in STATEMENT_BUILDERS & imported:
            found.append(f"{func.id}() (line {node.lineno})")
        elif isinstance(func, ast.Attribute) and func.attr in STATEMENT_BUILDERS:
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id in ("sa", "sqlalchemy"):
                found.append(f"sa.{func.attr}() (line {node.lineno})")
        if isinstance(func, ast.Attribute) and func.attr in COMPOSERS:
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id == "sql" and "sql" in composing:
                found.append(f"sql.{func.attr}() (line {node.lineno})")
    return found


def test_the_statement_check_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import sqlalchemy as sa\nfrom sqlalchemy import text\nfrom psycopg import sql\n"
        "q = sa.select(1)\nt = text('SELECT 1')\nraw = conn.connection.driver_connection\n"
        "c = sql.SQL('SELECT {}').format(sql.Literal(1))\n"
    )
    assert len(_sql_built(sample)) == 5


@pytest.mark.parametrize("path", _service_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_services_build_no_sql(path):
    assert not _sql_built(path), f"{path.relative_to(PACKAGE)} builds SQL: {_sql_built(path)}"


def test_the_async_api_is_a_shell_nothing_below_imports():
    """memstore.aio wraps the services; only the package root (its lazy export) and the
    other shells (cli) may import it."""
    for path in sorted(PACKAGE.rglob("*.py")):
        part = path.relative_to(PACKAGE).parts[0]
        if part in ("aio", "cli", "__init__.py"):
            continue
        for name in _imports(path):
            assert not name.startswith("memstore.aio"), f"{path.name} imports {name}"
