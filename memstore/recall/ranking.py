"""A recall statement's rows as ranked hits: fused, ties broken, provenance attached."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from memstore.embedding.base import Embedder
from memstore.graph.rows import to_node
from memstore.models import Hit, ScoreParts
from memstore.recall import fusion
from memstore.recall.dates import named_periods
from memstore.recall.injection import memory_signals
from memstore.recall.query import DEFAULT_SEMANTIC_WEIGHT, RecallQuery

# Scope evidence (with graph evidence, so neighbour_share=0 turns it off too):
# a memory gains this share of the best fused score among the other candidates
# of its scope (a timeline turn's scope is its session), so the session a
# question is about pulls its turns up. Chosen with DEFAULT_NEIGHBOUR_SHARE,
# among 0.05-0.3 (docs/benchmark-notes.md).
SCOPE_SHARE = 0.3
# Speaker evidence (also off with neighbour_share=0): when the question names a
# speaker (a memory's actor, as a whole word: "What did Caroline paint?"), that
# speaker's memories gain this share of the best score so far, so the turns she
# said outrank the ones that only answer her. Chosen on LoCoMo conversations 0-4
# among 0.05-0.8 (docs/benchmark-notes.md, "second pass").
SPEAKER_SHARE = 0.5
# Date evidence (also off with neighbour_share=0): when the question names a
# calendar day or month ("on 3 June, 2023", "in July"; memstore/recall/dates.py),
# the memories observed then (or up to a week after) gain this share of the best
# score so far. Chosen on LoCoMo conversations 0-4 among 0.1-0.5 (0.3 and 0.5
# within 0.003 of each other; docs/benchmark-notes.md, "third pass").
DATE_SHARE = 0.3
# With that evidence, the similarity signal's share of the fused score is this
# factor of the embedder's (MiniLM 0.5 -> 0.3, hashing 0.2 -> 0.12): neighbour
# and scope evidence sum fused scores over several memories, and similarity,
# flat over a conversation's turns, adds to every sum alike where full text
# picks out the few that share the question's rare words. Chosen on LoCoMo
# conversations 0-4 among 0.5-1.0 (docs/benchmark-notes.md, "third pass").
GRAPH_SEMANTIC_FACTOR = 0.6


class Ranked(NamedTuple):
    """One returned row of a recall statement, with its fused score and rank (1 = best)."""

    row: dict[str, Any]
    score: float
    rank: int


def ranked(rows: list[dict[str, Any]], q: RecallQuery, embedder: Embedder) -> list[Ranked]:
    """The recall statement's rows fused and ranked, ties broken, the best ``q.k`` kept
    (no models built: :func:`hits` builds them; a context packet reads the rows)."""
    found = {row["id"]: row for row in rows}
    semantic = sorted(
        (r for r in found.values() if r["semantic_rank"]), key=lambda r: r["semantic_rank"]
    )
    lexical = sorted(
        (r for r in found.values() if r["lexical_rank"]), key=lambda r: r["lexical_rank"]
    )
    signals = {i: (r["similarity"], float(r["lexical"] or 0.0)) for i, r in found.items()}
    # The candidates a signal found; the others are neighbours graph evidence added.
    seeds = {i for i, r in found.items() if r["semantic_rank"] or r["lexical_rank"]}
    edges = neighbour_edges(rows)
    scopes = {i: r["scope"] for i, r in found.items() if r["scope"] is not None}
    if q.mode == "semantic":
        scores = {r["id"]: float(r["similarity"]) for r in semantic}
    elif q.mode == "lexical":
        scores = {r["id"]: float(r["lexical"]) for r in lexical}
    elif q.fusion == "rrf":
        scores = fusion.reciprocal_rank([[r["id"] for r in semantic], [r["id"] for r in lexical]])
    else:
        weight = q.semantic_weight
        if weight is None:
            weight = float(getattr(embedder, "semantic_weight", DEFAULT_SEMANTIC_WEIGHT))
            if q.graph_evidence > 0 and (edges or scopes):
                # Only where there is something to sum: an unlinked namespace of
                # unscoped memories ranks as plain recall does.
                weight *= GRAPH_SEMANTIC_FACTOR
        scores = fusion.weighted(signals, weight, seeds)
    if q.graph_evidence > 0 and (edges or SCOPE_SHARE > 0):
        base = scores
        scores = fusion.with_neighbours(base, edges, q.graph_evidence)
        if SCOPE_SHARE > 0:
            scores = fusion.with_scope(scores, base, scopes, SCOPE_SHARE)
        if SPEAKER_SHARE > 0 and q.text is not None:
            named = named_actors(q.text, (r["actor"] for r in found.values()))
            speakers = {i for i, r in found.items() if r["actor"] in named}
            scores = fusion.lifted(scores, speakers, SPEAKER_SHARE)
        if DATE_SHARE > 0 and q.text is not None:
            periods = named_periods(q.text)
            dated = {
                i for i, r in found.items() if any(p.holds(r["observed_at"]) for p in periods)
            }
            scores = fusion.lifted(scores, dated, DATE_SHARE)
    else:
        scores = {i: v for i, v in scores.items() if i in seeds}
    # Ties (e.g. equal fused scores) fall back to similarity, then id: stable output.
    best = sorted(scores, key=lambda i: (-scores[i], -(signals[i][0] or 0.0), i))[: q.k]
    return [
        Ranked(found[node_id], float(scores[node_id]), position)
        for position, node_id in enumerate(best, start=1)
    ]


def named_actors(text: str, actors: Iterable[str | None]) -> set[str]:
    """The actors among ``actors`` that ``text`` names, each as a whole word or phrase,
    case-insensitively.

    >>> sorted(named_actors("What did caroline's mum paint?", ["Caroline", "Mel", None]))
    ['Caroline']
    """
    folded = text.casefold()
    return {
        actor
        for actor in set(actors)
        if actor and re.search(rf"(?<!\w){re.escape(actor.casefold())}(?!\w)", folded)
    }


def neighbour_edges(rows: list[dict[str, Any]]) -> list[tuple[int, int, float]]:
    """The edges graph evidence follows (recall.sql's ``neighbour_edges``, on every row)."""
    if not rows or rows[0].get("neighbour_edges") is None:
        return []
    return [(int(a), int(b), float(w)) for a, b, w in json.loads(rows[0]["neighbour_edges"])]


def hits(
    rows: list[dict[str, Any]], q: RecallQuery, embedder: Embedder, namespace: str
) -> list[Hit]:
    """The recall statement's rows as ranked hits: fused, ties broken, provenance attached."""
    return [
        Hit(
            node=to_node({**r.row, "data": json.loads(r.row["data"])}, namespace),
            score=r.score,
            parts=ScoreParts(
                similarity=r.row["similarity"],
                lexical=r.row["lexical"],
                semantic_rank=r.row["semantic_rank"],
                lexical_rank=r.row["lexical_rank"],
                fused_rank=r.rank,
            ),
            instruction_signals=memory_signals(
                label=r.row["label"],
                content=r.row["content"],
                node_type=r.row["node_type"],
                tier=r.row["tier"],
                actor=r.row["actor"],
            ),
        )
        for r in ranked(rows, q, embedder)
    ]
