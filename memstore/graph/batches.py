"""Batches for bulk ingest, prepared one ahead on a worker thread."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import TypeVar

T = TypeVar("T")
_DONE = object()


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of ``size`` items (the last may be shorter), read lazily.

    >>> list(batched("abcde", 2))
    [['a', 'b'], ['c', 'd'], ['e']]
    """
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def prefetched(items: Iterator[T]) -> Iterator[T]:
    """The items of ``items``, each computed on a worker thread while the caller uses the last.

    A bulk load alternates client work (validating, hashing, embedding a
    batch) with waits for the database (writing it); preparing batch k+1
    during the wait for batch k overlaps the two (psycopg and numpy release
    the GIL while they wait or compute). At most one item is prepared ahead,
    and only one thread ever advances ``items``. An exception raised while
    preparing an item is raised here, in the caller's thread, when that item
    is due.

    >>> list(prefetched(iter(range(3))))
    [0, 1, 2]
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memstore-prefetch") as worker:
        pending = worker.submit(next, items, _DONE)
        while True:
            item = pending.result()
            if item is _DONE:
                return
            pending = worker.submit(next, items, _DONE)
            yield item  # type: ignore[misc]
