"""The built-in embedders and the adapter for any embedding function."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from memstore.embedding import CallableEmbedder, Embedder, HashingEmbedder
from memstore.errors import DimensionMismatchError, InvalidInputError


def test_hashing_is_deterministic_normalised_and_lexical():
    e = HashingEmbedder()
    v = e.embed(["Alice moved to Lisbon", "Alice moved to Lisbon", "Bob likes tea", "..."])
    assert v.dtype == np.float32 and v.shape == (4, 384)
    np.testing.assert_array_equal(v[0], v[1])
    np.testing.assert_allclose(np.linalg.norm(v[:3], axis=1), 1.0, rtol=1e-6)
    assert not v[3].any()  # no words, no direction
    related = e.embed(["Alice lives in Lisbon"])[0]
    assert float(v[0] @ related) > float(v[2] @ related)
    assert isinstance(e, Embedder)


def test_hashing_vectors_never_change_under_the_same_name():
    # Stored vectors are compared with new ones under ``hashing-<dims>-v1``: a change
    # of features or arithmetic must come with a new name. Digests of the v1 vectors.
    texts = ["Alice moved to Lisbon in May", "", "Élan naïve 東京 ok ok", "the the the"]
    digests = {
        384: "f196b1c4bacdd085ee0bf7d6c0feda5a82c5c9c78493d34ef23eddc0eab98a6c",
        64: "6066542b2febee41e4d91ad7b08af266c59e4db36a9c27354abf518a16763191",
    }
    for dims, digest in digests.items():
        vectors = HashingEmbedder(dims).embed(texts)
        assert hashlib.sha256(vectors.tobytes()).hexdigest() == digest
        one_by_one = np.vstack([HashingEmbedder(dims).embed([text]) for text in texts])
        np.testing.assert_array_equal(vectors, one_by_one)


def test_the_adapter_checks_and_normalises_what_the_function_returns():
    e = CallableEmbedder("fake-3", 3, lambda texts: [[3.0, 4.0, 0.0] for _ in texts])
    np.testing.assert_allclose(e.embed(["a", "b"]), [[0.6, 0.8, 0.0]] * 2, rtol=1e-6)
    assert e.embed([]).shape == (0, 3)
    assert isinstance(e, Embedder)
    with pytest.raises(DimensionMismatchError):
        CallableEmbedder("bad", 4, lambda texts: np.ones((len(texts), 3))).embed(["a"])
    with pytest.raises(InvalidInputError, match="shape"):
        CallableEmbedder("bad", 3, lambda texts: np.ones((1, 3))).embed(["a", "b"])
    with pytest.raises(InvalidInputError, match="NaN"):
        CallableEmbedder("bad", 3, lambda texts: np.full((len(texts), 3), np.nan)).embed(["a"])


def test_a_store_embeds_with_any_callable(database_url):
    from memstore import MemoryStore

    calls: list[int] = []

    def fn(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return HashingEmbedder(dims=16).embed(texts)

    with MemoryStore.open(database_url, embedder=CallableEmbedder("custom-16", 16, fn)) as store:
        ns = store.namespace("callable")
        node = ns.remember("custom vectors work too")
        assert ns.recall("custom vectors", mode="semantic")[0].node.id == node.id
        assert ns.embedding_status().model == "custom-16"
    assert calls[:2] == [1, 1]
