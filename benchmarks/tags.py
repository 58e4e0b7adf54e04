"""Recall filtered by tags against unfiltered recall, on one synthetic namespace.

Loads ``--size`` memories of pseudo-words (Zipf-distributed, so some words are
common and some rare) with ``remember_many``; 10% carry the tag ``ten``, 1% the
tag ``one``, every memory a tag of its own topic. Then, query by query and
interleaved, ``ns.recall(q, k=10)`` in hybrid and lexical mode without tags,
with ``tags=["ten"]`` and with ``tags=["one"]``. Reports p50/p95 per variant and
how many queries returned fewer than k hits although at least k tagged memories
exist (the filter is applied among the candidates, so that should be none).

    .venv/bin/python benchmarks/tags.py --size 20000 --queries 200

Embedded PostgreSQL in a temporary directory unless ``--database-url`` names a
database memstore may migrate (it is used as is; the namespace is new each run).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from memstore import MemoryStore
from memstore.db.embedded import EmbeddedServer
from memstore.embedding.hashing import HashingEmbedder

VOCABULARY = 5000
WORDS = 12


@contextlib.contextmanager
def database(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    with tempfile.TemporaryDirectory(prefix="memstore-tags-") as tmp:
        embedded = EmbeddedServer(Path(tmp), database="memstore_bench_tags")
        try:
            yield embedded.start()
        finally:
            embedded.stop()


def texts(rng: np.random.Generator, count: int) -> list[str]:
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.1
    weights /= weights.sum()
    words = rng.choice(VOCABULARY, size=(count, WORDS), p=weights)
    return [" ".join(f"w{w}" for w in row) for row in words]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    contents = texts(rng, args.size)
    items = []
    for i, content in enumerate(contents):
        tags = [f"topic-{i % 50}"]
        if i % 10 == 0:
            tags.append("ten")
        if i % 100 == 0:
            tags.append("one")
        items.append({"content": f"{content} n{i}", "tags": tags})
    queries = [" ".join(text.split()[:4]) for text in texts(rng, args.queries)]
    variants = [(mode, tag) for mode in ("hybrid", "lexical") for tag in (None, "ten", "one")]
    times: dict[tuple[str, str | None], list[float]] = {v: [] for v in variants}
    short: dict[tuple[str, str | None], int] = dict.fromkeys(variants, 0)
    with database(args.database_url) as url:
        with MemoryStore.open(url, embedder=HashingEmbedder(), auto_upgrade=True) as store:
            ns = store.namespace(f"bench-tags-{uuid.uuid4().hex[:8]}")
            started = time.perf_counter()
            ns.remember_many(items)
            loaded = time.perf_counter() - started
            print(f"loaded {args.size} memories in {loaded:.1f} s ({args.size / loaded:.0f}/s)")
            for query in queries[:5]:  # warm the caches and prepared statements
                for mode, tag in variants:
                    ns.recall(query, mode=mode, tags=None if tag is None else [tag])
            for query in queries:
                for mode, tag in variants:
                    started = time.perf_counter()
                    hits = ns.recall(query, k=10, mode=mode, tags=None if tag is None else [tag])
                    times[mode, tag].append((time.perf_counter() - started) * 1000)
                    if len(hits) < 10 and (mode == "hybrid" or tag is None):
                        short[mode, tag] += 1
    print(f"{'mode':8} {'tags':6} {'p50 ms':>8} {'p95 ms':>8} {'<k hits':>8}")
    for mode, tag in variants:
        samples = sorted(times[mode, tag])
        p95 = samples[int(0.95 * (len(samples) - 1))]
        print(
            f"{mode:8} {tag or '-':6} {statistics.median(samples):8.2f} {p95:8.2f}"
            f" {short[mode, tag]:8d}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
