"""A deterministic embedder with no weights: feature hashing of words and n-grams.

It needs nothing but numpy, gives the same vector for the same text on every
machine, and still captures lexical overlap (turn recall@10 0.325 on LoCoMo),
which makes it the tests' default and the fallback when no neural model is
installed.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator, Sequence

import numpy as np

from memstore.embedding.base import Vectors, normalise

_WORD = re.compile(r"\w+", re.UNICODE)


def _features(text: str) -> Iterator[str]:
    words = _WORD.findall(text.lower())
    for word in words:
        yield f"w:{word}"
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            yield f"c:{padded[i : i + 3]}"
    for first, second in itertools.pairwise(words):
        yield f"b:{first} {second}"


class HashingEmbedder:
    """Feature hashing (words, word bigrams, character trigrams) into ``dims`` signed buckets.

    >>> e = HashingEmbedder(dims=64)
    >>> v = e.embed(["Alice moved to Lisbon", "Alice moved to Lisbon"])
    >>> bool((v[0] == v[1]).all()), v.shape
    (True, (2, 64))
    """

    # Hashed words are a weak semantic signal: hybrid recall should lean on
    # BM25. On LoCoMo, weight 0.2 gave turn recall@10 0.617 against 0.593 at
    # 0.5 and 0.612 for BM25 alone (docs/benchmark-notes.md).
    semantic_weight = 0.2

    def __init__(self, dims: int = 384):
        if not 8 <= dims <= 16000:
            raise ValueError("dims must be between 8 and 16000")
        self._dims = dims

    @property
    def name(self) -> str:
        """``hashing-<dims>-v1``: the version changes if the features ever do."""
        return f"hashing-{self._dims}-v1"

    @property
    def dims(self) -> int:
        """Number of hash buckets."""
        return self._dims

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Hash every feature of every text into a signed bucket; rows L2-normalised."""
        out = np.zeros((len(texts), self._dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in _features(text):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                bucket = value % self._dims
                sign = 1.0 if (value >> 63) & 1 else -1.0
                # Words weigh more than their trigrams, so exact terms dominate.
                weight = 1.0 if feature[0] == "c" else 2.0
                out[row, bucket] += sign * weight
        return normalise(out)
