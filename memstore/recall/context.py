"""The reads of one context packet (memstore/tiers/context.py), in one pipeline.

A packet's recall statement (planned by the caller), the tiers' own candidates
(pinned facts, confident lessons, recent turns, open agency pressures,
fresh short-term records) and the count of redacted
memories travel together: one wait for the server (context.sql).
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any, NamedTuple

from psycopg import sql

from memstore.db.compiled import cursor_for
from memstore.db.queries import named_queries
from memstore.db.transaction import PipelinedTransaction, Statement
from memstore.recall.run import send
from memstore.recall.statement import RecallPlan

QUERIES = named_queries(files("memstore.recall").joinpath("context.sql").read_text())


def _tier_candidates(session: bool, tagged: bool = False) -> sql.Composed:
    """context.sql's tier read, for one session's turns or the whole timeline's, of the
    memories carrying the packet's tags when ``tagged``."""
    return sql.SQL(QUERIES["tier_candidates"]).format(
        columns=sql.SQL(QUERIES["columns"].strip()),
        current=sql.SQL(QUERIES["current"].strip()),
        session=sql.SQL(QUERIES["session"].strip() if session else ""),
        tagged=sql.SQL(QUERIES["tagged"].strip() if tagged else ""),
    )


TIER_CANDIDATES = {session: _tier_candidates(session) for session in (False, True)}
# The same for a packet asked for with tags (a statement of its own, so the
# untagged read keeps its plan when prepared).
TAGGED_TIER_CANDIDATES = {session: _tier_candidates(session, True) for session in (False, True)}
REDACTED_COUNT = sql.SQL(QUERIES["redacted_count"])


class PacketRows(NamedTuple):
    """What the packet's pipeline read."""

    recalled: list[dict[str, Any]]
    """The recall statement's rows."""
    tiers: list[tuple[Any, ...]]
    """(section, then the fields of an entry) per tier candidate."""
    redacted: int
    """Redacted memories of the namespace."""


def read_packet_rows(
    tx: PipelinedTransaction,
    run: RecallPlan,
    tier_params: dict[str, Any],
    *,
    prepare: bool,
    check: Statement,
) -> tuple[PacketRows, str | None]:
    """Send the recall, the tier read, the redactions count and ``check`` (the namespace's
    name check) in one pipeline on ``tx`` (with BEGIN and the scope, when it has not
    started yet); ``tier_params`` are context.sql's (``session_id`` None: every session's
    turns; ``tags`` None or absent: every memory). The rows, and the name ``check`` read."""
    raw = tx.raw
    session = tier_params["session_id"] is not None
    tagged = bool(tier_params.get("tags"))
    with (
        cursor_for(raw, run.statement) as recalled,
        raw.cursor() as tiered,
        raw.cursor() as counted,
        raw.cursor() as checked,
    ):
        with tx.pipeline():
            send(raw, recalled, run, prepare=prepare)
            statements = TAGGED_TIER_CANDIDATES if tagged else TIER_CANDIDATES
            tiered.execute(statements[session], tier_params, prepare=prepare)
            counted.execute(REDACTED_COUNT, {"ns": tier_params["ns"]}, prepare=prepare)
            checked.execute(check[0], check[1])
        recall_rows = recalled.fetchall()
        tier_rows = tiered.fetchall()
        count = counted.fetchone()
        named = checked.fetchone()
    rows = PacketRows(recall_rows, tier_rows, int(count[0]) if count else 0)
    return rows, None if named is None else str(named[0])
