"""Recall's answers, fingerprinted: the top-k ids and scores (and each hit's score parts) of
a LoCoMo conversation's questions, written to a JSON file, or compared with one.

A latency change must not change any result. Run it before the change (``--write``) and
after (``--compare``), with each embedder; it exits 1 and names the first questions whose
answers differ (ids, order, or a score beyond ``--tolerance``).

    .venv/bin/python benchmarks/recall_fingerprint.py --data-dir /tmp/retr-db \\
        --conversation conv-48 --questions 100 --write /tmp/before-hashing.json
    .venv/bin/python benchmarks/recall_fingerprint.py --data-dir /tmp/retr-db \\
        --conversation conv-48 --questions 100 --compare /tmp/before-hashing.json

The calls: the default ``ns.recall(q, k=10)``, plain hybrid (``neighbour_share=0``),
``mode="semantic"``, ``mode="lexical"``, and the ids and reasons of ``ns.recall_context(q, 2000)``'s
items.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo

from memstore import MemoryStore
from memstore.config import Settings


def answers(ns: Any, text: str) -> dict[str, Any]:
    """Every call's answer to one question, as plain data."""

    def ranked(**options: Any) -> list[list[Any]]:
        return [
            [
                hit.node.id,
                hit.score,
                hit.parts.similarity,
                hit.parts.lexical,
                hit.parts.semantic_rank,
                hit.parts.lexical_rank,
                list(hit.instruction_signals),
            ]
            for hit in ns.recall(text, k=10, **options)
        ]

    calls: dict[str, Callable[[], Any]] = {
        "default": ranked,
        "plain": lambda: ranked(neighbour_share=0.0),
        "semantic": lambda: ranked(mode="semantic"),
        "lexical": lambda: ranked(mode="lexical"),
        "context": lambda: [
            # (not its score: activation's decay moves it with the clock)
            [section.name, item.id, item.reason]
            for section in ns.recall_context(text, 2000).sections
            for item in section.items
        ],
    }
    return {name: call() for name, call in calls.items()}


def differences(before: dict[str, Any], after: dict[str, Any], tolerance: float) -> list[str]:
    found = []
    for question, calls in before.items():
        for call, expected in calls.items():
            got = after.get(question, {}).get(call)
            if got is None or len(got) != len(expected):
                now = None if got is None else len(got)
                found.append(f"{call}: {question!r}: {len(expected)} answers, now {now}")
                continue
            for a, b in zip(expected, got, strict=True):
                if not same(a, b, tolerance):
                    found.append(f"{call}: {question!r}: {a} -> {b}")
                    break
    return found


def same(a: Any, b: Any, tolerance: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tolerance
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, tolerance) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--conversation", default="conv-48")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--embedder", default="hashing", help="hashing or neural (MiniLM)")
    parser.add_argument("--write", type=Path, help="write the answers here")
    parser.add_argument("--compare", type=Path, help="compare the answers with this file")
    parser.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args()
    conversation = {c.sample_id: c for c in locomo.load(locomo.DATA)}[args.conversation]
    questions = [q.text for q in conversation.questions[: args.questions]]
    embedder = locomo.make_embedder(args.embedder)
    with MemoryStore.open(
        settings=Settings(data_dir=args.data_dir), embedder=embedder, auto_upgrade=True
    ) as store:
        ns, _ = locomo.timeline_ingest(
            store, conversation, f"locomo-timeline-{embedder.name}", args.data_dir
        )
        found = {text: answers(ns, text) for text in dict.fromkeys(questions)}
    if args.write:
        args.write.write_text(json.dumps(found, indent=0))
        print(f"{len(found)} questions' answers written to {args.write}")
    if args.compare:
        diff = differences(json.loads(args.compare.read_text()), found, args.tolerance)
        print(f"{len(found)} questions compared with {args.compare}: {len(diff)} differ")
        for line in diff[:20]:
            print("  " + line)
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
