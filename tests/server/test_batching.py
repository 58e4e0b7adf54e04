"""BatchingEmbedder: concurrent one-text calls share runs and get their own vectors."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from memstore.embedding import HashingEmbedder
from memstore.embedding.base import Vectors
from memstore.server.batching import BatchingEmbedder


class Slow:
    """The hashing embedder, slowed down, counting its runs and their sizes."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.inner = HashingEmbedder()
        self.sizes: list[int] = []
        self.fail_on = fail_on
        self.semantic_weight = 0.25

    name = property(lambda self: self.inner.name)
    dims = property(lambda self: self.inner.dims)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.sizes.append(len(texts))
        time.sleep(0.02)
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("model failed")
        return self.inner.embed(texts)


def test_concurrent_queries_are_batched_and_each_gets_its_vector():
    slow = Slow()
    batching = BatchingEmbedder(slow, max_batch=8)
    texts = [f"query number {i}" for i in range(40)]
    results: dict[str, Vectors] = {}

    def ask(text: str) -> None:
        results[text] = batching.embed([text])

    threads = [threading.Thread(target=ask, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = HashingEmbedder().embed(texts)
    for i, text in enumerate(texts):
        assert results[text].shape == (1, batching.dims)
        np.testing.assert_allclose(results[text][0], expected[i], rtol=1e-6)
    assert sum(slow.sizes) == 40 and len(slow.sizes) < 40 and max(slow.sizes) <= 8
    assert batching.semantic_weight == 0.25  # the inner embedder's attributes show through


def test_alone_a_text_runs_at_once_and_batches_pass_through():
    slow = Slow()
    batching = BatchingEmbedder(slow)
    batching.embed(["one"])
    batching.embed(["a", "b", "c"])
    assert slow.sizes == [1, 3]


def test_a_failed_run_fails_its_callers_and_not_the_next():
    slow = Slow(fail_on="bad")
    batching = BatchingEmbedder(slow)
    with pytest.raises(RuntimeError, match="model failed"):
        batching.embed(["bad"])
    assert batching.embed(["good"]).shape == (1, batching.dims)
