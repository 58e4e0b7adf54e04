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
    # API keys are a service over db; the server is a shell like the CLI.
    "keys": ("memstore.store", "memstore.cli", "memstore.server"),
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
