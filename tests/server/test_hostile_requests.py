"""Requests a hostile or careless client sends that the checks in front of the verbs
must refuse cleanly (problem+json, nothing written) — found by the review of stop 28.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import pytest

from memstore import MemoryStore
from memstore.config import Settings
from memstore.server.app import create_app
from memstore.server.problems import PROBLEM_JSON, TYPE_PREFIX
from tests.conftest import row_counts

CAP = 1024


def _chunks(payload: dict[str, Any], padding: int) -> AsyncIterator[bytes]:
    """``payload`` as JSON after ``padding`` spaces, sent in 1,000-byte pieces without a
    Content-Length (httpx then sends ``Transfer-Encoding: chunked``)."""

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, padding, 1000):
            yield b" " * min(1000, padding - start)
        yield json.dumps(payload).encode()

    return pieces()


def _post_chunked(
    store: MemoryStore, path: str, key: str, payload: dict[str, Any], padding: int, **headers: str
) -> httpx.Response:
    app = create_app(
        store,
        Settings(database_url="unused://", serve_key_cache_seconds=0, serve_max_body_bytes=CAP),
    )

    async def go() -> httpx.Response:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                request = http.build_request(
                    "POST",
                    path,
                    content=_chunks(payload, padding),
                    headers={
                        "Authorization": f"Bearer {key}",
                        "Content-Type": "application/json",
                        **headers,
                    },
                )
                assert "content-length" not in request.headers
                return await http.send(request)

    return anyio.run(go)


MCP_REMEMBER = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "memory_remember", "arguments": {"content": "sent in chunks"}},
}


@pytest.mark.parametrize("where", ["rest", "mcp"])
def test_a_chunked_body_over_the_cap_is_413_and_writes_nothing(store, tenant, database_url, where):
    """The cap used to be checked on Content-Length alone: a body sent without one
    (chunked) was read whole, however large, and served."""
    name, key = tenant
    before = row_counts(database_url)
    payload: dict[str, Any]
    if where == "rest":
        path, payload, extra = f"/v1/namespaces/{name}/memories", {"content": "in chunks"}, {}
    else:
        path, payload = "/mcp/", MCP_REMEMBER
        extra = {"Accept": "application/json, text/event-stream"}
    answer = _post_chunked(store, path, key, payload, padding=10 * CAP, **extra)
    assert answer.status_code == 413, answer.text
    assert answer.headers["content-type"] == PROBLEM_JSON
    assert answer.json()["type"] == TYPE_PREFIX + "body-too-large"
    assert row_counts(database_url) == before


def test_a_chunked_body_under_the_cap_is_served(store, tenant):
    name, key = tenant
    answer = _post_chunked(
        store, f"/v1/namespaces/{name}/memories", key, {"content": "small, in chunks"}, padding=500
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["content"] == "small, in chunks"


@pytest.mark.parametrize(
    "changes",
    [{"node_id": 1}, {"actor": "someone"}, {"content": "x"}, {"privacy_ceiling": 3}, {"id": 5}],
    ids=lambda changes: next(iter(changes)),
)
def test_revise_changes_that_are_no_field_of_a_memory_are_422(api, tenant, database_url, changes):
    """``changes`` is spread into the verb's keywords: a name that is one of the verb's
    own parameters (node_id) or given at the top level too (actor) used to raise a
    TypeError, answered 500."""
    name, key = tenant
    base = f"/v1/namespaces/{name}"
    node = api.post(f"{base}/memories", key=key, json={"content": "to revise"}).json()["id"]
    before = row_counts(database_url)
    answer = api.post(
        f"{base}/memories/{node}/revise",
        key=key,
        json={"content": "revised", "reason": "r", "changes": changes},
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["type"] == TYPE_PREFIX + "invalid-input"
    assert row_counts(database_url) == before


def test_revise_changes_a_field(api, tenant):
    name, key = tenant
    base = f"/v1/namespaces/{name}"
    node = api.post(f"{base}/memories", key=key, json={"content": "to revise"}).json()["id"]
    answer = api.post(
        f"{base}/memories/{node}/revise",
        key=key,
        json={"content": "revised", "reason": "r", "changes": {"label": "new label"}},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["label"] == "new label"


def _mcp_remember(store: MemoryStore, key: str, namespace: bytes, content: str) -> httpx.Response:
    """One stateless MCP tools/call, with the namespace header as raw bytes."""
    app = create_app(store, Settings(database_url="unused://", serve_key_cache_seconds=0))
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_remember", "arguments": {"content": content}},
    }

    async def go() -> httpx.Response:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                return await http.post(
                    "/mcp/",
                    json=call,
                    headers=[
                        (b"authorization", f"Bearer {key}".encode()),
                        (b"accept", b"application/json, text/event-stream"),
                        (b"mcp-protocol-version", b"2025-06-18"),
                        (b"x-memstore-namespace", namespace),
                    ],
                )

    return anyio.run(go)


def test_a_non_ascii_namespace_header_names_the_namespace_the_rest_path_names(
    api, store, key_for, database_url
):
    """The MCP header was read as Latin-1: "café" over MCP was "cafÃ©", another
    namespace than the REST path's "café"."""
    prefix = f"tenant-{uuid.uuid4().hex[:6]}/"
    key = key_for(namespace_prefix=prefix, scopes=["write"])
    name = prefix + "café"
    answer = _mcp_remember(store, key, name.encode(), "written over MCP")
    assert answer.status_code == 200, answer.text
    assert "error" not in answer.json(), answer.text
    listed = api.get(f"/v1/namespaces/{quote(name, safe='/')}/memories", key=key)
    assert [m["content"] for m in listed.json()["items"]] == ["written over MCP"]
    before = row_counts(database_url)
    refused = _mcp_remember(store, key, prefix.encode() + b"caf\xe9", "not UTF-8")
    assert refused.status_code == 422, refused.text
    assert refused.json()["type"] == TYPE_PREFIX + "invalid-input"
    assert row_counts(database_url) == before


def test_a_write_key_cannot_decide_proposals_through_apply(api, tenant, key_for, database_url):
    """POST /apply took its phase from the body under the write scope: phase "review"
    let a key without the review scope accept its own proposal (and forget a memory
    through it). The review phase now needs the review scope, as /proposals/…/accept."""
    name, admin = tenant
    base = f"/v1/namespaces/{name}"
    node = api.post(f"{base}/memories", key=admin, json={"content": "kept"}).json()["id"]
    writer = key_for(name, scopes=["write"])
    proposed = api.post(
        f"{base}/apply",
        key=writer,
        json={
            "phase": "wake",
            "ops": [
                {
                    "op": "propose",
                    "operation": {"op": "forget", "target_id": node, "reason": "old"},
                    "rationale": "r",
                    "evidence": ["turn:1"],
                }
            ],
        },
    )
    proposal = proposed.json()["results"][0]["proposal_id"]
    before = row_counts(database_url)
    for op in (
        {"op": "accept_proposal", "proposal_id": proposal},
        {"op": "reject_proposal", "proposal_id": proposal, "reason": "no"},
    ):
        answer = api.post(f"{base}/apply", key=writer, json={"phase": "review", "ops": [op]})
        assert answer.status_code == 403, answer.text
        assert answer.json()["type"] == TYPE_PREFIX + "forbidden"
    assert row_counts(database_url) == before
    assert api.get(f"{base}/memories/{node}", key=writer).json()["status"] == "current"
    reviewer = key_for(name, scopes=["review"])
    answer = api.post(
        f"{base}/apply",
        key=reviewer,
        json={"phase": "review", "ops": [{"op": "accept_proposal", "proposal_id": proposal}]},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["applied"]
