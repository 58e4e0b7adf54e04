"""docs/async.md stays true: its quickstart and its FastAPI example run as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "async.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


@pytest.fixture
def environment(monkeypatch, database_url):
    """What the examples read: the database (no embedded server) and the hashing embedder."""
    monkeypatch.setenv("MEMSTORE_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMSTORE_EMBEDDER", "hashing")


def test_the_quickstart_runs(environment, capsys):
    quickstart = python_blocks()[0]
    exec(compile(quickstart, f"{DOC}:quickstart", "exec"), {"__name__": "quickstart"})
    printed = capsys.readouterr().out
    assert printed.startswith("Alice lives in Porto\n")
    assert "Maya is allergic to peanuts" in printed


def test_the_fastapi_example_serves(environment):
    pytest.importorskip("fastapi", reason="the FastAPI example needs fastapi (the test extra)")
    from fastapi.testclient import TestClient

    example: dict[str, Any] = {"__name__": "fastapi_example"}
    exec(compile(python_blocks()[1], f"{DOC}:fastapi", "exec"), example)
    with TestClient(example["app"]) as client:
        stored = client.post("/agents/agent-9/memories", json={"content": "Maya likes tea"})
        assert stored.status_code == 200, stored.text
        node = stored.json()
        assert node["content"] == "Maya likes tea"
        assert client.get(f"/agents/agent-9/memories/{node['id']}").json()["id"] == node["id"]
        assert client.get("/agents/agent-9/memories/999999999").status_code == 404
        hits = client.get("/agents/agent-9/recall", params={"q": "what does Maya like?"})
        assert hits.status_code == 200, hits.text
        assert hits.json()[0]["node"]["id"] == node["id"]
        other = client.get("/agents/someone-else/recall", params={"q": "Maya"})
        assert other.json() == []  # another namespace sees nothing of agent-9's
        assert client.post("/agents/agent-9/memories", json={}).status_code == 422
