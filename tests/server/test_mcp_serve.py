"""End to end: ``memstore serve`` as a subprocess, driven by the official MCP client over
streamable HTTP with an API key."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memstore.keys import create_key
from tests.conftest import MEMSTORE_CLI


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def served(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of ``memstore serve`` on this module's database (its log in a file: a
    pipe nobody reads would block it once full)."""
    port = free_port()
    environment = {**os.environ, "MEMSTORE_DATABASE_URL": database_url}
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [MEMSTORE_CLI, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx2.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"memstore serve did not start: {log.read_text()}")
            time.sleep(0.2)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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
            hits = [h["node"]["id"] for h in recalled.structured_content["hits"]]
            return tools, stored.structured_content["memory"]["id"], hits

    tools, node_id, hits = anyio.run(session)
    assert "memory_recall" in tools and "memory_remember" in tools
    assert hits[0] == node_id
    assert store.namespace(name).get(node_id).actor == "e2e"

    refused = httpx2.post(f"{served}/mcp/", json={}, headers={"Authorization": "Bearer nope"})
    assert refused.status_code == 401
    assert key not in refused.text
