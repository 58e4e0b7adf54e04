"""The demo: a short scripted agent conversation, remembered and recalled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.table import Table

from memstore.activation import ActivationParams
from memstore.models import Node
from memstore.namespace import Namespace
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
# Activation follows associations that share no words with the question:
# recall finds the dinner note, an edge leads to the allergy.
ACTIVATION_QUESTION = "Suggest a restaurant for the team dinner"


def run_demo(store: MemoryStore, console: Console) -> None:
    """Remember the conversation (idempotently: reruns add nothing) and answer questions."""
    ns = store.namespace("demo")
    start = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    # The conversation goes into the timeline: one turn each, chained by `next`
    # edges; with fixed times a rerun finds the same turns.
    ids = [
        ns.timeline.ingest_turn(speaker, text, "demo-chat", at=start + timedelta(minutes=i)).id
        for i, (speaker, text) in enumerate(CONVERSATION)
    ]
    allergy = ns.remember(
        "Maya is allergic to peanuts",
        kind="semantic",
        importance=0.9,
        node_type="Safety",
        layer=0,
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
                f"{node.scope or node.source} {node.observed_at:%H:%M}"
                if node.observed_at
                else node.source,
            )
        console.print(table)
    show_activation(ns, console, allergy)
    show_lifecycle(ns, console)
    show_context(ns, console)


def show_activation(ns: Namespace, console: Console, allergy: Node) -> None:
    """Show spreading activation reaching a memory that plain recall misses."""
    plan = ns.remember(
        "Team dinner on Friday: Maya books the restaurant",
        kind="semantic",
        node_type="Fact",
        source="chat:demo#7",
    )
    # Link once: the demo is rerun against the same namespace.
    if allergy.id not in {r.id for r in ns.activate(seeds=[plan.id], depth=1).background}:
        ns.link(plan.id, allergy.id, relation="constrained_by", weight=0.9)
    # Plain recall (no graph evidence, as activation seeds itself): the same top 3
    # activation starts from; everything else came through edges.
    recalled = {hit.node.id for hit in ns.recall(ACTIVATION_QUESTION, k=3, neighbour_share=0)}
    activation = ns.activate(
        ACTIVATION_QUESTION, depth=2, limit=5, params=ActivationParams(seed_count=3)
    )
    table = Table(
        "activation",
        "memory",
        "path",
        "in plain recall top 3",
        title=f"{ACTIVATION_QUESTION} (spreading activation)",
        title_justify="left",
    )
    for item in activation.working_memory:
        path = " → ".join(
            f"#{step.node_id}" if step.relation is None else f"{step.relation} → #{step.node_id}"
            for step in item.path
        )
        table.add_row(
            f"{item.score:.2f}",
            item.node.content,
            path,
            "yes" if item.node.id in recalled else "no: reached through an edge",
        )
    console.print(table)


def show_lifecycle(ns: Namespace, console: Console) -> None:
    """The agent proposes memory changes as operations; the law decides; sleep consolidates."""
    anatomy = {
        "target": "Maya's dinner",
        "tension": "the team dinner is at a Thai place",
        "action_implication": "ask for a peanut-free menu",
        "anchors": ["chat:demo#3"],
    }
    thoughts = [
        {
            "op": "record_short_term",
            "anatomy": {**anatomy, "claim_or_question": claim},
            "salience": 0.8,
        }
        for claim in ("Maya cannot eat peanuts", "Thai dishes often use peanuts")
    ]
    overreach = {"op": "remember", "content": "Maya hates Thai food", "kind": "semantic"}
    refused = ns.apply([*thoughts, overreach], phase="rumination", actor="demo-agent")
    table = Table("op", "outcome", "reason", title="rumination: the law judges the agent's batch")
    for result in refused.results:
        table.add_row(result.op or "?", result.outcome, result.reason or "")
    console.print(table)
    ns.apply(thoughts, phase="rumination", actor="demo-agent")
    slept = ns.sleep(forced=True, actor="demo-sleep")
    for result in slept.results:
        if result.op == "distill":
            memory = ns.get(result.nodes[0])
            console.print(
                f"sleep distilled {len(result.accounted)} short-term memory(ies) into durable"
                f" memory #{memory.id}: {memory.content!r} (residue: {len(slept.residue)})"
            )


def show_context(ns: Namespace, console: Console) -> None:
    """End with the context packet a scripted agent would put into its prompt."""
    ns.scratchpad.pin("home city", "Lisbon")
    ns.scratchpad.pin("diet", "no peanuts")
    ns.lessons.add_if_new(
        "Check dietary restrictions before booking a restaurant",
        source="retro 2026-11",
        confidence=0.9,
    )
    ns.procedures.add_if_new(
        "book-restaurant",
        description="Book a restaurant for a group",
        steps=[
            {"tool": "search", "purpose": "find places", "instruction": "near the office"},
            {"tool": "calendar", "purpose": "pick a time", "instruction": "after 19:00"},
        ],
    )
    packet = ns.recall_context(ACTIVATION_QUESTION, budget_tokens=600)
    console.rule(f"context packet ({packet.tokens_used} of {packet.budget_tokens} tokens)")
    console.print(packet.render(), markup=False, highlight=False)
