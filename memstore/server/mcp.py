"""MCP transports: stdio for a desktop client, streamable HTTP inside ``memstore serve``.

Both build the same tools (:func:`memstore.server.mcp_tools.build_mcp`); they
differ only in who the caller is:

- **stdio** (``memstore mcp --namespace NS``): the person who launched the
  command, who already holds the database credentials. The namespace is the
  one on the command line; the scopes are ``read`` and ``write`` unless
  ``--scope`` says otherwise (``review`` is left out by default so an agent
  cannot accept its own proposals).
- **HTTP** (:class:`McpHttpApp`, mounted at ``/mcp``): every request carries an
  API key (``Authorization: Bearer …``), authenticated on every request. A key
  bound to one namespace uses it; a key bound to a prefix names its namespace
  with the ``X-Memstore-Namespace`` header, which must start with the prefix.
  No key, or a revoked or expired one: 401. A namespace the key does not reach:
  404, the same answer as a namespace that does not exist.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidInputError, MemstoreError
from memstore.server.mcp_tools import SCOPES, Caller, ToolSet, build_mcp

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.types import Receive, Scope, Send

    from memstore.store import MemoryStore

NAMESPACE_HEADER = "x-memstore-namespace"
STDIO_SCOPES = frozenset({"read", "write"})
CALLER_KEY = "memstore.caller"
# What a write implies (as the API keys' scopes do): every write answers with what it wrote.
_IMPLIED = {"write": {"read"}, "admin": set(SCOPES)}


def granted(scopes: Iterable[str]) -> frozenset[str]:
    """``scopes`` with the ones they imply (write → read; admin → all); unknown ones refused."""
    result: set[str] = set()
    for scope in scopes:
        if scope not in SCOPES:
            raise InvalidInputError(
                f"unknown scope {scope!r}: use {', '.join(SCOPES)}", field="scope"
            )
        result |= {scope, *_IMPLIED.get(scope, ())}
    return frozenset(result)


def stdio_server(
    store: MemoryStore,
    namespace: str,
    *,
    tools: ToolSet = "default",
    scopes: Iterable[str] = STDIO_SCOPES,
    actor: str = "mcp",
) -> MCPServer:
    """The server ``memstore mcp`` runs over stdio: one namespace, fixed scopes."""
    caller = Caller(namespace=store.namespace(namespace), scopes=granted(scopes), actor=actor)
    return build_mcp(lambda _request: caller, tools=tools)


def _problem(status: int, title: str, detail: str) -> tuple[int, bytes]:
    body = {
        "type": f"https://memstore.dev/problems/{title.lower().replace(' ', '-')}",
        "title": title,
        "status": status,
        "detail": detail,
    }
    return status, json.dumps(body).encode()


class McpHttpApp:
    """MCP over streamable HTTP for ``memstore serve``, authenticated by API key.

    An ASGI app: mount it (``app.mount("/mcp", mcp_app)``) and run
    ``async with mcp_app.running():`` in the host app's lifespan (a mounted
    app's own lifespan is not run). Stateless and JSON-answering, so any
    number of server processes can sit behind a proxy.
    """

    def __init__(self, store: MemoryStore, *, tools: ToolSet = "default", host: str = "127.0.0.1"):
        self.store = store
        self.server = build_mcp(self._caller_of, tools=tools)
        # Builds the session manager (its Starlette app is not used: requests
        # reach the manager through __call__, after authentication).
        self.server.streamable_http_app(
            streamable_http_path="/", stateless_http=True, json_response=True, host=host
        )
        self._manager = self.server.session_manager

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group; enter it once, in the host app's lifespan."""
        async with self._manager.run():
            yield

    @staticmethod
    def _caller_of(request: Any) -> Caller:
        caller = None if request is None else request.scope.get(CALLER_KEY)
        if not isinstance(caller, Caller):
            # Only __call__ sends requests here, and it always sets the caller.
            raise InvalidInputError("this request was not authenticated")
        return caller

    def authorize(self, authorization: str | None, namespace: str | None) -> Caller:
        """The caller of a request with these headers, or the memstore error that refuses it."""
        from memstore.errors import NodeNotFoundError
        from memstore.server.auth import authenticate

        principal = authenticate(self.store, authorization)
        name = namespace if namespace else principal.namespace
        if name is None:
            raise InvalidInputError(
                "this API key serves the namespaces under a prefix: name one with the"
                " X-Memstore-Namespace header",
                field="namespace",
            )
        if not principal.allows(name):
            # Exactly what a namespace that does not exist would answer.
            raise NodeNotFoundError(f"namespace {name!r} not found", namespace=name, target_id=0)
        return Caller(
            namespace=self.store.namespace(name),
            scopes=principal.granted,
            actor=principal.name or f"key:{principal.key_id}",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._manager.handle_request(scope, receive, send)
            return
        import anyio.to_thread

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            caller = await anyio.to_thread.run_sync(
                self.authorize, headers.get("authorization"), headers.get(NAMESPACE_HEADER)
            )
        except MemstoreError as exc:
            status, body = self._refusal(exc)
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/problem+json"),
                        *([(b"www-authenticate", b"Bearer")] if status == 401 else []),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self._manager.handle_request({**scope, CALLER_KEY: caller}, receive, send)

    @staticmethod
    def _refusal(exc: MemstoreError) -> tuple[int, bytes]:
        from memstore.errors import AuthenticationError, NotFoundError

        if isinstance(exc, AuthenticationError):
            return _problem(401, "Unauthorized", str(exc))
        if isinstance(exc, NotFoundError):
            return _problem(404, "Not Found", str(exc))
        if isinstance(exc, InvalidInputError):
            return _problem(400, "Bad Request", str(exc))
        return _problem(503, "Service Unavailable", "the store cannot answer now")


def mcp_asgi_app(
    store: MemoryStore, *, tools: ToolSet = "default", host: str = "127.0.0.1"
) -> McpHttpApp:
    """The ``/mcp`` app of ``memstore serve`` (see :class:`McpHttpApp`)."""
    return McpHttpApp(store, tools=tools, host=host)


__all__ = [
    "NAMESPACE_HEADER",
    "STDIO_SCOPES",
    "McpHttpApp",
    "granted",
    "mcp_asgi_app",
    "stdio_server",
]
