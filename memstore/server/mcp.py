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
import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidInputError, MemstoreError
from memstore.server.mcp_tools import SCOPES, Caller, ToolSet, build_mcp

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.types import Receive, Scope, Send

    from memstore.server.app import ServerState
    from memstore.store import MemoryStore

NAMESPACE_HEADER = "x-memstore-namespace"
TOOLS_ENV = "MEMSTORE_MCP_TOOLS"
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


class McpHttpApp:
    """MCP over streamable HTTP for ``memstore serve``, authenticated by API key.

    An ASGI app that ``create_app`` mounts at ``/mcp``; it registers its session
    manager in ``state.lifespans``, so the host app runs it. Stateless and
    answering in JSON, so any number of server processes can sit behind a proxy.
    """

    def __init__(self, state: ServerState, *, tools: ToolSet = "default"):
        from mcp.server.transport_security import TransportSecuritySettings

        self.state = state
        self.server = build_mcp(self._caller_of, tools=tools)
        # Builds the session manager; its Starlette app is not used: requests
        # reach the manager through __call__, after authentication. DNS
        # rebinding protection (a Host allow-list) is off: every request needs
        # a bearer key, which a page a browser was tricked into loading does
        # not have, and a Host allow-list would refuse a reverse proxy's name.
        self.server.streamable_http_app(
            streamable_http_path="/",
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._manager = self.server.session_manager
        state.lifespans.append(self.running)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group, for the host app's lifespan."""
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
        """The caller of a request with these headers, or the memstore error that refuses it:
        no valid key (401), over its rate (429), a namespace it does not reach (404, as one
        that does not exist), a prefix key without the namespace header (422)."""
        from memstore.errors import NodeNotFoundError

        principal = self.state.authenticate(authorization)
        name = namespace or principal.namespace
        if name is None:
            raise InvalidInputError(
                "this API key serves the namespaces under a prefix: name one with the"
                " X-Memstore-Namespace header",
                field="namespace",
            )
        if not principal.allows(name):
            raise NodeNotFoundError("not found", namespace=name, target_id=0)
        return Caller(
            namespace=self.state.store.namespace(name),
            scopes=principal.granted,
            actor=principal.name or f"key:{principal.key_id}",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._manager.handle_request(scope, receive, send)
            return
        import anyio.to_thread

        headers = {k.decode("latin-1").lower(): v for k, v in scope["headers"]}
        authorization = headers.get("authorization")
        try:
            namespace = _namespace_header(headers.get(NAMESPACE_HEADER))
            caller = await anyio.to_thread.run_sync(
                self.authorize,
                None if authorization is None else authorization.decode("latin-1"),
                namespace,
            )
        except MemstoreError as exc:
            await _refuse(exc, send)
            return
        await self._manager.handle_request({**scope, CALLER_KEY: caller}, receive, send)


def _namespace_header(value: bytes | None) -> str | None:
    """The namespace a request names in its header, read as UTF-8 — as a REST path's
    name is — so one name reaches one namespace whichever way it comes (read as
    Latin-1, "café" was another namespace, "cafÃ©")."""
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(
            "the X-Memstore-Namespace header must be UTF-8", field="namespace"
        ) from None


async def _refuse(exc: MemstoreError, send: Send) -> None:
    """The problem+json answer of a refused request (the REST API's own table)."""
    from memstore.errors import AuthenticationError
    from memstore.server.problems import PROBLEM_JSON, problem_of

    body = problem_of(exc)
    headers = [(b"content-type", PROBLEM_JSON.encode())]
    if isinstance(exc, AuthenticationError):
        headers.append((b"www-authenticate", b"Bearer"))
    if "retry_after" in body:
        headers.append((b"retry-after", str(body["retry_after"]).encode()))
    await send({"type": "http.response.start", "status": body["status"], "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def mcp_asgi_app(state: ServerState, *, tools: ToolSet | None = None) -> McpHttpApp:
    """The ``/mcp`` app of ``memstore serve`` (see :class:`McpHttpApp`); ``tools`` defaults
    to ``MEMSTORE_MCP_TOOLS`` (``default`` or ``all``; the same variable as ``memstore mcp``)."""
    if tools is None:
        chosen = os.environ.get(TOOLS_ENV, "default")
        if chosen not in ("default", "all"):
            raise InvalidInputError(f"{TOOLS_ENV} must be default or all", field="tools")
        tools = "all" if chosen == "all" else "default"
    return McpHttpApp(state, tools=tools)


__all__ = [
    "NAMESPACE_HEADER",
    "STDIO_SCOPES",
    "McpHttpApp",
    "granted",
    "mcp_asgi_app",
    "stdio_server",
]
