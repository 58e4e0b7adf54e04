"""Transcript ingest: ``ns.timeline.ingest_turns`` against one ``ingest_turn`` per turn.

The transcript is LoCoMo's ten conversations (../shared/data/locomo10.json,
CC BY-NC 4.0, evaluation only, never copied here; 5,882 turns), read as one
namespace: each ``session_<N>`` of a conversation is a timeline session, each
turn at its session's date plus one second per turn. Without the file (or with
``--synthetic N``) a synthetic transcript of N turns in 20 interleaved
sessions stands in.

For each embedder it measures, on one server:

- ``embed``: the embedder alone on the turns' texts, in batches of
  ``--batch-size`` (the floor bulk ingest cannot go under);
- ``ingest_turns`` into a fresh namespace, first with no HNSW index for the
  model (a fresh store: the index is built after the load, included in the
  time), then into a second namespace with the index live;
- the same transcript again (idempotent: nothing is added);
- ``remember_many`` of the same texts as plain memories (bulk COPY without the
  timeline's lookups and links) into a live index;
- ``ingest_turn`` one call per turn on the first ``--per-turn`` turns.

Goals (issue 21 item 12): ≥ 1,000 turns/s with the hashing embedder, and
within 1.2× of the embedder's own batch time with the neural one.

    .venv/bin/python benchmarks/ingest_turns.py                        # both embedders
    .venv/bin/python benchmarks/ingest_turns.py --embedders hashing --json /tmp/turns.json
    .venv/bin/python benchmarks/ingest_turns.py --synthetic 5882
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder
from memstore.embedding.base import Embedder
from memstore.embedding.select import neural_available

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
START = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def locomo_turns(path: Path) -> list[dict[str, Any]]:
    """LoCoMo's turns in reading order, as ``ingest_turns`` takes them."""
    turns: list[dict[str, Any]] = []
    for sample in json.loads(path.read_text()):
        conversation = sample["conversation"]
        # The session_<N> keys, not the date keys (some dates have no turns).
        sessions = sorted(
            (int(key.split("_")[1]), key)
            for key in conversation
            if re.fullmatch(r"session_\d+", key) and isinstance(conversation[key], list)
        )
        for number, key in sessions:
            when = parse_date(conversation.get(f"{key}_date_time")) or START
            for k, turn in enumerate(conversation[key]):
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                turns.append(
                    {
                        "role": turn["speaker"],
                        "content": text,
                        "session_id": f"{sample['sample_id']}/{number}",
                        "at": when + timedelta(seconds=k),
                    }
                )
    return turns


def parse_date(text: str | None) -> datetime | None:
    try:
        return datetime.strptime((text or "").strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def synthetic_turns(n: int, sessions: int = 20) -> list[dict[str, Any]]:
    """``n`` turns of ``sessions`` interleaved sessions, a few words each."""
    words = "harbour ferry ticket dinner peanut allergy lisbon train museum budget".split()
    return [
        {
            "role": "user" if i % 2 else "assistant",
            "content": f"turn {i}: the {words[i % 10]} and the {words[(i * 7) % 10]} again",
            "session_id": f"session-{i % sessions}",
            "at": START + timedelta(seconds=i),
        }
        for i in range(n)
    ]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def note(message: str) -> None:
    """A step's time as soon as it is measured (a slow run still shows what it has)."""
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", flush=True)


def make_embedder(name: str) -> Embedder:
    if name == "hashing":
        return HashingEmbedder()
    from memstore.embedding.onnx import load_default

    return load_default()


def measure(
    store: MemoryStore, embedder: Embedder, turns: list[dict[str, Any]], args: argparse.Namespace
) -> dict[str, Any]:
    n, batch = len(turns), args.batch_size
    texts = [f"{t['role']}: {t['content']}" for t in turns]
    embedder.embed(texts[:8])  # load the model, warm the runtime
    embed_s, _ = timed(lambda: [embedder.embed(texts[i : i + batch]) for i in range(0, n, batch)])
    row: dict[str, Any] = {"embedder": embedder.name, "turns": n, "embed_s": embed_s}
    note(f"{embedder.name}: embedder alone {embed_s:.2f} s")

    def fresh() -> Any:
        return store.namespace(f"turns-{embedder.name}-{uuid.uuid4().hex[:8]}")

    first = fresh()
    row["bulk_fresh_s"], report = timed(
        lambda: first.timeline.ingest_turns(turns, batch_size=batch)
    )
    row["created"], row["linked"] = report.created, report.linked
    note(f"ingest_turns, fresh store {row['bulk_fresh_s']:.2f} s")
    row["rerun_s"], again = timed(lambda: first.timeline.ingest_turns(turns, batch_size=batch))
    assert again.created == 0 and again.linked == 0, again
    note(f"again {row['rerun_s']:.2f} s")
    second = fresh()
    row["bulk_live_s"], _ = timed(lambda: second.timeline.ingest_turns(turns, batch_size=batch))
    note(f"ingest_turns, live index {row['bulk_live_s']:.2f} s")
    plain = fresh()
    items = [{"content": text, "kind": "episodic"} for text in texts]
    row["remember_many_s"], _ = timed(lambda: plain.remember_many(items, batch_size=batch))
    note(f"remember_many {row['remember_many_s']:.2f} s")
    sample = turns[: args.per_turn]
    one = fresh()
    per_turn_s, _ = timed(
        lambda: [
            one.timeline.ingest_turn(t["role"], t["content"], t["session_id"], at=t["at"])
            for t in sample
        ]
    )
    row["per_turn_sample"] = len(sample)
    row["per_turn_rate"] = len(sample) / per_turn_s
    for key in ("bulk_fresh", "bulk_live"):
        row[f"{key}_rate"] = n / row[f"{key}_s"]
        row[f"{key}_vs_embed"] = row[f"{key}_s"] / embed_s
    return row


def show(row: dict[str, Any], batch: int) -> None:
    n = row["turns"]
    print(f"\n{row['embedder']}: {n} turns ({row['created']} created, {row['linked']} next edges)")
    lines = [
        (f"embedder alone, batches of {batch}", row["embed_s"], ""),
        ("ingest_turns, fresh store (index built after)", row["bulk_fresh_s"], "fresh"),
        ("ingest_turns, live HNSW index", row["bulk_live_s"], "live"),
        ("the same transcript again (adds nothing)", row["rerun_s"], ""),
        ("remember_many of the texts, live index", row["remember_many_s"], ""),
    ]
    for label, seconds, key in lines:
        extra = (
            f"  {n / seconds:6.0f} turns/s  {seconds / row['embed_s']:.2f}x embed" if key else ""
        )
        print(f"  {label:48} {seconds:7.2f} s{extra}")
    rate = row["per_turn_rate"]
    print(
        f"  {'ingest_turn one by one (' + str(row['per_turn_sample']) + ' turns)':48}"
        f" {rate:7.1f} turns/s (all {n}: ~{n / rate:.0f} s)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--synthetic", type=int, default=0, help="N synthetic turns instead")
    parser.add_argument("--embedders", default=None, help="hashing,neural (default: installed)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N turns")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--per-turn", type=int, default=300, help="turns timed one by one")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    if args.synthetic or not args.data.exists():
        turns = synthetic_turns(args.synthetic or 5882)
        source = f"synthetic ({len(turns)} turns)"
    else:
        turns = locomo_turns(args.data)
        source = f"LoCoMo ({len(turns)} turns, {len({t['session_id'] for t in turns})} sessions)"
    if args.limit:
        turns = turns[: args.limit]
        source += f", the first {len(turns)}"
    names = (
        args.embedders.split(",")
        if args.embedders
        else ["hashing", "neural"]
        if neural_available()
        else ["hashing"]
    )
    print(f"transcript: {source}; batch size {args.batch_size}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="memstore-turns-") as tmp:
        settings = Settings(data_dir=Path(tmp), database_url=args.database_url)
        for name in names:
            embedder = make_embedder(name)
            with MemoryStore.open(settings=settings, embedder=embedder, auto_upgrade=True) as store:
                row = measure(store, embedder, turns, args)
            rows.append(row)
            show(row, args.batch_size)
    if args.json:
        args.json.write_text(json.dumps({"source": source, "runs": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
