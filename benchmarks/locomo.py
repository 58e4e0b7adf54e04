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

Run (each embedder, each mode; a few minutes on 2 cores):

    .venv/bin/python benchmarks/locomo.py                       # embedded server
    .venv/bin/python benchmarks/locomo.py --embedders hashing   # no neural extra
    .venv/bin/python benchmarks/locomo.py --sweep               # also calibrate fusion weight
    .venv/bin/python benchmarks/locomo.py --bm25                # also BM25 vs ts_rank_cd

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
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder
from memstore.embedding.base import Embedder
from memstore.embedding.select import neural_available

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
DIA_ID = re.compile(r"^D(\d+):(\d+)$")
KS = (5, 10, 20)
CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


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
        ranked: list[str] = []
        for hit in hits:
            ranked += [d for d in dia_ids[hit.node.id] if d not in ranked]
        score_ranking(q, ranked, scores)


def summary(scores: Scores) -> dict[str, Any]:
    lat = sorted(scores.latencies)
    return {
        "questions": len(scores.turn[10]),
        "turn_recall": {k: statistics.fmean(scores.turn[k]) for k in KS},
        "session_recall": {k: statistics.fmean(scores.session[k]) for k in KS},
        "turn_recall_at_10_by_category": {
            CATEGORY_NAMES[c]: statistics.fmean(v) for c, v in sorted(scores.by_category.items())
        },
        "latency_ms": {"p50": 1000 * lat[len(lat) // 2], "p95": 1000 * lat[int(len(lat) * 0.95)]},
    }


class BM25:
    """Okapi BM25 over one namespace's own tsvectors (PostgreSQL's stemming and
    stop words), to measure whether it would beat ``ts_rank_cd`` as the lexical
    signal. Computed here, outside memstore, over every turn of the namespace."""

    K1, B = 1.2, 0.75

    def __init__(self, store: MemoryStore, namespace_id: int):
        with store.transaction() as conn:
            rows = conn.exec_driver_sql(
                "SELECT id, search::text FROM memstore.nodes WHERE namespace_id = %(ns)s",
                {"ns": namespace_id},
            ).all()
        self.store = store
        self.docs: dict[int, dict[str, int]] = {}
        for node_id, vector in rows:
            terms: dict[str, int] = {}
            for lexeme, positions in re.findall(r"'((?:[^']|'')*)'(?::([\d,A-D]+))?", vector):
                terms[lexeme] = len(positions.split(",")) if positions else 1
            self.docs[node_id] = terms
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
        ranked: list[str] = []
        for node_id in ranked_ids:
            ranked += [d for d in dia_ids[node_id] if d not in ranked]
        score_ranking(q, ranked, scores)


def score_ranking(q: Question, ranked: list[str], scores: Scores) -> None:
    gold_sessions = {session_of(g) for g in q.gold}
    for k in KS:
        top = ranked[:k]
        scores.turn[k].append(len(q.gold & set(top)) / len(q.gold))
        sessions = {session_of(d) for d in top}
        scores.session[k].append(len(gold_sessions & sessions) / len(gold_sessions))
    scores.by_category[q.category].append(len(q.gold & set(ranked[:10])) / len(q.gold))


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


def make_embedder(name: str) -> Embedder:
    if name == "hashing":
        return HashingEmbedder()
    from memstore.embedding.onnx import load_default

    return load_default()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--database-url", default=None)
    parser.add_argument(
        "--embedders", default=None, help="comma-separated: hashing,neural (default: all installed)"
    )
    parser.add_argument("--sweep", action="store_true", help="also sweep the fusion weight")
    parser.add_argument(
        "--bm25",
        action="store_true",
        help="also rank lexically with BM25 (computed here) for comparison",
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}: nothing to measure (see shared/data).")
        return 0
    conversations = load(args.data)
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
    results: dict[str, Any] = {"questions": questions, "skipped": skipped, "runs": []}
    with tempfile.TemporaryDirectory(prefix="memstore-locomo-") as tmp:
        settings = Settings(data_dir=Path(tmp), database_url=args.database_url)
        for name in names:
            embedder = make_embedder(name)
            with MemoryStore.open(settings=settings, embedder=embedder, auto_upgrade=True) as store:
                started = time.perf_counter()
                loaded = [ingest(store, c, f"locomo-{embedder.name}") for c in conversations]
                ingest_s = time.perf_counter() - started
                print(f"\n{embedder.name}: ingested {turns} turns in {ingest_s:.1f} s")
                header = (
                    f"{'mode':28} {'R@5':>6} {'R@10':>6} {'R@20':>6} {'S@5':>6}"
                    f" {'p50 ms':>7} {'p95 ms':>7}   R@10 by category"
                )
                print(header)
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
                    s = summary(scores)
                    cats = " ".join(
                        f"{c[:6]}={v:.3f}" for c, v in s["turn_recall_at_10_by_category"].items()
                    )
                    print(
                        f"{label:28} {s['turn_recall'][5]:6.3f} {s['turn_recall'][10]:6.3f}"
                        f" {s['turn_recall'][20]:6.3f} {s['session_recall'][5]:6.3f}"
                        f" {s['latency_ms']['p50']:7.1f} {s['latency_ms']['p95']:7.1f}   {cats}"
                    )
                    results["runs"].append(
                        {"embedder": embedder.name, "config": label, "ingest_s": ingest_s, **s}
                    )
    if args.output:
        args.output.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
