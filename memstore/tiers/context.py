"""Token-budgeted context packets: what an agent puts into its prompt (docs/tiers.md).

``ns.recall_context(query, budget_tokens)`` gathers candidates from every tier
in one transaction — one hybrid recall over the whole namespace, the pinned
facts, the confident lessons, the session's recent turns, the open agency
pressures and fresh short-term records, and spreading activation from the best
hits — ranks each section's candidates by relevance
to the query, then fills each section up to its share of the budget
(:mod:`memstore.tiers.packet`, which reads no database). Budget a section
leaves unused flows to the others. The rendered packet never exceeds the
budget as the token counter counts it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from memstore import activation as spreading
from memstore.activation.model import ActivateRequest
from memstore.embedding import cache
from memstore.graph import outcomes
from memstore.graph.namespaces import name_check
from memstore.graph.rows import fetch_nodes
from memstore.inputs import validated
from memstore.law.policy import AGENCY, SHORT_TERM
from memstore.recall import RecallQuery
from memstore.recall import ranked as recall_ranked
from memstore.recall.context import PacketRows, read_packet_rows
from memstore.recall.ranking import neighbour_edges
from memstore.tiers.common import LESSONS, PROCEDURES, SCRATCHPAD, TIMELINE
from memstore.tiers.packet import (
    FRESH_SHORT_TERM,
    INSTRUCTION_MARK,
    LESSON_THRESHOLD,
    LIFECYCLE_SECTION_TIERS,
    MAX_LESSONS,
    MAX_PINS,
    MIN_RECALL,
    OPEN_PRESSURES,
    RECALL_POOL,
    RECENT_TURNS,
    ContextItem,
    ContextPacket,
    ContextRequest,
    ContextSection,
    Entry,
    Gathered,
    TokenCounter,
    by_relevance,
    chars_over_four,
    elapsed_ms,
    fill,
    recall_size,
    with_adjacent,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from memstore.db.transaction import PipelinedTransaction
    from memstore.recall import RecallPlan
    from memstore.services.recall import Recaller
    from memstore.services.scope import Scope

__all__ = [
    "INSTRUCTION_MARK",
    "MIN_RECALL",
    "RECALL_POOL",
    "ContextItem",
    "ContextPacket",
    "ContextRequest",
    "ContextSection",
    "TokenCounter",
    "assemble",
    "chars_over_four",
    "gather",
    "recall_size",
]


def assemble(
    ns: Scope,
    recaller: Recaller,
    request: ContextRequest,
    token_counter: TokenCounter,
) -> ContextPacket:
    """The packet for a validated request: :func:`gather` its candidates, then
    :func:`~memstore.tiers.packet.fill` the budget with them."""
    timings: dict[str, float] = {}
    found = gather(ns, recaller, request, timings)
    return fill(request, found, token_counter, model=ns.embedder.name, timings=timings)


def gather(
    ns: Scope, recaller: Recaller, request: ContextRequest, timings: dict[str, float]
) -> Gathered:
    """Every section's candidates and what the warnings need, in one transaction.

    The recall, the tiers' own candidates and the redactions count travel in
    one pipeline (one wait for the server); activation follows from the hits.
    """
    started = time.perf_counter()
    vector = ns.embedder.embed([request.query])[0]
    if not vector.any():
        vector = None
    timings["embed"] = elapsed_ms(started)
    ceiling = request.privacy_ceiling
    if ceiling is None:
        ceiling = ns.settings.privacy_ceiling
    spec = validated(
        RecallQuery,
        text=request.query,
        k=recall_size(request.budget_tokens),
        privacy_ceiling=ceiling,
        tags=request.tags,
    )
    prepare = ns.settings.prepared_statements
    # Every read below runs under the ceiling: the recall and the pull filter by
    # it, context.sql's reads by the ceiling this transaction declares.
    tier_params = {
        "max_pins": MAX_PINS,
        "max_lessons": MAX_LESSONS,
        "lesson_threshold": LESSON_THRESHOLD,
        "recent_turns": RECENT_TURNS,
        "open_pressures": OPEN_PRESSURES,
        "fresh_short_term": FRESH_SHORT_TERM,
        "session_id": request.session_id,
        "tags": request.tags or None,
    }
    started = time.perf_counter()
    reading = packet_reading(
        ns, ceiling, lambda: recaller.plan(spec, vector), tier_params, prepare=prepare
    )
    with reading as (conn, read):
        recall_rows, tier_rows, redacted = read
        recaller.learn(recall_rows)
        # The hits stay rows: a packet shows few of them, and builds what it shows.
        top = recall_ranked(recall_rows, spec, ns.embedder)
        relevance = {r.row["id"]: (r.score, r.rank) for r in top}
        timings["recall"] = elapsed_ms(started)

        started = time.perf_counter()
        entries: dict[str, list[Entry]] = {
            SCRATCHPAD: [], LESSONS: [], TIMELINE: [], AGENCY: [], SHORT_TERM: []
        }  # fmt: skip
        for section, *fields in tier_rows:
            entries[section].append(Entry(*fields))
        candidates: dict[str, list[tuple[Entry, float, str]]] = {}
        candidates["scratchpad"] = by_relevance(entries[SCRATCHPAD], relevance, "pinned")
        candidates["lessons"] = by_relevance(entries[LESSONS], relevance, "high confidence")
        procedures = [Entry.of_row(r.row) for r in top if r.row["tier"] == PROCEDURES]
        candidates["procedures"] = served_procedures(conn, ns, procedures, relevance, request.role)
        relevant_turns = [Entry.of_row(r.row) for r in top if r.row["tier"] == TIMELINE]
        turns = relevant_turns + [t for t in entries[TIMELINE] if t.id not in relevance]
        candidates["timeline"] = with_adjacent(
            by_relevance(turns, relevance, "recent turn"),
            recall_rows,
            neighbour_edges(recall_rows),
            relevance,
        )
        # Lifecycle records the query recalled first, then what is open whatever
        # the query: the strongest pressures, the newest short-term records.
        lifecycle = [Entry.of_row(r.row) for r in top if r.row["tier"] in LIFECYCLE_SECTION_TIERS]
        candidates["lifecycle"] = (
            by_relevance(lifecycle, relevance, "")
            + [(e, 0.0, "open pressure") for e in entries[AGENCY] if e.id not in relevance]
            + [(e, 0.0, "fresh short-term") for e in entries[SHORT_TERM] if e.id not in relevance]
        )
        timings["tiers"] = elapsed_ms(started)

        started = time.perf_counter()
        # Spreading activation from the best hits reaches what recall missed.
        seeds = {r.row["id"]: r.score / (top[0].score or 1.0) for r in top[:10]}
        graph: list[tuple[Entry, float, str]] = []
        if seeds:
            activated = spreading.run(
                conn,
                ns.id,
                ns.name,
                seeds,
                ActivateRequest(
                    query=request.query,
                    depth=2,
                    limit=40,
                    both_directions=True,
                    privacy_ceiling=ceiling,
                    tags=request.tags,
                ),
                vector=vector,
                model=ns.embedder.name,
            )
            for item in activated.working_memory:
                if len(item.path) > 1:  # its strongest activation came through edges
                    via = " → ".join(s.relation or "" for s in item.path[1:])
                    reason = f"activated from #{item.path[0].node_id} via {via}"
                    graph.append((Entry.of(item.node), item.score, reason))
                elif item.node.tier is None:  # a plain memory recall found: it belongs here
                    rank = relevance[item.node.id][1]
                    graph.append((Entry.of(item.node), item.score, f"recall rank {rank}"))
            graph.sort(key=lambda entry: -entry[1])
        candidates["graph"] = graph
        timings["activation"] = elapsed_ms(started)
        # Freshness of every candidate, not only the chosen: one statement in
        # this transaction instead of a transaction of its own after the fill.
        every = [node.id for section in candidates.values() for node, _, _ in section]
        missing, stale = cache.unfresh(conn, ns.id, ns.embedder.name, every, prepare=prepare)
    return Gathered(candidates, redacted, missing, stale)


@contextmanager
def packet_reading(
    ns: Scope,
    ceiling: int,
    plan: Callable[[], RecallPlan],
    tier_params: dict[str, Any],
    *,
    prepare: bool,
) -> Iterator[tuple[Connection, PacketRows]]:
    """The packet's transaction (:meth:`Scope.reading`'s, under ``ceiling``) and its first
    reads (recall/context.py :func:`read_packet_rows`): the transaction's opening and the
    namespace's name check travel with them, one wait for the server where there were two.

    The recall is planned (``plan``) before the transaction opens, from the namespace's
    kept sizes. Rows read under a kept id that has lost the namespace's name are dropped
    and read again, once, after a fresh lookup (as every read does: Scope.still_named).
    """
    for _ in range(2):
        first = partial(_first_reads, plan(), tier_params, prepare)
        with ns.opened_reading(ceiling, first) as (tx, (read, name)):
            if ns.still_named(ns.id, name):
                yield tx.conn, read
                return
    ns.renamed()


def _first_reads(
    run: RecallPlan,
    tier_params: dict[str, Any],
    prepare: bool,
    namespace_id: int,
    tx: PipelinedTransaction,
) -> tuple[PacketRows, str | None]:
    """The packet's first pipeline (:func:`packet_reading`) in namespace ``namespace_id``."""
    return read_packet_rows(
        tx,
        run,
        {**tier_params, "ns": namespace_id},
        prepare=prepare,
        check=name_check(namespace_id),
    )


def served_procedures(
    conn: Connection,
    ns: Scope,
    found: list[Entry],
    relevance: dict[int, tuple[float, int]],
    role: str | None,
) -> list[tuple[Entry, float, str]]:
    """The procedures section's candidates: for each procedure recall found, the version
    with the best record (``memstore/graph/outcomes.sql``: Laplace-smoothed success rate,
    ties to the newest), in recall's order; none that ``role`` may not see."""
    served = outcomes.served(conn, ns.id, [entry.id for entry in found], role)
    older = {s.version for s in served.values() if s.version != s.hit}
    nodes = fetch_nodes(conn, ns.id, ns.name, older)
    chosen: list[tuple[Entry, float, str]] = []
    for entry, score, why in by_relevance(found, relevance, ""):
        pick = served.get(entry.id)
        if pick is None:
            continue  # scoped to other roles
        if pick.version != entry.id and pick.version in nodes:
            record = f"{pick.successes}/{pick.applied} succeeded"
            why = f"{why}; version #{pick.version} has the better record ({record})"
            entry = Entry.of(nodes[pick.version])
        chosen.append((entry, score, why))
    return chosen
