"""memstore: a relational memory store for AI agents on PostgreSQL + pgvector.

Without a URL, ``open()`` starts the embedded PostgreSQL:

>>> from memstore import MemoryStore
>>> store = MemoryStore.open()          # doctest: +SKIP
>>> store.status().schema_revision      # doctest: +SKIP
'0020'
>>> store.close()                       # doctest: +SKIP
"""

from importlib.metadata import version

from memstore.errors import MemstoreError
from memstore.models import StoreStatus
from memstore.store import MemoryStore

__all__ = ["MemoryStore", "MemstoreError", "StoreStatus"]
__version__ = version("memstore")
