"""The ASGI app of ``memstore serve``: REST under /v1, MCP at /mcp, health, OpenAPI.

:func:`create_app` builds it around a :class:`ServerState`, which holds the
store, the settings and the per-key rate limiter, and which every shell uses
to turn a request into a namespace:

    principal = state.authenticate(authorization)   # 401, 429
    ns = state.namespace_for(principal, name, "read")  # 404, 403

MCP is mounted at ``/mcp`` when the module ``memstore.server.mcp`` exists: it
must define ``mcp_asgi_app(state: ServerState) -> ASGI app``. Work that has to
run for the app's lifetime (a session manager) is registered with
``state.lifespans.append(factory)``, where ``factory()`` returns an async
context manager; the app enters each after opening the store and leaves them
before closing it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from memstore.config import Settings
from memstore.errors import DatabaseUnavailableError, NodeNotFoundError
from memstore.server.auth import KeyCache, Principal, authenticate
from memstore.server.ratelimit import RateLimiter

if TYPE_CHECKING:
    from fastapi import FastAPI

    from memstore.embedding.base import Embedder
    from memstore.namespace import Namespace
    from memstore.store import MemoryStore

log = logging.getLogger("memstore.server")

API_TITLE = "memstore"


class ServerState:
    """What every request of one app shares: the store, settings, rate limiter."""

    def __init__(self, store: MemoryStore | None, settings: Settings) -> None:
        self._store = store
        self.owns_store = store is None
        self.settings = settings
        self.limiter = RateLimiter(settings.serve_rate_limit, settings.serve_rate_burst)
        self.keys = KeyCache(settings.serve_key_cache_seconds)
        self.lifespans: list[Callable[[], AbstractAsyncContextManager[Any]]] = []

    @property
    def store(self) -> MemoryStore:
        """The open store (503 before the app started or after it stopped)."""
        if self._store is None:
            raise DatabaseUnavailableError(
                "the store is not open (the server is starting or stopping)"
            )
        return self._store

    def open(self) -> None:
        """Open the store from the settings, unless one was given."""
        if self._store is None:
            from memstore.store import MemoryStore

            self._store = MemoryStore.open(settings=self.settings, embedder=self._embedder())

    def _embedder(self) -> Embedder | None:
        """The neural embedder with ``serve_embedder_threads`` intra-op threads, when set,
        batching concurrent queries unless ``serve_embedder_batching`` is off; None (the
        store's own choice) otherwise."""
        threads = self.settings.serve_embedder_threads
        if threads is None or self.settings.embedder not in ("auto", "neural"):
            return None
        from memstore.embedding.select import neural_available

        if not neural_available():
            return None  # the store then refuses "neural", or falls back for "auto"
        from memstore.embedding import onnx

        embedder: Embedder = onnx.load_default(threads=threads)
        if self.settings.serve_embedder_batching:
            from memstore.server.batching import BatchingEmbedder

            embedder = BatchingEmbedder(embedder)
        return embedder

    def close(self) -> None:
        """Close the store if this state opened it."""
        if self.owns_store and self._store is not None:
            store, self._store = self._store, None
            store.close()

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal of an Authorization header, after its rate limit (401, 429).

        A key checked within ``serve_key_cache_seconds`` is trusted without a
        round trip to the database (until its expiry): that is how long a
        revocation may take to reach this process.
        """
        principal = self.keys.get(authorization)
        if principal is None:
            principal = authenticate(self.store, authorization)
            self.keys.put(authorization, principal)
        self.limiter.admit(principal.key_id)
        return principal

    def namespace_for(self, principal: Principal, name: str, scope: str) -> Namespace:
        """The namespace ``name`` if ``principal`` reaches it with ``scope``.

        A namespace the key does not reach answers exactly as a memory that
        does not exist (404), so a key learns nothing of other tenants; only
        then is the scope checked (403).
        """
        if not principal.allows(name):
            raise NodeNotFoundError("not found", namespace=name, target_id=0)
        principal.require(scope)
        return self.store.namespace(name)


def create_app(store: MemoryStore | None = None, settings: Settings | None = None) -> FastAPI:
    """The ASGI app; with ``store=None`` it opens (and at shutdown closes) its own store.

    A given store stays the caller's: the app never closes it.
    """
    from fastapi import FastAPI

    from memstore.server import errors_http, routes

    settings = settings or (store.settings if store is not None else Settings())
    state = ServerState(store, settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from starlette.concurrency import run_in_threadpool

        await run_in_threadpool(state.open)
        try:
            async with AsyncExitStack() as stack:
                for factory in state.lifespans:
                    await stack.enter_async_context(factory())
                yield
        finally:
            await run_in_threadpool(state.close)

    app = FastAPI(
        title=API_TITLE,
        version=_version(),
        description="A relational memory store for AI agents (docs/server.md).",
        lifespan=lifespan,
    )
    app.state.memstore = state
    errors_http.install(app, settings)
    app.include_router(routes.health)
    app.include_router(routes.api, prefix="/v1")
    _mount_mcp(app, state)
    return app


def _mount_mcp(app: FastAPI, state: ServerState) -> None:
    from importlib import import_module
    from importlib.util import find_spec

    if find_spec("memstore.server.mcp") is None:
        return  # MCP is not part of this build
    # Imported only when present; an error inside it is not hidden.
    app.mount("/mcp", import_module("memstore.server.mcp").mcp_asgi_app(state))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memstore")
    except PackageNotFoundError:
        return "0"


def state_of(app: Any) -> ServerState:
    """The :class:`ServerState` of an app made by :func:`create_app`."""
    state = app.state.memstore
    assert isinstance(state, ServerState)
    return state


__all__ = ["ServerState", "create_app", "state_of"]
