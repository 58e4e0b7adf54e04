"""memstore: a relational memory store for AI agents on PostgreSQL + pgvector.

Without a URL, ``open()`` starts the embedded PostgreSQL:

>>> from memstore import MemoryStore
>>> store = MemoryStore.open()          # doctest: +SKIP
>>> store.status().schema_revision      # doctest: +SKIP
'0020'
>>> store.close()                       # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstore.errors import MemstoreError
    from memstore.models import StoreStatus
    from memstore.store import MemoryStore

__all__ = ["MemoryStore", "MemstoreError", "StoreStatus"]

# The public names load on first use (PEP 562): importing the package, which
# every submodule does (the ``memstore`` command too), must not import
# SQLAlchemy, psycopg, pydantic and numpy before they are needed.
_LAZY = {
    "MemoryStore": "memstore.store",
    "MemstoreError": "memstore.errors",
    "StoreStatus": "memstore.models",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name]), name)
    elif name == "__version__":
        from importlib.metadata import version

        value = version("memstore")
    else:
        raise AttributeError(f"module 'memstore' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, "__version__"])
