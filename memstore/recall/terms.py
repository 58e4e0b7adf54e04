"""Document frequencies of common terms, kept between recalls of one namespace.

BM25 needs each query term's document frequency (df), and counting a term's
documents reads every one of them: ~16 ms for a word in a third of a 100k
namespace, against well under a millisecond for a rare one. Common words are
also the ones queries repeat. So a recall reports the counts of its common
terms (df ≥ :data:`CACHED_DF_MIN`) and later recalls offer them back to the
statement instead of counting again (recall.sql, ``query_terms``).

The counts live as long as the namespace's other cached statistics
(``STATS_TTL`` in memstore/namespace.py): they only steer ranking, and nodes
are append-only, so a count can only lag behind by the documents added since.

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

import re
from collections.abc import Mapping
from typing import Any

# Counting fewer documents than this costs about a millisecond: not worth keeping.
CACHED_DF_MIN = 300
# Bounds the memory and the parameters a recall sends (the namespace's commonest terms).
CACHED_TERMS_MAX = 2_000
# Cached terms are offered to the words that begin with the same letters.
HEAD = 3

_WORD = re.compile(r"\w+")


class TermCounts:
    """A namespace's cached document frequencies of common terms (not thread-safe by design:
    losing an update only costs a recount)."""

    def __init__(self) -> None:
        self._df: dict[str, int] = {}
        self._by_head: dict[str, dict[str, int]] = {}

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
