"""The Python examples of docs/integrations.md run as written (a LangGraph graph included)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

pytest.importorskip("langgraph.graph")

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {"__name__": "docs_example"})
    return out.getvalue()


@pytest.fixture
def database(fresh_url, monkeypatch):
    monkeypatch.setenv("MEMSTORE_DATABASE_URL", fresh_url)
    return fresh_url


def test_the_doc_has_its_examples():
    assert len(BLOCKS) == 2


def test_the_graph_stores_and_searches_through_the_injected_store(database):
    lines = run(BLOCKS[0]).splitlines()
    assert eval(lines[0]) == ["Where did I move to?", "I moved to Lisbon in May"]
    assert lines[1] == "[('users', 'alice', 'memories')]"


def test_memstore_own_api_reaches_the_items(database):
    lines = run(BLOCKS[1]).splitlines()
    assert lines == [
        "['Bob drinks tea', 'Bob drinks coffee now']",
        "[('superseded', 'Bob drinks tea'), ('current', 'Bob drinks coffee now')]",
        "True",
        "Bob drinks tea",
    ]
