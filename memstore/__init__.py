"""memstore: a relational memory store for AI agents on PostgreSQL + pgvector.

Without a URL, ``open()`` starts the embedded PostgreSQL:

>>> from memstore import MemoryStore
>>> store = MemoryStore.open()          # doctest: +SKIP
>>> store.status().schema_revision      # doctest: +SKIP
'0020'
>>> store.close()                       # doctest: +SKIP
"""

from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from memstore.errors import MemstoreError
from memstore.models import StoreStatus
from memstore.store import MemoryStore

__all__ = ["MemoryStore", "MemstoreError", "StoreStatus"]
__version__ = version("memstore")

# The async API (docs/async.md), imported on first use: `memstore --help` and sync
# users do not load it.
if TYPE_CHECKING:
    from memstore.aio import AsyncMemoryStore, AsyncNamespace

__all__ += ["AsyncMemoryStore", "AsyncNamespace"]


def __getattr__(name: str) -> Any:
    if name in ("AsyncMemoryStore", "AsyncNamespace"):
        from memstore import aio

        return getattr(aio, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
