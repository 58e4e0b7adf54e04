"""Bulk timeline ingest: where new turns join their sessions, and their ``next`` edges.

:meth:`memstore.tiers.timeline.Timeline.ingest_turns` writes the turn nodes
with :func:`memstore.graph.nodes.copy_new_nodes` and these statements
(``turns.sql``) for the rest: the stored turns a batch already holds, the
newest turn before each new one, and the edges between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from importlib.resources import files
from typing import Any, NamedTuple

from sqlalchemy.engine import Connection

from memstore.db.queries import named_queries
from memstore.graph.nodes import QUERIES as NODE_QUERIES

QUERIES = named_queries(files("memstore.graph").joinpath("turns.sql").read_text())
# (kind, node_type, content_hash): the idempotency key of a node.
Key = tuple[str, str, bytes]


class Latest(NamedTuple):
    """The newest turn of a session at some moment."""

    id: int
    observed_at: datetime
    seq: int | None  # its place in this call's reading order; None: stored before the call


def _raw(conn: Connection) -> Any:
    raw = conn.connection.driver_connection
    assert raw is not None
    return raw


def start_turn_order(conn: Connection) -> None:
    """Make ready the (session-temporary) table of this call's turns, in reading order."""
    _raw(conn).execute(QUERIES["create_turn_order"])


def record_turn_order(conn: Connection, node_ids: Sequence[int], seqs: Sequence[int]) -> None:
    """Record where in the reading order the call created these turns."""
    if node_ids:
        _raw(conn).execute(
            QUERIES["record_turn_order"], {"node_ids": list(node_ids), "seqs": list(seqs)}
        )


def stored_nodes(conn: Connection, namespace_id: int, keys: Sequence[Key]) -> dict[Key, int]:
    """The ids of the nodes already stored under these keys (up to the transaction's
    privacy ceiling: a key taken above it is not returned)."""
    if not keys:
        return {}
    rows = _raw(conn).execute(
        NODE_QUERIES["find_nodes"],
        {
            "ns": namespace_id,
            "kinds": [k[0] for k in keys],
            "node_types": [k[1] for k in keys],
            "hashes": [k[2] for k in keys],
        },
    )
    return {
        (kind, node_type, bytes(digest)): int(node_id) for kind, node_type, digest, node_id in rows
    }


def latest_turns(
    conn: Connection,
    namespace_id: int,
    *,
    tier: str,
    node_type: str,
    points: Sequence[tuple[str, datetime]],
) -> list[Latest | None]:
    """For each (session, moment): the newest current turn of the session observed at
    or before the moment (None if there is none), in one statement."""
    found: list[Latest | None] = [None] * len(points)
    if not points:
        return found
    rows = _raw(conn).execute(
        QUERIES["latest_turns"],
        {
            "ns": namespace_id,
            "tier": tier,
            "node_type": node_type,
            "sessions": [session for session, _ in points],
            "moments": [moment for _, moment in points],
        },
    )
    for ordinal, node_id, observed_at, seq in rows:
        found[int(ordinal) - 1] = Latest(int(node_id), observed_at, seq)
    return found


def insert_links(
    conn: Connection,
    namespace_id: int,
    pairs: Sequence[tuple[int, int]],
    *,
    relation: str,
    weight: float,
) -> None:
    """One edge ``src -[relation weight]-> dst`` per pair, in one statement."""
    if pairs:
        _raw(conn).execute(
            QUERIES["insert_links"],
            {
                "ns": namespace_id,
                "srcs": [src for src, _ in pairs],
                "dsts": [dst for _, dst in pairs],
                "relation": relation,
                "weight": weight,
            },
        )
