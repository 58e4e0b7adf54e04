"""Procedure outcomes, role scopes, and which version a packet serves (``outcomes.sql``)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.queries import named_queries

QUERIES = {
    name: sa.text(sql)
    for name, sql in named_queries(
        files("memstore.graph").joinpath("outcomes.sql").read_text()
    ).items()
}


class Served(NamedTuple):
    """The version a packet serves for a current procedure it found, with its record."""

    hit: int
    version: int
    successes: int
    applied: int


def record(
    conn: Connection,
    namespace_id: int,
    node_id: int,
    *,
    success: bool,
    episode_node: int | None,
    episode_run: str | None,
    note: str | None,
    actor: str,
) -> dict[str, Any]:
    """Append one outcome of a procedure version; returns the row."""
    row = conn.execute(
        QUERIES["record"],
        {
            "ns": namespace_id,
            "node": node_id,
            "success": success,
            "episode_node": episode_node,
            "episode_run": episode_run,
            "note": note,
            "actor": actor,
        },
    )
    return dict(row.mappings().one())


def outcomes(
    conn: Connection,
    namespace_id: int,
    version_ids: Sequence[int],
    *,
    success: bool | None,
    limit: int,
) -> list[dict[str, Any]]:
    """The outcomes of these versions, newest first."""
    rows = conn.execute(
        QUERIES["outcomes"],
        {"ns": namespace_id, "ids": list(version_ids), "success": success, "limit": limit},
    )
    return [dict(row) for row in rows.mappings()]


def add_roles(conn: Connection, namespace_id: int, node_id: int, roles: Sequence[str]) -> None:
    """Scope a procedure version to ``roles`` (none: it serves every role)."""
    if roles:
        conn.execute(
            QUERIES["add_roles"], {"ns": namespace_id, "node": node_id, "roles": list(roles)}
        )


def roles(conn: Connection, namespace_id: int, node_id: int) -> list[str]:
    """The roles a procedure version serves, sorted (empty: every role)."""
    rows = conn.execute(QUERIES["roles"], {"ns": namespace_id, "node": node_id})
    return [str(role) for role in rows.scalars()]


def served(
    conn: Connection, namespace_id: int, hits: Sequence[int], role: str | None
) -> dict[int, Served]:
    """For each current procedure in ``hits`` that ``role`` may see, the version to serve."""
    if not hits:
        return {}
    rows = conn.execute(QUERIES["served"], {"ns": namespace_id, "ids": list(hits), "role": role})
    return {row.hit: Served(row.hit, row.version, row.successes, row.applied) for row in rows}
