"""The CLI never answers with a silent empty table (issue 21 item 11): an empty result
says "no memories matched", and memories without a vector for the store's embedder are
named with the command that fixes them."""

from __future__ import annotations

import json
import uuid

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from tests.acceptance.test_cli import run


def test_an_empty_recall_says_so(database_url):
    name = f"cli-empty-{uuid.uuid4().hex[:8]}"
    for command in ("recall", "activate"):
        done = run(command, "anything at all", "-n", name, url=database_url,
                   MEMSTORE_EMBEDDER="hashing")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "no memories matched" in done.stdout, command
        assert "note:" not in done.stderr


def test_recall_names_the_memories_without_a_vector_and_the_fix(database_url):
    name = f"cli-mismatch-{uuid.uuid4().hex[:8]}"
    with MemoryStore.open(database_url, embedder=HashingEmbedder(dims=64)) as store:
        alice = store.namespace(name).remember("Alice lives in Lisbon").id
    env = {"MEMSTORE_EMBEDDER": "hashing"}  # 384 dimensions: another model
    done = run("recall", "where does Alice live?", "-n", name, url=database_url, **env)
    assert done.returncode == 0, done.stderr
    assert "Alice lives in Lisbon" in done.stdout  # answered from the text side
    assert "1 memory has no vector for the embedder 'hashing-384-v1'" in done.stderr
    assert f"ids {alice}" in done.stderr and f"memstore embed rebuild -n {name}" in done.stderr
    as_json = run("recall", "Alice", "-n", name, "--json", url=database_url, **env)
    assert [hit["node"]["id"] for hit in json.loads(as_json.stdout)] == [alice]
    assert "memstore embed rebuild" in as_json.stderr
    activated = run("activate", "Alice", "-n", name, url=database_url, **env)
    assert activated.returncode == 0, activated.stderr
    assert "memstore embed rebuild" in activated.stderr

    assert run("embed", "rebuild", "-n", name, url=database_url, **env).returncode == 0
    fixed = run("recall", "Alice", "-n", name, url=database_url, **env)
    assert "Alice lives in Lisbon" in fixed.stdout and "note:" not in fixed.stderr


def test_edges_and_neighbours_commands(database_url):
    name = f"cli-graph-{uuid.uuid4().hex[:8]}"
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(name)
        alice, lisbon, tea = (ns.remember(t).id for t in ("Alice", "Lisbon by the sea", "Tea"))
        ns.link(alice, lisbon, relation="lives_in", weight=0.9)
    env = {"MEMSTORE_EMBEDDER": "hashing"}
    edges = run("edges", str(alice), "-n", name, "--json", url=database_url, **env)
    assert edges.returncode == 0, edges.stderr
    assert [(e["src"], e["relation"], e["dst"]) for e in json.loads(edges.stdout)] == [
        (alice, "lives_in", lisbon)
    ]
    near = run("neighbours", str(lisbon), "-n", name, "--depth", "2", url=database_url, **env)
    assert near.returncode == 0 and "Alice" in near.stdout
    alone = run("neighbours", str(tea), "-n", name, url=database_url, **env)
    assert alone.returncode == 0 and "no memories matched" in alone.stdout
    assert "no edges" in run("edges", str(tea), "-n", name, url=database_url, **env).stdout
    bad = run("neighbours", str(alice), "-n", name, "--depth", "4", url=database_url, **env)
    assert bad.returncode == 1 and "depth" in bad.stderr
