"""docs/server.md stays true: its HTTP examples, its curl line and its error example run."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from memstore.keys import create_key
from memstore.server.problems import PROBLEMS, TYPE_PREFIX

DOC = (Path(__file__).resolve().parents[2] / "docs" / "server.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC, flags=re.S)


def test_the_http_examples_run_in_order(api, store):
    key = create_key(store.engine, namespace="agent-7", scopes=["admin"]).key
    examples = blocks("http")
    assert len(examples) >= 15
    for example in examples:
        line, _, body = example.strip().partition("\n")
        method, path = line.split()
        payload: Any = json.loads(body) if body.strip() else None
        response = api.request(method, path, key=key, json=payload)
        assert response.status_code < 400, (line, response.text)
    # What the examples claim: ids, the lineage, the revision.
    assert [
        n["id"] for n in api.get("/v1/namespaces/agent-7/memories/4/lineage", key=key).json()
    ] == [1, 4]


def test_the_curl_example_runs(api, store):
    [curl] = [b for b in blocks("sh") if b.startswith("curl")]
    words = shlex.split(curl)
    url = words[words.index("-X") + 2]
    body = json.loads(words[words.index("-d") + 1])
    key = create_key(store.engine, namespace="agent-7").key
    assert '"Authorization: Bearer $MEMSTORE_KEY"' in curl
    response = api.post(url.removeprefix("http://127.0.0.1:8750"), key=key, json=body)
    assert response.status_code in (200, 201), response.text


def test_the_error_example_is_what_the_server_answers(api, store):
    [example] = [json.loads(b) for b in blocks("json") if "urn:memstore" in b]
    key = create_key(store.engine, namespace="doc-errors").key
    base = "/v1/namespaces/doc-errors"
    old = api.post(f"{base}/memories", key=key, json={"content": "v1"}).json()["id"]
    new = api.post(f"{base}/memories/{old}/revise", key=key, json={"content": "v2", "reason": "r"})
    real = api.post(f"{base}/memories/{old}/forget", key=key, json={"reason": "x"}).json()
    assert set(real) == set(example)
    assert (real["type"], real["status"], real["title"]) == (
        example["type"],
        example["status"],
        example["title"],
    )
    assert real["current_id"] == new.json()["id"]


def test_every_problem_type_is_documented():
    for kind in PROBLEMS.values():
        assert f"`{kind.name}`" in DOC, kind.name
    assert TYPE_PREFIX in DOC


def test_the_readme_serve_example_runs(api, store):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    [block] = [
        b for b in re.findall(r"```sh\n(.*?)```", readme, flags=re.S) if "memstore serve" in b
    ]
    commands = block.replace("\\\n", " ").splitlines()
    assert commands[0].split("#")[0].split() == [
        "memstore",
        "keys",
        "create",
        "--namespace",
        "agent-7",
    ]
    [curl] = [c for c in commands if c.startswith("curl")]
    words = shlex.split(curl)
    url = words[words.index("-X") + 2].removeprefix("http://127.0.0.1:8750")
    key = create_key(store.engine, namespace="agent-7").key
    response = api.post(url, key=key, json=json.loads(words[words.index("-d") + 1]))
    assert response.status_code == 200, response.text
