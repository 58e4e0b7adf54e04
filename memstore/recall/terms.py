"""Document frequencies of common terms, kept between recalls of one namespace.

BM25 needs each query term's document frequency (df), and counting a term's
documents reads every one of them: ~16 ms for a word in a third of a 100k
namespace, against well under a millisecond for a rare one. Common words are
also the ones queries repeat. So a recall reports the counts of its common
terms (df ≥ :data:`CACHED_DF_MIN`) and later recalls offer them back to the
statement instead of counting again (recall.sql, ``query_terms``).

Counting a common term the first time still cost 16-114 ms in somebody's
recall (the p95 of a fresh process's hybrid recall on the 100k benchmark
namespace was 45 ms of counting alone). So when a lexical or hybrid recall
first needs them, a namespace's common terms are estimated from a sample of
its documents (:data:`TERM_SAMPLE`, ~9 ms at 100k nodes; recall.sql,
``term_sample``): a term in ``hits`` of ``sampled`` documents is counted as
``hits × documents / sampled``. A namespace no bigger than the sample is read whole, so its counts
are exact; a bigger one's common terms carry the sample's error (±30% at the
rarest kept, 10 hits; the idf, a logarithm, moves by a few percent). Counts a
recall reports replace the estimates.

The counts are kept until the namespace has grown by :data:`REFRESH_GROWTH`:
they only steer ranking, and nodes are append-only, so a count can only lag
behind by the documents added since.

The client does not stem: for each word of a query it offers the cached
terms that begin with the word's first three letters (an English stem
shares them: "thinking" → "think", but also "really" → "realli" and "making"
→ "make", which are not prefixes of their words: a prefix-only guess recounted
those every time, 16-60 ms for a common filler word on the 100k benchmark
namespace). The statement uses an offered count only for a query lexeme equal
to its term and counts every other lexeme, so a wrong guess costs a count,
never a wrong score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

# Counting fewer documents than this costs about a millisecond: not worth keeping.
CACHED_DF_MIN = 300
# Bounds the memory and the parameters a recall sends (the namespace's commonest terms).
CACHED_TERMS_MAX = 2_000
# Cached terms are offered to the words that begin with the same letters.
HEAD = 3
# The documents sampled for the estimates, in windows spread over the namespace's
# ids; a term needs this many sampled documents to be estimated at all.
TERM_SAMPLE = 2_000
SAMPLE_WINDOWS = 16
MIN_SAMPLE_HITS = 10
# The counts are estimated again once the namespace has this many times the
# documents it had when they were.
REFRESH_GROWTH = 1.1

_WORD = re.compile(r"\w+")


class TermCounts:
    """A namespace's cached document frequencies of common terms (not thread-safe by design:
    losing an update only costs a recount)."""

    def __init__(self, documents: int | None = None) -> None:
        self.documents = documents
        """The namespace's documents when the counts were estimated (None: never)."""
        self._df: dict[str, int] = {}
        self._by_head: dict[str, dict[str, int]] = {}

    def current_for(self, documents: int) -> bool:
        """Whether these counts still serve a namespace of ``documents`` documents."""
        return self.documents is not None and documents < self.documents * REFRESH_GROWTH

    def __len__(self) -> int:
        return len(self._df)

    def offered(self, text: str) -> tuple[list[str], list[int]]:
        """The cached terms a query's words may stem to, and their counts (parallel lists)."""
        terms: dict[str, int] = {}
        if self._df:
            for word in _WORD.findall(text.casefold()):
                terms.update(self._by_head.get(word[:HEAD], {}))
        return list(terms), list(terms.values())

    def learn(self, counted: Mapping[str, Any] | None) -> None:
        """Keep the counts a recall reported (its ``term_counts`` column)."""
        if not counted:
            return
        for term, df in counted.items():
            if len(self._df) >= CACHED_TERMS_MAX and term not in self._df:
                break
            self._df[term] = int(df)
            self._by_head.setdefault(term[:HEAD], {})[term] = int(df)


def sample_params(documents: int) -> dict[str, int]:
    """The ``term_sample`` parameters for a namespace of ``documents`` documents.

    >>> sample_params(500)["windows"], sample_params(100_000)["min_hits"]
    (1, 10)
    """
    if documents <= TERM_SAMPLE:  # read whole: exact counts, only the common kept
        return {"windows": 1, "per_window": TERM_SAMPLE, "min_hits": CACHED_DF_MIN}
    needed = math.ceil(CACHED_DF_MIN * TERM_SAMPLE / documents)
    return {
        "windows": SAMPLE_WINDOWS,
        "per_window": TERM_SAMPLE // SAMPLE_WINDOWS,
        "min_hits": max(MIN_SAMPLE_HITS, needed),
    }


def estimated(documents: int, sampled: Iterable[tuple[str, int, int]]) -> TermCounts:
    """Counts for a namespace of ``documents`` from ``term_sample``'s rows (term, hits, sampled).

    >>> estimated(100_000, [("harbour", 30, 2_000)]).offered("harbours")
    (['harbour'], [1500])
    """
    terms = TermCounts(documents)
    terms.learn(
        {
            term: df
            for term, hits, size in sampled
            if (df := round(hits * max(documents, size) / max(size, 1))) >= CACHED_DF_MIN
        }
    )
    return terms
