"""Where the shipped migrations/ and sql/ directories are.

In the repository they sit at the top level; in a wheel they are packaged under
``memstore/_resources`` (see ``force-include`` in pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


def _resource_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "_resources" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"memstore cannot find its {name}/ directory: the installation is incomplete"
    )


def migrations_dir() -> Path:
    """The Alembic script directory."""
    return _resource_dir("migrations")


def sql_dir() -> Path:
    """The current definitions of triggers, functions and views."""
    return _resource_dir("sql")
