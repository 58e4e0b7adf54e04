"""MCP over streamable HTTP inside ``create_app``: API keys, namespaces, refusals.

The official client drives the app in process (httpx2's ASGI transport, the app's
lifespan running), on a real database.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from memstore import MemoryStore
from memstore.config import Settings
from memstore.keys import create_key, revoke_key
from memstore.server.app import create_app
from memstore.server.mcp_tools import DEFAULT_TOOLS
from tests.conftest import row_counts

URL = "http://memstore.test/mcp/"


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def without(text: str, node_id: int) -> str:
    """``text`` with the id ``node_id`` (a whole number, not digits inside a name) as N."""
    return re.sub(rf"\b{node_id}\b", "N", text)


def over_http(
    store: MemoryStore,
    work: Callable[[Client], Awaitable[Any]],
    *,
    key: str | None,
    namespace: str | None = None,
) -> Any:
    """``work(client)`` with an MCP client of ``create_app(store)`` at /mcp."""
    app = create_app(store, Settings(database_url="unused://"))
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    if namespace is not None:
        headers["X-Memstore-Namespace"] = namespace

    async def go() -> Any:
        async with app.router.lifespan_context(app):
            http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), headers=headers)
            async with http, Client(streamable_http_client(URL, http_client=http)) as client:
                return await work(client)

    return anyio.run(go)


def raw_post(
    store: MemoryStore, headers: dict[str, str], *, times: int = 1, **settings: Any
) -> httpx2.Response:
    """``times`` initialize requests to one app; the last answer. A refused key is
    answered before MCP sees the request."""
    app = create_app(store, Settings(database_url="unused://", **settings))
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }

    async def go() -> httpx2.Response:
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport) as http:
                for _ in range(times):
                    answer = await http.post(
                        URL,
                        json=body,
                        headers={**headers, "Accept": "application/json, text/event-stream"},
                    )
                return answer

    return anyio.run(go)


def tenant(store: MemoryStore, **kwargs: Any) -> tuple[str, str]:
    name = f"http-{uuid.uuid4().hex[:8]}"
    return name, create_key(store.engine, namespace=name, name="agent-key", **kwargs).key


def test_a_key_reaches_its_namespace_over_http(store):
    name, key = tenant(store, scopes=["write"])

    async def work(client: Client) -> tuple[list[str], CallToolResult, CallToolResult]:
        tools = [t.name for t in (await client.list_tools()).tools]
        stored = await client.call_tool("memory_remember", {"content": "over HTTP"})
        recalled = await client.call_tool("memory_recall", {"query": "HTTP", "top_k": "1"})
        return tools, stored, recalled

    tools, stored, recalled = over_http(store, work, key=key)
    assert tools == list(DEFAULT_TOOLS)
    assert stored.structured_content is not None and not stored.is_error
    node_id = stored.structured_content["memory"]["id"]
    assert recalled.structured_content is not None
    assert recalled.structured_content["hits"][0]["id"] == node_id
    node = store.namespace(name).get(node_id)
    assert node.content == "over HTTP" and node.actor == "agent-key"


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({}, "required"),
        ({"Authorization": "Basic abc"}, "Bearer"),
        ({"Authorization": "Bearer msk_not_a_real_key"}, ""),
    ],
)
def test_no_valid_key_is_401_problem_json(store, headers, reason):
    answer = raw_post(store, headers)
    assert answer.status_code == 401
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["www-authenticate"] == "Bearer"
    assert reason in answer.json()["detail"]


def test_revoked_and_expired_keys_are_refused(store):
    _, key = tenant(store)
    revoke_key(store.engine, create_key(store.engine, namespace="x").id)  # another key
    assert raw_post(store, {"Authorization": f"Bearer {key}"}).status_code == 200
    revoked = create_key(store.engine, namespace="x")
    revoke_key(store.engine, revoked.id)
    answer = raw_post(store, {"Authorization": f"Bearer {revoked.key}"})
    assert answer.status_code == 401 and revoked.key not in answer.text
    expired = create_key(store.engine, namespace="x", expires_in_days=1 / 86_400)  # 1 s
    time.sleep(1.5)
    assert raw_post(store, {"Authorization": f"Bearer {expired.key}"}).status_code == 401


def test_another_tenants_namespace_is_404_like_one_that_does_not_exist(store):
    _, key = tenant(store)
    other, _ = tenant(store)
    store.namespace(other).remember("theirs")
    taken = raw_post(store, {"Authorization": f"Bearer {key}", "X-Memstore-Namespace": other})
    nowhere = raw_post(
        store, {"Authorization": f"Bearer {key}", "X-Memstore-Namespace": "no-such-namespace"}
    )
    assert taken.status_code == nowhere.status_code == 404
    assert taken.json()["detail"] == nowhere.json()["detail"]


def test_a_prefix_key_names_its_namespace_with_a_header(store):
    prefix = f"tenant-{uuid.uuid4().hex[:6]}/"
    key = create_key(store.engine, namespace_prefix=prefix, scopes=["write"]).key
    missing = raw_post(store, {"Authorization": f"Bearer {key}"})
    assert missing.status_code == 422 and "X-Memstore-Namespace" in missing.json()["detail"]
    outside = raw_post(store, {"Authorization": f"Bearer {key}", "X-Memstore-Namespace": "alice"})
    assert outside.status_code == 404

    async def remember(client: Client) -> CallToolResult:
        return await client.call_tool("memory_remember", {"content": "Alice's note"})

    stored = over_http(store, remember, key=key, namespace=prefix + "alice")
    assert stored.structured_content is not None, text_of(stored)
    node_id = stored.structured_content["memory"]["id"]
    assert store.namespace(prefix + "alice").get(node_id).content == "Alice's note"


def test_another_tenants_ids_are_not_found_over_http(store, database_url):
    _, key = tenant(store)
    other, _ = tenant(store)
    theirs = store.namespace(other).remember("their secret plan").id
    never = 9_000_000_000

    async def probe(client: Client) -> list[tuple[str, str]]:
        answers = []
        for node_id in (theirs, never):
            for tool, arguments in [
                ("memory_get", {"id": node_id}),
                ("memory_forget", {"id": node_id, "reason": "r"}),
                ("memory_revise", {"id": node_id, "content": "x", "reason": "r"}),
            ]:
                result = await client.call_tool(tool, arguments)
                assert result.is_error
                answers.append((tool, without(text_of(result), node_id)))
        return answers

    before = row_counts(database_url)
    answers = over_http(store, probe, key=key)
    assert answers[:3] == answers[3:]
    assert all("secret" not in text and other not in text for _, text in answers)
    assert row_counts(database_url) == before


def test_a_read_key_cannot_write_over_http(store, database_url):
    _, key = tenant(store, scopes=["read"])

    async def write(client: Client) -> CallToolResult:
        return await client.call_tool("memory_remember", {"content": "not allowed"})

    before = row_counts(database_url)
    result = over_http(store, write, key=key)
    assert result.is_error and "may not write" in text_of(result)
    assert row_counts(database_url) == before
    assert json.dumps("not allowed") not in text_of(result)


def test_the_keys_rate_limit_applies_to_mcp(store):
    _, key = tenant(store)
    headers = {"Authorization": f"Bearer {key}"}
    limited = {"serve_rate_limit": 0.01, "serve_rate_burst": 2}
    assert raw_post(store, headers, times=2, **limited).status_code == 200
    answer = raw_post(store, headers, times=3, **limited)
    assert answer.status_code == 429
    assert answer.headers["content-type"] == "application/problem+json"
    assert int(answer.headers["retry-after"]) >= 1
