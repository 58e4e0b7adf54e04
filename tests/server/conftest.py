"""The REST API in process: the app on a real database, driven by httpx over ASGI."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder
from memstore.keys import create_key
from memstore.server.app import create_app


class Api:
    """A synchronous face on ``httpx.AsyncClient(transport=ASGITransport(app))``."""

    def __init__(self, portal: BlockingPortal, app: Any) -> None:
        self._portal = portal
        self.app = app
        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://memstore.test"
        )

    def request(
        self, method: str, path: str, *, key: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}) or {})
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return self._portal.call(
            lambda: self._client.request(method, path, headers=headers, **kwargs)
        )

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def close(self) -> None:
        self._portal.call(self._client.aclose)


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as running:
        yield running


@pytest.fixture(scope="module")
def store(database_url: str) -> Iterator[MemoryStore]:
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as opened:
        yield opened


def make_api(portal: BlockingPortal, store: MemoryStore, **settings: Any) -> Api:
    """An app on ``store``; keys are checked on every request unless a test asks for
    the cache (``serve_key_cache_seconds``), so a revocation shows at once."""
    merged = Settings(**{"database_url": "unused://", "serve_key_cache_seconds": 0, **settings})
    return Api(portal, create_app(store, merged))


@pytest.fixture(scope="module")
def api(portal: BlockingPortal, store: MemoryStore) -> Iterator[Api]:
    client = make_api(portal, store)
    yield client
    client.close()


@pytest.fixture
def key_for(store: MemoryStore) -> Callable[..., str]:
    """Factory: the secret of a new key (default: read+write on the given namespace)."""

    def make(namespace: str | None = None, **kwargs: Any) -> str:
        return create_key(store.engine, namespace=namespace, **kwargs).key

    return make


@pytest.fixture
def tenant(key_for: Callable[..., str]) -> tuple[str, str]:
    """A fresh namespace and an admin key for it."""
    name = f"tenant-{uuid.uuid4().hex[:8]}"
    return name, key_for(name, scopes=["admin"])
