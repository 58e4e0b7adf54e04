"""The demo: a short scripted agent conversation, remembered and recalled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.table import Table

from memstore.store import MemoryStore

CONVERSATION = [
    ("user", "Hi! I'm Maya. I just moved from Porto to Lisbon for a new job."),
    ("agent", "Welcome to Lisbon, Maya! What's the new job?"),
    ("user", "I'm a data engineer at a bike-sharing startup. I start on Monday."),
    ("user", "By the way, I'm allergic to peanuts, so no satay recommendations please."),
    ("agent", "Noted: no peanuts. Anything you'd like help with this week?"),
    ("user", "Find me a climbing gym near Alcântara, I climb twice a week."),
    ("user", "Also remind me to call my sister Inês on her birthday, 14 June."),
]
QUESTIONS = [
    "What food should I avoid suggesting?",
    "Where does Maya work?",
    "When is Inês's birthday?",
]


def run_demo(store: MemoryStore, console: Console) -> None:
    """Remember the conversation (idempotently: reruns add nothing) and answer questions."""
    ns = store.namespace("demo")
    start = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    items = [
        {
            "content": f"{speaker}: {text}",
            "actor": speaker,
            "source": f"chat:demo#{i}",
            "observed_at": start + timedelta(minutes=i),
        }
        for i, (speaker, text) in enumerate(CONVERSATION)
    ]
    ids = ns.remember_many(items)
    ns.remember(
        "Maya is allergic to peanuts",
        kind="semantic",
        importance=0.9,
        source="distilled from chat:demo#3",
    )
    console.print(
        f"\nremembered {len(ids)} turns and 1 fact in namespace 'demo'"
        f" (embedder {store.embedder.name})"
    )
    for question in QUESTIONS:
        table = Table(
            "score", "sim", "lex", "memory", "provenance", title=question, title_justify="left"
        )
        for hit in ns.recall(question, k=3):
            node = hit.node
            table.add_row(
                f"{hit.score:.2f}",
                "" if hit.parts.similarity is None else f"{hit.parts.similarity:.2f}",
                f"{hit.parts.lexical:.2f}" if hit.parts.lexical else "",
                node.content,
                f"{node.source} {node.observed_at:%H:%M}" if node.observed_at else node.source,
            )
        console.print(table)
