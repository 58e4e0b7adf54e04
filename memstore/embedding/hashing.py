"""A deterministic embedder with no weights: feature hashing of words and n-grams.

It needs nothing but numpy, gives the same vector for the same text on every
machine, and still captures lexical overlap (turn recall@10 0.325 on LoCoMo),
which makes it the tests' default and the fallback when no neural model is
installed.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np

from memstore.embedding.base import Vectors, normalise

_WORD = re.compile(r"\w+", re.UNICODE)


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
        rows: list[int] = []
        columns: list[int] = []
        values: list[float] = []
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            pieces = [_word_buckets(word, self._dims) for word in words]
            pieces += [
                (_signed_bucket(f"b:{first} {second}", self._dims),)
                for first, second in itertools.pairwise(words)
            ]
            for piece in pieces:
                for bucket, value in piece:
                    rows.append(row)
                    columns.append(bucket)
                    values.append(value)
        # Sums of small integers are exact in float32, so one unbuffered add of
        # every feature gives the same vector as adding them one by one.
        np.add.at(out, (rows, columns), values)
        return normalise(out)


def forget_words() -> None:
    """Empty the caches of words and trigrams this process has hashed.

    They keep the words of every text embedded here, every tenant's, for as long
    as the process lives; an erasure calls this so that the erased memory's words
    do not outlive it in the process (docs/security.md, "Erasure"). Refilled by
    the next texts embedded.
    """
    _word_buckets.cache_clear()
    _signed_bucket.cache_clear()


@functools.lru_cache(maxsize=1 << 16)
def _word_buckets(word: str, dims: int) -> tuple[tuple[int, float], ...]:
    """A word's own feature and its character trigrams, as (bucket, signed weight)."""
    padded = f"#{word}#"
    trigrams = (f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2))
    return tuple(_signed_bucket(feature, dims) for feature in (f"w:{word}", *trigrams))


@functools.lru_cache(maxsize=1 << 18)
def _signed_bucket(feature: str, dims: int) -> tuple[int, float]:
    """The feature's bucket and signed weight. Words and trigrams repeat across texts,
    so the cache spares most of the hashing (bulk loads are bound by it)."""
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    sign = 1.0 if (value >> 63) & 1 else -1.0
    # Words weigh more than their trigrams, so exact terms dominate.
    weight = 1.0 if feature[0] == "c" else 2.0
    return value % dims, sign * weight
