"""End to end: ``memstore serve`` as a subprocess, driven by the official MCP client over
streamable HTTP with an API key."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memstore.keys import create_key
from tests.server.serving import serving


@pytest.fixture(scope="module")
def served(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of ``memstore serve`` on this module's database."""
    with serving(database_url, tmp_path_factory.mktemp("serve") / "serve.log") as base:
        yield base


def test_mcp_over_streamable_http_against_memstore_serve(served, store):
    name = f"serve-{uuid.uuid4().hex[:8]}"
    key = create_key(store.engine, namespace=name, scopes=["write"], name="e2e").key

    async def session() -> tuple[list[str], int, list[int]]:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(f"{served}/mcp/", http_client=http)) as client,
        ):
            tools = [t.name for t in (await client.list_tools()).tools]
            stored = await client.call_tool("memory_remember", {"content": "served over HTTP"})
            assert stored.structured_content is not None, stored.content
            recalled = await client.call_tool("memory_recall", {"query": "served", "k": 3})
            assert recalled.structured_content is not None, recalled.content
            hits = [h["id"] for h in recalled.structured_content["hits"]]
            return tools, stored.structured_content["memory"]["id"], hits

    tools, node_id, hits = anyio.run(session)
    assert "memory_recall" in tools and "memory_remember" in tools
    assert hits[0] == node_id
    assert store.namespace(name).get(node_id).actor == "e2e"

    refused = httpx2.post(f"{served}/mcp/", json={}, headers={"Authorization": "Bearer nope"})
    assert refused.status_code == 401
    assert key not in refused.text
