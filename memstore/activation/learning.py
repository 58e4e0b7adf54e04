"""Learning from an activation, and forgetting what was learned (``learning.sql``)."""

from __future__ import annotations

from datetime import timedelta
from importlib.resources import files
from typing import Any

from sqlalchemy.engine import Connection

from memstore.db.queries import named_queries

QUERIES = named_queries(files("memstore.activation").joinpath("learning.sql").read_text())
# Below this a learned weight is noise: it snaps to 0 when decayed.
HEBBIAN_FLOOR = 0.001


def _execute(conn: Connection, name: str, params: dict[str, Any]) -> int:
    raw = conn.connection.driver_connection
    assert raw is not None
    # Connection.execute: its cursor stays with the pipeline when one is open
    # (then the count is known only once it has synced).
    return int(raw.execute(QUERIES[name], params).rowcount)


def learn(
    conn: Connection,
    namespace_id: int,
    node_ids: list[int],
    strengths: list[float],
    edge_ids: list[int],
    *,
    rate: float,
    ring: int,
    session_id: str | None = None,
) -> None:
    """Record the accesses of working memory and the co-activation of ``edge_ids``."""
    if not node_ids:
        return
    ns = {"ns": namespace_id}
    _execute(conn, "accesses", {**ns, "ids": node_ids, "ring": ring})
    _execute(conn, "log", {**ns, "ids": node_ids, "strengths": strengths, "session": session_id})
    if edge_ids:
        _execute(conn, "hebbian", {**ns, "edges": edge_ids, "rate": rate})


def decay_hebbian(
    conn: Connection, namespace_id: int, factor: float, unused_for: timedelta | None
) -> int:
    """Multiply learned weights by ``factor``; returns how many edges decayed."""
    return _execute(
        conn,
        "decay",
        {"ns": namespace_id, "factor": factor, "floor": HEBBIAN_FLOOR, "unused_for": unused_for},
    )
