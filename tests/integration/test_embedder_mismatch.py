"""Recall when the store's embedder is not the one that embedded the namespace (issue 21
item 11): a namespace filled by one embedder and opened with another answers from the text
side, and says how many memories lack a vector, which, and how to fix it.

The two embedders are the test suite's hashing embedder at two sizes: two models, as a
namespace filled with the neural embedder and opened without it would be.
"""

from __future__ import annotations

import uuid

import pytest

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder
from memstore.models import Recalled


@pytest.fixture
def filled(database_url):
    """A namespace of three memories embedded with a 64-dimension model."""
    name = f"mismatch-{uuid.uuid4().hex[:8]}"
    with MemoryStore.open(database_url, embedder=HashingEmbedder(dims=64)) as first:
        ns = first.namespace(name)
        ids = [
            ns.remember(text, kind="semantic").id
            for text in (
                "Alice lives in Lisbon",
                "Bob bakes bread in Porto",
                "Carol climbs mountains in Nepal",
            )
        ]
        hits = ns.recall("where does Alice live?", mode="semantic")
        assert hits.missing_vectors == 0 and hits.notice is None
    return name, ids


@pytest.fixture
def other(database_url):
    with MemoryStore.open(database_url, embedder=HashingEmbedder(dims=128)) as store:
        yield store


def test_recall_answers_from_text_and_names_what_lacks_a_vector(filled, other):
    name, ids = filled
    ns = other.namespace(name)
    for mode in ("hybrid", "semantic"):
        hits = ns.recall("where does Alice live?", mode=mode)
        assert isinstance(hits, Recalled)  # a list of hits, as before
        assert [hit.node.id for hit in hits][:1] == [ids[0]], mode
        assert hits.missing_vectors == 3
        assert hits.missing_ids == tuple(ids)
        assert hits.model == "hashing-128-v1"
        assert hits.notice is not None
        assert "3 memories have no vector for the embedder 'hashing-128-v1'" in hits.notice
        assert f"memstore embed rebuild -n {name}" in hits.notice
    lexical = ns.recall("Alice", mode="lexical")
    assert lexical.missing_vectors == 0  # a lexical recall needs no vector


def test_the_report_keeps_the_privacy_ceiling_and_ends_with_a_rebuild(database_url, other):
    name = f"mismatch-{uuid.uuid4().hex[:8]}"
    with MemoryStore.open(database_url, embedder=HashingEmbedder(dims=64)) as first:
        ns = first.namespace(name)
        public = ns.remember("Alice lives in Lisbon").id
        ns.remember("Alice's diary entry", privacy=3)
    ns = other.namespace(name)
    assert ns.recall("Alice", privacy_ceiling=0).missing_ids == (public,)
    assert ns.recall("Alice").missing_vectors == 2
    assert ns.rebuild_embeddings() == 2
    ns._recall.cached_stats = None  # the sizes are cached for a minute; read them now
    hits = ns.recall("Alice", mode="semantic")
    assert hits.missing_vectors == 0 and hits.notice is None
    assert all(hit.parts.lexical is None for hit in hits)  # semantic again


def test_activation_says_the_same(filled, other):
    name, ids = filled
    activation = other.namespace(name).activate("where does Alice live?")
    assert ids[0] in {item.node.id for item in activation.working_memory}
    assert activation.missing_vectors == 3
    assert activation.missing_ids == ids


def test_an_empty_embedder_setting_means_the_default(monkeypatch):
    monkeypatch.setenv("MEMSTORE_EMBEDDER", "")
    assert Settings().embedder == "auto"
    monkeypatch.setenv("MEMSTORE_EMBEDDER", "  ")
    assert Settings().embedder == "auto"
    monkeypatch.setenv("MEMSTORE_EMBEDDER", "hashing")
    assert Settings().embedder == "hashing"
