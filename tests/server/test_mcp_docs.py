"""docs/mcp.md stays true: its client configurations start and answer, its Python runs."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memstore.keys import create_key
from memstore.server.mcp_tools import DEFAULT_TOOLS, EXTENDED_TOOLS
from tests.conftest import MEMSTORE_CLI
from tests.server.serving import serving

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
DOC_BASE = "http://127.0.0.1:8750"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def entries() -> list[tuple[str, dict[str, Any]]]:
    """(name, server entry) of every JSON configuration in the doc."""
    found = []
    for block in blocks("json"):
        config = json.loads(block)
        servers = config.get("mcpServers") or config.get("servers")
        assert servers, block
        found.extend(servers.items())
    return found


@pytest.fixture(scope="module")
def served(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(database_url, tmp_path_factory.mktemp("serve") / "serve.log") as base:
        yield base


def tool_names(client_of: Any) -> list[str]:
    async def go() -> list[str]:
        async with client_of() as client:
            return [t.name for t in (await client.list_tools()).tools]

    return anyio.run(go)


def test_every_configuration_is_json_naming_stdio_or_http():
    found = entries()
    assert len(found) >= 5
    for name, entry in found:
        if "command" in entry:
            assert entry["command"] == "memstore" and entry["args"][:2] == ["mcp", "--namespace"]
        else:
            assert entry["url"] == f"{DOC_BASE}/mcp/", name
            assert entry["headers"]["Authorization"].startswith("Bearer "), name


def test_the_stdio_configurations_start_and_list_their_tools(database_url):
    environment = {**os.environ, "MEMSTORE_DATABASE_URL": database_url}
    launched = {tuple(e["args"]) for _, e in entries() if "command" in e}
    for args in sorted(launched):
        params = StdioServerParameters(command=MEMSTORE_CLI, args=list(args), env=environment)
        names = tool_names(lambda params=params: Client(params, read_timeout_seconds=120))
        expected = [*DEFAULT_TOOLS, *EXTENDED_TOOLS] if "all" in args else list(DEFAULT_TOOLS)
        assert names == expected, args


def test_the_http_configurations_reach_memstore_serve(served, store):
    key = create_key(store.engine, namespace="my-agent", scopes=["read"]).key
    for name, entry in entries():
        if "url" not in entry:
            continue
        url = entry["url"].replace(DOC_BASE, served)

        @asynccontextmanager
        async def client(url: str = url) -> AsyncIterator[Client]:
            headers = {"Authorization": f"Bearer {key}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as connected,
            ):
                yield connected

        assert tool_names(client) == list(DEFAULT_TOOLS), name


def test_the_python_client_runs(served, store, capsys, monkeypatch):
    name = f"doc-{uuid.uuid4().hex[:6]}"
    key = create_key(store.engine, namespace=name, scopes=["write"]).key
    monkeypatch.setenv("MEMSTORE_MCP_URL", f"{served}/mcp/")
    monkeypatch.setenv("MEMSTORE_API_KEY", key)
    client_code = next(b for b in blocks("python") if "streamable_http_client" in b)
    exec(compile(client_code, str(DOC), "exec"), {"__name__": "docs"})
    printed = capsys.readouterr().out
    assert '"Maya is allergic to peanuts"' in printed
    assert [h.node.content for h in store.namespace(name).recall("peanuts")][:1] == [
        "Maya is allergic to peanuts"
    ]


def test_the_python_factory_runs(ns):
    factory_code = next(b for b in blocks("python") if "build_mcp(" in b)
    scope: dict[str, Any] = {"ns": ns}
    exec(compile(factory_code, str(DOC), "exec"), scope)
    assert tool_names(lambda: Client(scope["server"])) == list(DEFAULT_TOOLS)
