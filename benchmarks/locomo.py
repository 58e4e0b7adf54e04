"""LoCoMo retrieval benchmark: turn and session recall@k of memstore's recall modes.

Reads ../shared/data/locomo10.json (CC BY-NC 4.0, evaluation only; never copied
into this repository; see its README). Each conversation becomes one namespace;
every turn an episodic node whose content is "speaker: text" (plus the image
caption when a turn shares a photo), with its dia_id in ``data``, the speaker
as actor, and the session date as ``observed_at``. For every QA of categories
1-4 with usable evidence, memstore recalls within that conversation's
namespace and we score:

- turn recall@k: share of the QA's gold dia_ids among the top-k turns;
- session recall@k: share of the gold sessions among the top-k turns' sessions.

With --activation the turns are also linked (``next``, ``same_session``,
``same_speaker``, ``shares_term``; see EDGE_WEIGHTS) and each question is also
ranked by ``ns.activate`` (working memory, as memstore ranks it) and by
benchmark-side sums over the activation (labelled "(bench)"): the hybrid
ranking is the baseline they are compared with.

Run (each embedder, each mode; a few minutes on 2 cores):

    .venv/bin/python benchmarks/locomo.py                       # embedded server
    .venv/bin/python benchmarks/locomo.py --embedders hashing   # no neural extra
    .venv/bin/python benchmarks/locomo.py --sweep               # also calibrate fusion weight
    .venv/bin/python benchmarks/locomo.py --bm25                # also BM25 vs ts_rank_cd
    .venv/bin/python benchmarks/locomo.py --activation          # also spreading activation

Results go to stdout and, with --output, to a JSON file.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from memstore import MemoryStore
from memstore.activation import ActivationParams
from memstore.config import Settings
from memstore.embedding import HashingEmbedder
from memstore.embedding.base import Embedder
from memstore.embedding.select import neural_available

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
DIA_ID = re.compile(r"^D(\d+):(\d+)$")
KS = (5, 10, 20)
CURVE = tuple(range(1, 21))  # turn recall@k for the recall@k plot
CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
LABEL_WIDTH = 44
HEADER = (
    f"{'R@5':>6} {'R@10':>6} {'R@20':>6} {'S@5':>6} {'p50 ms':>7} {'p95 ms':>7}   R@10 by category"
)


@dataclass
class Question:
    text: str
    gold: set[str]
    category: int


@dataclass
class Conversation:
    sample_id: str
    turns: list[dict[str, Any]]
    questions: list[Question]
    skipped: int = 0


@dataclass
class Scores:
    turn: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    session: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_category: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    curve: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    latencies: list[float] = field(default_factory=list)


def session_of(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


def load(path: Path) -> list[Conversation]:
    conversations = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        turns: list[dict[str, Any]] = []
        # Iterate over the session_<N> keys, not the date keys (some dates have no turns).
        sessions = sorted(
            (int(key.split("_")[1]), key)
            for key in conv
            if re.fullmatch(r"session_\d+", key) and isinstance(conv[key], list)
        )
        for number, key in sessions:
            when = parse_date(conv.get(f"{key}_date_time"))
            for turn in conv[key]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                turns.append(
                    {
                        "dia_id": turn["dia_id"],
                        "speaker": turn["speaker"],
                        "content": text,
                        "observed_at": when,
                        "session": number,
                    }
                )
        known = {t["dia_id"] for t in turns}
        questions, skipped = [], 0
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            gold = {e.strip() for e in qa.get("evidence", []) if isinstance(e, str)}
            gold = {e for e in gold if DIA_ID.match(e) and e in known}
            if not gold:
                skipped += 1
                continue
            questions.append(Question(qa["question"], gold, qa["category"]))
        conversations.append(Conversation(sample["sample_id"], turns, questions, skipped))
    return conversations


def parse_date(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def ingest(store: MemoryStore, conversation: Conversation, prefix: str) -> tuple[Any, dict]:
    ns = store.namespace(f"{prefix}/{conversation.sample_id}")
    items = [
        {
            "content": t["content"],
            "actor": t["speaker"],
            "observed_at": t["observed_at"],
            "source": f"locomo:{conversation.sample_id}:{t['dia_id']}",
            "data": {"dia_id": t["dia_id"]},
        }
        for t in conversation.turns
    ]
    ids = ns.remember_many(items, batch_size=256)
    # Identical turns fold into one node: a node stands for all its dia_ids.
    dia_ids: dict[int, list[str]] = defaultdict(list)
    for node_id, turn in zip(ids, conversation.turns, strict=True):
        dia_ids[node_id].append(turn["dia_id"])
    return ns, dia_ids


def ranked_turns(node_ids: list[int], dia_ids: dict[int, list[str]]) -> list[str]:
    """The dia_ids of ranked nodes, in order (a node stands for all its identical turns)."""
    ranked: list[str] = []
    for node_id in node_ids:
        ranked += [d for d in dia_ids[node_id] if d not in ranked]
    return ranked


def evaluate(
    ns: Any,
    dia_ids: dict[int, list[str]],
    questions: list[Question],
    scores: Scores,
    **recall_args: Any,
) -> None:
    for q in questions:
        started = time.perf_counter()
        hits = ns.recall(q.text, k=max(KS), **recall_args)
        scores.latencies.append(time.perf_counter() - started)
        score_ranking(q, ranked_turns([hit.node.id for hit in hits], dia_ids), scores)


def summary(scores: Scores) -> dict[str, Any]:
    lat = sorted(scores.latencies)
    return {
        "questions": len(scores.turn[10]),
        "turn_recall": {k: statistics.fmean(scores.turn[k]) for k in KS},
        "session_recall": {k: statistics.fmean(scores.session[k]) for k in KS},
        "turn_recall_curve": {
            k: statistics.fmean(scores.curve[k]) for k in CURVE if scores.curve[k]
        },
        "turn_recall_at_10_by_category": {
            CATEGORY_NAMES[c]: statistics.fmean(v) for c, v in sorted(scores.by_category.items())
        },
        "latency_ms": {"p50": 1000 * lat[len(lat) // 2], "p95": 1000 * lat[int(len(lat) * 0.95)]},
    }


def lexemes(store: MemoryStore, namespace_id: int) -> dict[int, dict[str, int]]:
    """Each node's full-text lexemes (PostgreSQL's English stemming) with their counts."""
    with store.transaction() as conn:
        rows = conn.exec_driver_sql(
            "SELECT id, search::text FROM memstore.nodes WHERE namespace_id = %(ns)s",
            {"ns": namespace_id},
        ).all()
    docs: dict[int, dict[str, int]] = {}
    for node_id, vector in rows:
        terms: dict[str, int] = {}
        for lexeme, positions in re.findall(r"'((?:[^']|'')*)'(?::([\d,A-D]+))?", vector):
            terms[lexeme] = len(positions.split(",")) if positions else 1
        docs[node_id] = terms
    return docs


class BM25:
    """Okapi BM25 over one namespace's own tsvectors (PostgreSQL's stemming and
    stop words), to measure whether it would beat ``ts_rank_cd`` as the lexical
    signal. Computed here, outside memstore, over every turn of the namespace."""

    K1, B = 1.2, 0.75

    def __init__(self, store: MemoryStore, namespace_id: int):
        self.store = store
        self.docs = lexemes(store, namespace_id)
        self.avg = statistics.fmean(sum(t.values()) for t in self.docs.values())
        self.df: dict[str, int] = defaultdict(int)
        for terms in self.docs.values():
            for term in terms:
                self.df[term] += 1

    def query_terms(self, text: str) -> list[str]:
        with self.store.transaction() as conn:
            vector = conn.exec_driver_sql(
                "SELECT to_tsvector('english', %(q)s)::text", {"q": text}
            ).scalar_one()
        return re.findall(r"'((?:[^']|'')*)'", vector)

    def top(self, text: str, k: int) -> list[int]:
        import math

        n = len(self.docs)
        scores: dict[int, float] = {}
        for term in self.query_terms(text):
            if term not in self.df:
                continue
            idf = math.log(1 + (n - self.df[term] + 0.5) / (self.df[term] + 0.5))
            for node_id, terms in self.docs.items():
                tf = terms.get(term)
                if tf:
                    length = sum(terms.values())
                    norm = (
                        tf
                        * (self.K1 + 1)
                        / (tf + self.K1 * (1 - self.B + self.B * length / self.avg))
                    )
                    scores[node_id] = scores.get(node_id, 0.0) + idf * norm
        return sorted(scores, key=lambda i: (-scores[i], i))[:k]


def evaluate_bm25(
    store: MemoryStore,
    ns: Any,
    dia_ids: dict[int, list[str]],
    questions: list[Question],
    scores: Scores,
) -> None:
    bm25 = BM25(store, ns.id)
    for q in questions:
        started = time.perf_counter()
        ranked_ids = bm25.top(q.text, max(KS))
        scores.latencies.append(time.perf_counter() - started)
        score_ranking(q, ranked_turns(ranked_ids, dia_ids), scores)


# --activation: the edges an agent would author between its own turns, with
# their authored weights (w in the activation formulas, memstore/activation/scoring.py):
# the next turn is the strongest cue, a rare shared word next, then the nearby
# turns of the session, then the speaker's own next turns.
EDGE_WEIGHTS = {"next": 0.9, "shares_term": 0.6, "same_session": 0.5, "same_speaker": 0.3}
SESSION_REACH = 3  # same_session: the turns 2..3 places later in the session (1 is `next`)
SPEAKER_REACH = 2  # same_speaker: the speaker's next 2 turns (in this session or a later one)
RARE_TERM_DF = 3  # shares_term: lexemes found in 2..3 nodes of the conversation
LINK_THREADS = 4
SEED_COUNT = 30  # hybrid-recall hits that seed an activation
ACTIVATION_FANOUT = 32  # above every turn's edge count (at most 19 here): nothing is cut
NEIGHBOUR_SHARE = 0.3  # λ of the benchmark-side neighbour sums

Edge = tuple[int, int, str, float]


def plan_edges(
    turns: list[dict[str, Any]], node_of: dict[str, int], terms: dict[int, dict[str, int]]
) -> list[Edge]:
    """(src, dst, relation, weight), earlier turn → later, one edge per pair of nodes.

    Where two relations join the same pair, the heavier wins: max-product
    spreading would ignore the lighter one anyway.
    """
    edges: dict[frozenset[int], Edge] = {}

    def add(a: int, b: int, relation: str) -> None:
        src, dst = node_of[turns[a]["dia_id"]], node_of[turns[b]["dia_id"]]
        pair = frozenset((src, dst))
        weight = EDGE_WEIGHTS[relation]
        if src != dst and (pair not in edges or edges[pair][3] < weight):
            edges[pair] = (src, dst, relation, weight)

    by_speaker: dict[str, list[int]] = defaultdict(list)
    for i, turn in enumerate(turns):
        by_speaker[turn["speaker"]].append(i)
        if i + 1 < len(turns):
            add(i, i + 1, "next")
        for j in range(i + 2, min(i + SESSION_REACH + 1, len(turns))):
            if turns[j]["session"] == turn["session"]:
                add(i, j, "same_session")
    for positions in by_speaker.values():
        for p, i in enumerate(positions):
            for j in positions[p + 1 : p + SPEAKER_REACH + 1]:
                add(i, j, "same_speaker")
    first_turn: dict[int, int] = {}
    for i, turn in enumerate(turns):
        first_turn.setdefault(node_of[turn["dia_id"]], i)
    holders: dict[str, list[int]] = defaultdict(list)
    for node_id, node_terms in terms.items():
        for term in node_terms:
            holders[term].append(node_id)
    for nodes in holders.values():
        if 2 <= len(nodes) <= RARE_TERM_DF:
            ordered = sorted(first_turn[n] for n in nodes)
            for a, i in enumerate(ordered):
                for j in ordered[a + 1 :]:
                    add(i, j, "shares_term")
    return sorted(edges.values())


def link_edges(ns: Any, edges: list[Edge]) -> None:
    """Author the edges through the public ``ns.link``, a few at a time."""
    with ThreadPoolExecutor(LINK_THREADS) as pool:
        list(
            pool.map(
                lambda e: ns.link(e[0], e[1], relation=e[2], weight=e[3], source="locomo-bench"),
                edges,
            )
        )


def adjacency(edges: list[Edge]) -> dict[int, list[tuple[int, float]]]:
    """Both directions: node → [(neighbour, weight)]."""
    near: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for src, dst, _, weight in edges:
        near[src].append((dst, weight))
        near[dst].append((src, weight))
    return near


def neighbour_sum(
    base: dict[int, float], near: dict[int, list[tuple[int, float]]], share: float
) -> list[int]:
    """Benchmark-side, additive: score(n) = base(n) + share × Σ w(m, n) × base(m), best first.

    Candidates are the nodes of ``base`` and their neighbours.
    """
    candidates = set(base)
    for node_id in base:
        candidates.update(m for m, _ in near.get(node_id, ()))
    summed = {
        n: base.get(n, 0.0) + share * sum(w * base.get(m, 0.0) for m, w in near.get(n, ()))
        for n in candidates
    }
    return sorted(summed, key=lambda n: (-summed[n], n))


def evaluate_neighbour_share(
    ns: Any,
    dia_ids: dict[int, list[str]],
    questions: list[Question],
    nears: dict[str, dict[int, list[tuple[int, float]]]],
    share: float,
    scores: dict[str, Scores],
) -> None:
    """No activation: hybrid recall's scores (over the best one) plus a share of the
    neighbours' scores, one ranking per edge set in ``nears``."""
    for q in questions:
        started = time.perf_counter()
        hits = ns.recall(q.text, k=SEED_COUNT)
        elapsed = time.perf_counter() - started
        top = max((hit.score for hit in hits), default=0.0) or 1.0
        base = {hit.node.id: hit.score / top for hit in hits}
        for label, near in nears.items():
            started = time.perf_counter()
            ranked = neighbour_sum(base, near, share)
            scores[label].latencies.append(elapsed + time.perf_counter() - started)
            score_ranking(q, ranked_turns(ranked, dia_ids), scores[label])


@dataclass(frozen=True)
class ActivationRun:
    """One ``ns.activate`` configuration; each question gets one call, ranked twice.

    - as memstore ranks it (product behaviour): working-memory order, i.e.
      max-product activation;
    - benchmark-side, for each share λ: every reached node's activation a(n)
      from ``Activation.background`` plus λ × Σ w(m, n) × a(m) over its
      authored edges (additive, which memstore's spreading is not).
    """

    label: str
    depth: int
    params: dict[str, Any]
    shares: tuple[float, ...] = (NEIGHBOUR_SHARE,)

    def activation_params(self) -> ActivationParams:
        # Threshold 0: working memory is every reached turn, so the ranking is not cut.
        values = {"seed_count": SEED_COUNT, **self.params}
        return ActivationParams(thresholds={"Memory": 0.0}, default_threshold=0.0, **values)


# Salience ≈ 1 for every turn (importance left out, recency saturated), so an
# edge passes w × sim(query, turn) and nothing else. With the defaults salience
# is 0.5 × importance 0.5 + 0.5 × recency (≈ 0.9 minutes after ingest) ≈ 0.7;
# importance_weight 1 makes it exactly 0.5. "sim off" (similarity_floor 1)
# drops the sim(query, turn) factor: an edge passes w × salience.
FLAT_SALIENCE = {"importance_weight": 0.0, "actr_threshold": -50.0}


def activation_runs(sweep: bool) -> list[ActivationRun]:
    runs = [
        # Product behaviour with memstore's additive option (ActivationParams.neighbour_share).
        ActivationRun("d1 λ=0.3 (product)", 1, {"neighbour_share": 0.3}, ()),
        ActivationRun("d1 flat λ=0.3 (product)", 1, {**FLAT_SALIENCE, "neighbour_share": 0.3}, ()),
        ActivationRun("d1", 1, {}),
        ActivationRun("d2", 2, {}),
        ActivationRun("d1 sim off", 1, {**FLAT_SALIENCE, "similarity_floor": 1.0}),
    ]
    if sweep:
        runs[2] = ActivationRun("d1", 1, {}, (0.1, 0.2, 0.3, 0.5, 1.0))
        runs += [
            ActivationRun("d1 flat", 1, FLAT_SALIENCE, (0.2, 0.3, 0.5)),
            ActivationRun(
                "d1 sim off sal 0.5", 1, {"importance_weight": 1.0, "similarity_floor": 1.0}
            ),
            ActivationRun("d1 seeds 50", 1, {"seed_count": 50}),
        ]
    return runs


def evaluate_activation(
    ns: Any,
    dia_ids: dict[int, list[str]],
    questions: list[Question],
    near: dict[int, list[tuple[int, float]]],
    run: ActivationRun,
    scores: dict[str, Scores],
    stages: dict[str, list[float]],
) -> None:
    params = run.activation_params()
    for q in questions:
        started = time.perf_counter()
        result = ns.activate(
            q.text,
            depth=run.depth,
            fanout=ACTIVATION_FANOUT,
            limit=max(KS),
            both_directions=True,
            params=params,
        )
        elapsed = time.perf_counter() - started
        for stage, ms in result.stats.timings_ms.items():
            stages[stage].append(ms)
        stages["nodes"].append(result.stats.nodes)
        product = scores[run.label]
        product.latencies.append(elapsed)
        memory = [item.node.id for item in result.working_memory]
        score_ranking(q, ranked_turns(memory, dia_ids), product)
        activation = {reached.id: reached.activation for reached in result.background}
        for share in run.shares:
            started = time.perf_counter()
            ranked = neighbour_sum(activation, near, share)
            label = activation_sum_label(run, share)
            scores[label].latencies.append(elapsed + time.perf_counter() - started)
            score_ranking(q, ranked_turns(ranked, dia_ids), scores[label])


def activation_sum_label(run: ActivationRun, share: float) -> str:
    return f"activate {run.label} + {share:g}·Σ nbrs (bench)"


def score_ranking(
    q: Question, ranked: list[str], scores: Scores, deeper: list[str] | None = None
) -> None:
    """Score a ranking; ``deeper`` (if given) is the ranking asked with k = 20, from which
    recall@20 (and the curve beyond 10) is taken."""
    gold_sessions = {session_of(g) for g in q.gold}
    for k in KS:
        top = (deeper if deeper is not None and k > 10 else ranked)[:k]
        scores.turn[k].append(len(q.gold & set(top)) / len(q.gold))
        sessions = {session_of(d) for d in top}
        scores.session[k].append(len(gold_sessions & sessions) / len(gold_sessions))
    scores.by_category[q.category].append(len(q.gold & set(ranked[:10])) / len(q.gold))
    for k in CURVE:
        top = (deeper if deeper is not None and k > 10 else ranked)[:k]
        scores.curve[k].append(len(q.gold & set(top)) / len(q.gold))


def configurations(sweep: bool) -> list[tuple[str, dict[str, Any]]]:
    configs: list[tuple[str, dict[str, Any]]] = [
        ("semantic", {"mode": "semantic"}),
        ("lexical", {"mode": "lexical"}),
        ("hybrid rrf", {"mode": "hybrid", "fusion": "rrf"}),
        ("hybrid weighted", {"mode": "hybrid"}),
    ]
    if sweep:
        configs += [
            (f"hybrid weighted w={w}", {"mode": "hybrid", "semantic_weight": w})
            for w in (0.2, 0.3, 0.4, 0.6, 0.7)
        ]
    return configs


def activation_benchmark(
    store: MemoryStore,
    conversations: list[Conversation],
    loaded: list[tuple[Any, dict[int, list[str]]]],
    sweep: bool,
    report: Callable[..., None],
) -> dict[str, Any]:
    """--activation: author the edges, then rank with and around ``ns.activate``."""
    started = time.perf_counter()
    nears: list[dict[str, dict[int, list[tuple[int, float]]]]] = []
    counts: Counter[str] = Counter()
    for conversation, (ns, dia_ids) in zip(conversations, loaded, strict=True):
        node_of = {d: node_id for node_id, ds in dia_ids.items() for d in ds}
        edges = plan_edges(conversation.turns, node_of, lexemes(store, ns.id))
        link_edges(ns, edges)
        counts.update(edge[2] for edge in edges)
        nears.append(
            {
                "next": adjacency([edge for edge in edges if edge[2] == "next"]),
                "all": adjacency(edges),
            }
        )
    link_s = time.perf_counter() - started
    print(
        f"linked {sum(counts.values())} edges in {link_s:.1f} s ("
        + ", ".join(f"{r} {counts[r]} w={w}" for r, w in EDGE_WEIGHTS.items())
        + f"); activation: seeds {SEED_COUNT}, fanout {ACTIVATION_FANOUT}, both directions",
        flush=True,
    )
    labels = {
        "next": f"hybrid + {NEIGHBOUR_SHARE:g}·Σ next turns (bench)",
        "all": f"hybrid + {NEIGHBOUR_SHARE:g}·Σ all edges (bench)",
    }
    shared = {label: Scores() for label in labels.values()}
    for conversation, (ns, dia_ids), near in zip(conversations, loaded, nears, strict=True):
        chosen = {labels[key]: near[key] for key in labels}
        evaluate_neighbour_share(
            ns, dia_ids, conversation.questions, chosen, NEIGHBOUR_SHARE, shared
        )
    for label, scores in shared.items():
        report(label, scores)
    latency: dict[str, Any] = {}
    for run in activation_runs(sweep):
        by_row: dict[str, Scores] = defaultdict(Scores)
        stages: dict[str, list[float]] = defaultdict(list)
        for conversation, (ns, dia_ids), near in zip(conversations, loaded, nears, strict=True):
            evaluate_activation(
                ns, dia_ids, conversation.questions, near["all"], run, by_row, stages
            )
        medians = {stage: statistics.median(values) for stage, values in stages.items()}
        params = run.activation_params().model_dump(mode="json")
        report(f"activate {run.label}", by_row[run.label], depth=run.depth, params=params)
        for share in run.shares:
            label = activation_sum_label(run, share)
            report(label, by_row[label], depth=run.depth, params=params, share=share)
        latency[run.label] = {"median_stage_ms": medians, **summary(by_row[run.label])}
        print(
            f"{'':{LABEL_WIDTH}} median ms: "
            + ", ".join(f"{k} {v:.1f}" for k, v in medians.items() if k != "nodes")
            + f"; nodes reached {medians['nodes']:.0f}",
            flush=True,
        )
    return {"edges": dict(counts), "link_s": link_s, "weights": EDGE_WEIGHTS, "runs": latency}


def record(
    runs: list[dict[str, Any]],
    embedder: str,
    ingest_s: float,
    label: str,
    scores: Scores,
    **extra: Any,
) -> None:
    """Print one row of the table and keep its numbers for --output."""
    s = summary(scores)
    cats = " ".join(f"{c[:6]}={v:.3f}" for c, v in s["turn_recall_at_10_by_category"].items())
    print(
        f"{label:{LABEL_WIDTH}} {s['turn_recall'][5]:6.3f} {s['turn_recall'][10]:6.3f}"
        f" {s['turn_recall'][20]:6.3f} {s['session_recall'][5]:6.3f}"
        f" {s['latency_ms']['p50']:7.1f} {s['latency_ms']['p95']:7.1f}   {cats}",
        flush=True,
    )
    runs.append({"embedder": embedder, "config": label, "ingest_s": ingest_s, **s, **extra})


# --timeline: the conversation ingested as a user would (ns.timeline.ingest_turns,
# the same nodes and links as one ingest_turn per turn: the speaker as role,
# one session id per session, the session date as `at`,
# turns a second apart so they keep their order and their `next` links), then
# asked with the default ns.recall and the configurations below. Query-time
# configurations need no re-ingest: with --data-dir the database (and the
# turns' dia_ids, in a file beside it) is reused by later runs.
TUNE = range(0, 5)  # conversations the weights were chosen on
HELD_OUT = range(5, 10)  # ...and the ones reported as unseen
PACKET_BUDGETS = (1000, 2000)


class CachedEmbedder:
    """The embedder with the query vectors kept: a question is embedded once per run,
    however many configurations ask it (the first configuration pays, and its
    latency includes the embedding)."""

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.name, self.dims = inner.name, inner.dims
        self.semantic_weight = getattr(inner, "semantic_weight", None)
        if self.semantic_weight is None:
            del self.semantic_weight
        self.memo: dict[str, Any] = {}

    def embed(self, texts: Any) -> Any:
        if len(texts) != 1:
            return self.inner.embed(texts)
        if texts[0] not in self.memo:
            self.memo[texts[0]] = self.inner.embed(texts)
        return self.memo[texts[0]]


def timeline_ingest(
    store: MemoryStore, conversation: Conversation, prefix: str, cache_dir: Path
) -> tuple[Any, dict[int, list[str]]]:
    """One namespace per conversation, every turn through ``ns.timeline.ingest_turns``
    (the nodes and links of one ``ingest_turn`` per turn, in order); a namespace already
    holding every turn (an earlier run with --data-dir) is reused."""
    from datetime import timedelta

    from sqlalchemy import text as sql_text

    ns = store.namespace(f"{prefix}/{conversation.sample_id}")
    mapping = cache_dir / f"{prefix}-{conversation.sample_id}.json"
    if mapping.exists() and ns.timeline.entry_count() == len(conversation.turns):
        saved = json.loads(mapping.read_text())
        return ns, {int(node_id): dia for node_id, dia in saved.items()}
    offsets: Counter[int] = Counter()
    turns, keys = [], {}
    for turn in conversation.turns:
        at = turn["observed_at"] or datetime(2023, 1, 1, tzinfo=UTC)
        at += timedelta(seconds=offsets[turn["session"]])
        offsets[turn["session"]] += 1
        session = f"{conversation.sample_id}:{turn['session']}"
        text = turn["content"].split(": ", 1)[1]  # ingest_turn prefixes the role itself
        turns.append({"role": turn["speaker"], "content": text, "session_id": session, "at": at})
        keys[(session, at)] = turn["dia_id"]
    ns.timeline.ingest_turns(turns)
    # ingest_turns returns counts: the turns are found again by session and time
    # (benchmark-side, through the namespace's engine).
    scope = ns._recall.scope
    with scope.engine.connect() as conn:
        stored = conn.execute(
            sql_text(
                "SELECT id, scope, observed_at FROM memstore.nodes"
                " WHERE namespace_id = :ns AND node_type = 'Turn'"
            ),
            {"ns": scope.id},
        ).all()
    dia_ids: dict[int, list[str]] = defaultdict(list)
    for node_id, session, at in stored:
        if (session, at) in keys:
            dia_ids[node_id].append(keys[(session, at)])
    mapping.write_text(json.dumps(dia_ids))
    return ns, dia_ids


def split_scores() -> dict[str, Scores]:
    return {"all": Scores(), "tune": Scores(), "held-out": Scores()}


def parts_of(index: int) -> tuple[str, ...]:
    return ("all", "tune" if index in TUNE else "held-out")


TIMED = (
    ("default ns.recall", {}),
    ("hybrid alone (neighbour_share=0)", {"neighbour_share": 0.0}),
)


def timeline_configurations(sweep: bool) -> list[tuple[str, dict[str, Any]]]:
    """Rankings of one recall statement's rows (see :func:`rerank`)."""
    off = {"scope_share": 0.0, "speaker_share": 0.0, "date_share": 0.0}
    second = {"date_share": 0.0, "semantic_factor": 1.0}
    configs: list[tuple[str, dict[str, Any]]] = [
        ("hybrid alone", {"neighbour_share": 0.0}),
        ("default (λ=0.5, σ=0.3, speaker 0.5, date 0.3, w×0.6)", {}),
        ("first pass (λ=0.5, σ=0.3)", {"speaker_share": 0.0, **second}),
        ("second pass (+ speaker 0.5)", second),
        ("second pass + date 0.3", {"semantic_factor": 1.0}),
        ("second pass + w×0.6", {"date_share": 0.0}),
        (
            "hybrid + date 0.3 alone",
            {"neighbour_share": 1e-9, **off, "date_share": 0.3, "semantic_factor": 1.0},
        ),
        ("hybrid + w×0.6 alone", {"neighbour_share": 1e-9, **off}),
    ]
    if sweep:
        configs += [
            (f"default, date {d:g}", {"date_share": d}) for d in (0.1, 0.2, 0.5) if d != 0.3
        ]
        configs += [(f"default, w×{f:g}", {"semantic_factor": f}) for f in (0.5, 0.7)]
    shares = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0) if sweep else (0.3, 0.5)
    configs += [(f"hybrid + neighbours λ={s:g}", {"neighbour_share": s, **off}) for s in shares]
    # Scope (session) evidence, ranking.SCOPE_SHARE: alone (λ tiny, so only the
    # scope term moves the ranking) and with the neighbours.
    scopes = (0.05, 0.1, 0.2, 0.3) if sweep else (0.3,)
    configs += [
        (f"hybrid + session σ={c:g}", {"neighbour_share": 1e-9, **off, "scope_share": c})
        for c in scopes
    ]
    configs += [
        (
            f"hybrid + neighbours λ={s:g} + session σ={c:g}",
            {"neighbour_share": s, **off, "scope_share": c},
        )
        for s in ((0.3, 0.5, 1.0) if sweep else (0.3,))
        for c in scopes
    ]
    # Speaker evidence, ranking.SPEAKER_SHARE: alone and with the first pass's evidence.
    speakers = (0.05, 0.1, 0.2, 0.3, 0.5, 0.8) if sweep else (0.5,)
    configs += [
        (f"hybrid + speaker {c:g}", {"neighbour_share": 1e-9, **off, "speaker_share": c})
        for c in speakers
    ]
    configs += [
        (f"λ=0.5 + σ=0.3 + speaker {c:g}", {"speaker_share": c}) for c in speakers if c != 0.5
    ]
    return configs


def statement_rows(ns: Any, text: str, k: int = max(KS)) -> tuple[list[dict[str, Any]], Embedder]:
    """The rows of the default recall statement for ``text`` (``k`` hits), as ``ns.recall``
    runs it, for :func:`rerank` (benchmark-side: reaches into the namespace's recaller)."""
    from memstore.db.transaction import in_one_round_trip
    from memstore.recall import RecallQuery

    recaller = ns._recall
    spec = RecallQuery(text=text, k=k)
    run = recaller.plan(spec, recaller.vector(spec))
    rows = in_one_round_trip(
        recaller.scope.engine, recaller.scope.id, run.statement, run.params, settings=run.settings
    )
    return rows, recaller.scope.embedder


def rerank(
    rows: list[dict[str, Any]],
    text: str,
    embedder: Embedder,
    args: dict[str, Any],
    k: int = max(KS),
) -> list[int]:
    """Node ids ranked from a statement's rows with ``args`` (``scope_share``,
    ``speaker_share``, ``date_share`` and ``semantic_factor`` set ranking.SCOPE_SHARE,
    SPEAKER_SHARE, DATE_SHARE and GRAPH_SEMANTIC_FACTOR for the call), as memstore's
    ranking does; ``k`` hits."""
    from memstore.recall import RecallQuery, ranking

    args = dict(args)
    names = ("SCOPE_SHARE", "SPEAKER_SHARE", "DATE_SHARE", "GRAPH_SEMANTIC_FACTOR")
    keys = ("scope_share", "speaker_share", "date_share", "semantic_factor")
    defaults = [getattr(ranking, name) for name in names]
    for name, key, default in zip(names, keys, defaults, strict=True):
        setattr(ranking, name, args.pop(key, default))
    try:
        spec = RecallQuery(text=text, k=k, **args)
        return [r.row["id"] for r in ranking.ranked(rows, spec, embedder)]
    finally:
        for name, default in zip(names, defaults, strict=True):
            setattr(ranking, name, default)


def packet_recall(
    ns: Any, dia_ids: dict[int, list[str]], q: Question, budget: int
) -> tuple[float, float]:
    """Share of the gold turns anywhere in a ``budget``-token packet, and its latency."""
    started = time.perf_counter()
    packet = ns.recall_context(q.text, budget_tokens=budget)
    elapsed = time.perf_counter() - started
    held = {d for s in packet.sections for item in s.items for d in dia_ids.get(item.id, ())}
    return len(q.gold & held) / len(q.gold), elapsed


def timeline_benchmark(
    store: MemoryStore,
    conversations: list[Conversation],
    prefix: str,
    cache_dir: Path,
    sweep: bool,
    packets: bool,
    report: Callable[..., None],
    ingest_only: bool = False,
    rerank_only: bool = False,
    timed_questions: int | None = None,
    packet_every: int = 1,
    packets_only: bool = False,
) -> dict[str, Any]:
    started = time.perf_counter()
    loaded = [timeline_ingest(store, c, prefix, cache_dir) for c in conversations]
    ingest_s = time.perf_counter() - started
    print(f"timeline: {len(loaded)} namespaces ready in {ingest_s:.1f} s", flush=True)
    if ingest_only:
        return {"ingest_s": ingest_s}
    rerank_only = rerank_only or packets_only
    print(f"{'mode':{LABEL_WIDTH}} {HEADER}")
    # Latency and the two product rankings: real ns.recall calls, the
    # configurations alternating question by question (same load, same caches).
    timed = {label: split_scores() for label, _ in TIMED}
    for index, (conversation, (ns, dia_ids)) in enumerate(zip(conversations, loaded, strict=True)):
        for q in [] if rerank_only else conversation.questions[:timed_questions]:
            for label, recall_args in TIMED:
                began = time.perf_counter()
                hits = ns.recall(q.text, k=max(KS), **recall_args)
                elapsed = time.perf_counter() - began
                ranking = ranked_turns([hit.node.id for hit in hits], dia_ids)
                for part in parts_of(index):
                    timed[label][part].latencies.append(elapsed)
                    score_ranking(q, ranking, timed[label][part])
    for label, recall_args in () if rerank_only else TIMED:
        for part, part_scores in timed[label].items():
            report(f"{label} [{part}]", part_scores, split=part, args=recall_args)
    # Every configuration re-ranks the same statement's rows (ranking is pure
    # Python over them): one graph-evidence recall statement per question.
    configs = [] if packets_only else timeline_configurations(sweep)
    by_config = {label: split_scores() for label, _ in configs}
    for index, (conversation, (ns, dia_ids)) in enumerate(zip(conversations, loaded, strict=True)):
        if not configs:
            break
        print(f"  re-ranking {conversation.sample_id}", flush=True)
        for q in conversation.questions:
            # R@5 and R@10 from the statement of ns.recall(q, k=10) (its pool and
            # expanded seeds), R@20 from that of k=20, as a user would ask.
            rows, embedder = statement_rows(ns, q.text, 10)
            deeper, _ = statement_rows(ns, q.text, 20)
            for label, args in configs:
                ranking = ranked_turns(rerank(rows, q.text, embedder, args, 10), dia_ids)
                at_20 = ranked_turns(rerank(deeper, q.text, embedder, args, 20), dia_ids)
                for part in parts_of(index):
                    score_ranking(q, ranking, by_config[label][part], at_20)
    for label, args in configs:
        for part, part_scores in by_config[label].items():
            part_scores.latencies.append(0.0)
            report(f"{label} [{part}] (re-ranked)", part_scores, split=part, args=args)
    packet_results: dict[str, Any] = {}
    if packets:
        for budget in PACKET_BUDGETS:
            held: dict[str, list[float]] = defaultdict(list)
            times: list[float] = []
            for index, (conversation, (ns, dia_ids)) in enumerate(
                zip(conversations, loaded, strict=True)
            ):
                # Every question (or every n-th), not the first few: a conversation's
                # first questions are mostly multi-hop and temporal ones (165 of the
                # first 20 x 10), whose gold turns recall finds least often.
                for q in conversation.questions[::packet_every]:
                    share, elapsed = packet_recall(ns, dia_ids, q, budget)
                    times.append(elapsed)
                    for part in (*parts_of(index), f"category {q.category}"):
                        held[part].append(share)
            times.sort()
            packet_results[str(budget)] = {
                **{part: statistics.fmean(v) for part, v in held.items()},
                "p50_ms": 1000 * times[len(times) // 2],
                "p95_ms": 1000 * times[int(len(times) * 0.95)],
            }
            print(
                f"packet {budget} tokens: gold turns held "
                + ", ".join(f"{p} {statistics.fmean(v):.3f}" for p, v in held.items())
                + f"; p50 {packet_results[str(budget)]['p50_ms']:.0f} ms"
                f" p95 {packet_results[str(budget)]['p95_ms']:.0f} ms",
                flush=True,
            )
    return {"ingest_s": ingest_s, "packets": packet_results}


def make_embedder(name: str) -> Embedder:
    if name == "hashing":
        return HashingEmbedder()
    from memstore.embedding.onnx import load_default

    return load_default()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--database-url", default=None)
    parser.add_argument(
        "--embedders", default=None, help="comma-separated: hashing,neural (default: all installed)"
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="also sweep the fusion weight (with --activation: activation settings and shares)",
    )
    parser.add_argument(
        "--bm25",
        action="store_true",
        help="also rank lexically with BM25 (computed here) for comparison",
    )
    parser.add_argument(
        "--activation",
        action="store_true",
        help="also link the turns (next, same_session, same_speaker, shares_term) and rank"
        " with ns.activate, as memstore ranks and with benchmark-side neighbour sums",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="ingest through ns.timeline.ingest_turns and measure the default recall,"
        " hybrid alone, each signal and neighbour shares (only this, not the other modes)",
    )
    parser.add_argument(
        "--packets",
        action="store_true",
        help="with --timeline: also packet recall at 1,000 and 2,000 tokens",
    )
    parser.add_argument(
        "--packets-only",
        action="store_true",
        help="with --timeline --packets: only packet recall (no recall measurements)",
    )
    parser.add_argument(
        "--packet-every",
        type=int,
        default=1,
        help="with --packets: every n-th question of each conversation (default: every one)",
    )
    parser.add_argument(
        "--ingest-only",
        action="store_true",
        help="with --timeline and --data-dir: ingest (or find) the namespaces, measure nothing",
    )
    parser.add_argument(
        "--rerank-only",
        action="store_true",
        help="with --timeline: only the re-ranked configurations (no timed ns.recall runs)",
    )
    parser.add_argument(
        "--timed-questions",
        type=int,
        default=None,
        help="with --timeline: time recalls on the first N questions of each"
        " conversation only (default: all)",
    )
    parser.add_argument(
        "--conversations",
        type=int,
        default=None,
        help="only the first N conversations (default: all ten)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep the database here and reuse it (--timeline ingests once)",
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)

    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}: nothing to measure (see shared/data).")
        return 0
    conversations = load(args.data)[: args.conversations]
    questions = sum(len(c.questions) for c in conversations)
    skipped = sum(c.skipped for c in conversations)
    turns = sum(len(c.turns) for c in conversations)
    print(
        f"LoCoMo: {len(conversations)} conversations, {turns} turns, {questions} questions"
        f" (categories 1-4; {skipped} skipped for empty or malformed evidence)"
    )

    names = (
        args.embedders.split(",")
        if args.embedders
        else (["hashing", "neural"] if neural_available() else ["hashing"])
    )
    results: dict[str, Any] = {
        "questions": questions,
        "skipped": skipped,
        "runs": [],
        "activation": {},
        "timeline": {},
    }
    with tempfile.TemporaryDirectory(prefix="memstore-locomo-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        data_dir.mkdir(parents=True, exist_ok=True)
        settings = Settings(data_dir=data_dir, database_url=args.database_url)
        for name in names:
            embedder = make_embedder(name)
            if args.timeline:
                cached = CachedEmbedder(embedder)
                with MemoryStore.open(
                    settings=settings, embedder=cached, auto_upgrade=True
                ) as store:
                    print(f"\n{embedder.name}: timeline ingestion (LoCoMo turns via ingest_turns)")
                    report = partial(record, results["runs"], embedder.name, 0.0)
                    results["timeline"][embedder.name] = timeline_benchmark(
                        store,
                        conversations,
                        f"locomo-timeline-{embedder.name}",
                        data_dir,
                        args.sweep,
                        args.packets,
                        report,
                        args.ingest_only,
                        args.rerank_only,
                        args.timed_questions,
                        args.packet_every,
                        args.packets_only,
                    )
                if args.output:
                    args.output.write_text(json.dumps(results, indent=2))
                continue
            with MemoryStore.open(settings=settings, embedder=embedder, auto_upgrade=True) as store:
                started = time.perf_counter()
                loaded = [ingest(store, c, f"locomo-{embedder.name}") for c in conversations]
                ingest_s = time.perf_counter() - started
                print(f"\n{embedder.name}: ingested {turns} turns in {ingest_s:.1f} s")
                print(f"{'mode':{LABEL_WIDTH}} {HEADER}")

                report = partial(record, results["runs"], embedder.name, ingest_s)
                configs = configurations(args.sweep)
                if args.bm25 and name == names[0]:  # lexical: the same for every embedder
                    configs = [("lexical BM25 (outside memstore)", {"bm25": True}), *configs]
                for label, recall_args in configs:
                    scores = Scores()
                    for conversation, (ns, dia_ids) in zip(conversations, loaded, strict=True):
                        if recall_args.get("bm25"):
                            evaluate_bm25(store, ns, dia_ids, conversation.questions, scores)
                        else:
                            evaluate(ns, dia_ids, conversation.questions, scores, **recall_args)
                    report(label, scores)
                if args.activation:
                    results["activation"][embedder.name] = activation_benchmark(
                        store, conversations, loaded, args.sweep, report
                    )
            if args.output:  # rewritten after each embedder
                args.output.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
