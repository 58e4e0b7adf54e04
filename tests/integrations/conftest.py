"""Fixtures of the framework adapters: a fresh database per test, as LangGraph's own
store tests use, so listing namespaces sees only what the test wrote."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("langgraph.store.base")

from memstore import MemoryStore
from memstore.integrations.langgraph import MemstoreStore


@pytest.fixture
def fresh_url(make_database: Callable[..., str]) -> str:
    """A database at head, private to one test."""
    return make_database()


@pytest.fixture
def memory_store(fresh_url: str) -> Iterator[MemoryStore]:
    with MemoryStore.open(fresh_url) as store:
        yield store


@pytest.fixture
def store(memory_store: MemoryStore) -> MemstoreStore:
    """The adapter over an open memstore (hashing embedder, hybrid recall)."""
    return MemstoreStore(memory_store)
