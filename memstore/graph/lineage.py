"""Supersession, tombstones, redaction and lineage walks."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.schema import supersessions, tombstones
from memstore.db.transaction import Statement
from memstore.models import TargetKind


def supersede(
    conn: Connection, namespace_id: int, old_id: int, new_id: int, *, reason: str, actor: str
) -> None:
    """Link ``old_id`` → ``new_id``; the trigger refuses a second link or a cycle."""
    conn.execute(
        sa.insert(supersessions).values(
            namespace_id=namespace_id, old_id=old_id, new_id=new_id, reason=reason, actor=actor
        )
    )


def tombstone(
    conn: Connection,
    namespace_id: int,
    target: TargetKind,
    target_id: int,
    *,
    reason: str,
    actor: str,
) -> int:
    """Write the tombstone of a node or an edge; returns its id."""
    column = "node_id" if target == "node" else "edge_id"
    statement = (
        sa.insert(tombstones)
        .values(
            namespace_id=namespace_id,
            target_kind=target,
            reason=reason,
            actor=actor,
            **{column: target_id},
        )
        .returning(tombstones.c.id)
    )
    return int(conn.execute(statement).scalar_one())


REDACT = sa.text(
    "SELECT r.node_id, r.redaction_id"
    " FROM memstore.redact_lineage(:ns, :node, :reason, :actor, :all_versions) AS r"
)


def redact(
    conn: Connection,
    namespace_id: int,
    node_id: int,
    *,
    reason: str,
    actor: str,
    all_versions: bool = True,
) -> dict[int, int]:
    """Call ``memstore.redact_lineage``: each version it erased → its redactions row id.

    ``all_versions``: every version of the node's lineage, else that one alone.
    """
    params = {
        "ns": namespace_id,
        "node": node_id,
        "reason": reason,
        "actor": actor,
        "all_versions": all_versions,
    }
    return {int(row[0]): int(row[1]) for row in conn.execute(REDACT, params)}


LINEAGE = sa.text(
    """
    WITH RECURSIVE back(id, step) AS (
        SELECT CAST(:node AS bigint), 0
        UNION
        SELECT s.old_id, b.step - 1
        FROM memstore.supersessions s JOIN back b ON s.new_id = b.id
        WHERE s.namespace_id = :ns
    ), forward(id, step) AS (
        SELECT CAST(:node AS bigint), 0
        UNION
        SELECT s.new_id, f.step + 1
        FROM memstore.supersessions s JOIN forward f ON s.old_id = f.id
        WHERE s.namespace_id = :ns
    )
    SELECT id, min(step) AS step FROM (SELECT * FROM back UNION ALL SELECT * FROM forward) AS c
    GROUP BY id ORDER BY step
    """
)


def lineage_ids(conn: Connection, namespace_id: int, node_id: int) -> list[int]:
    """Every version linked to ``node_id``, oldest first (merges list all their sources)."""
    rows = conn.execute(LINEAGE, {"node": node_id, "ns": namespace_id}).all()
    return [int(row[0]) for row in rows]


def lineage_statement(conn: Connection, namespace_id: int, node_id: int) -> Statement:
    """:func:`lineage_ids`' statement compiled for psycopg, to send in a pipeline beside
    others; its rows' ``id`` column holds the versions in order."""
    compiled = LINEAGE.compile(dialect=conn.dialect)
    return str(compiled).encode(), {"node": node_id, "ns": namespace_id}


def current_version(conn: Connection, namespace_id: int, node_id: int) -> int:
    """The newest version reached by following supersessions from ``node_id``."""
    forward = [i for i in lineage_ids(conn, namespace_id, node_id)]
    return forward[-1] if forward else node_id


CURRENT_VERSIONS = sa.text(
    """
    SELECT g.id, memstore.current_version(:ns, g.id, :as_of) AS current
    FROM unnest(CAST(:ids AS bigint[])) AS g(id)
    """
)


def current_versions(
    conn: Connection, namespace_id: int, node_ids: list[int], as_of: datetime | None = None
) -> dict[int, int]:
    """Each id's current version (as of ``as_of``: later supersessions do not count)."""
    rows = conn.execute(CURRENT_VERSIONS, {"ns": namespace_id, "ids": node_ids, "as_of": as_of})
    return {int(row[0]): int(row[1]) for row in rows}
