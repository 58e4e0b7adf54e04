"""The async API: every verb of the sync API as a coroutine (docs/async.md).

>>> store = await AsyncMemoryStore.open(url)            # doctest: +SKIP
>>> ns = await store.namespace("agent-7")                # doctest: +SKIP
>>> hits = await ns.recall("where does Alice live?")     # doctest: +SKIP
>>> await store.close()                                  # doctest: +SKIP

The classes are generated from the sync ones (memstore/aio/generate.py) and imported on
first use, so the generator still runs when they are out of date.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memstore.aio._offload import AsyncContext, TransactionOverError

if TYPE_CHECKING:
    from memstore.aio._surface import (
        AsyncConsolidation,
        AsyncLessons,
        AsyncMemoryStore,
        AsyncNamespace,
        AsyncNamespaceTransaction,
        AsyncProcedures,
        AsyncReview,
        AsyncScratchpad,
        AsyncTimeline,
    )

__all__ = [
    "AsyncConsolidation",
    "AsyncContext",
    "AsyncLessons",
    "AsyncMemoryStore",
    "AsyncNamespace",
    "AsyncNamespaceTransaction",
    "AsyncProcedures",
    "AsyncReview",
    "AsyncScratchpad",
    "AsyncTimeline",
    "TransactionOverError",
]


def __getattr__(name: str) -> Any:
    if name.startswith("Async"):
        from memstore.aio import _surface

        return getattr(_surface, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
