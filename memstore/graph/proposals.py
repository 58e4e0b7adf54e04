"""Proposals of the review queue and the operations log: their statements.

``memstore.proposals`` rows are read (hidden under a ceiling below what they are
about), locked, inserted and decided here; ``memstore.operations`` rows are
recorded through ``memstore.record_operations`` (sql/09_transaction_time.sql), a
SECURITY DEFINER function that writes them into the namespace the transaction
declared, stamped with the transaction's time (docs/security.md, "Time"): the
service role has no INSERT on the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, RowMapping

from memstore.db.schema import proposals

# A proposal carries no privacy level of its own, but it is as secret as what
# it is about: it is hidden under a ceiling below the privacy of a memory its
# operation names (a node id, or an end of an edge id, as memstore.named_ids
# finds them: the ids erasure looks for too), or below a privacy level its
# operation carries (a memory it would write). The owner bypasses row-level
# security, so the nodes are filtered by the ceiling here as well (the
# ceiling's expression is memstore.graph.rows.CEILING_SQL's).
VISIBLE_UNDER_CEILING = sa.text(
    """NOT (
    EXISTS (SELECT FROM unnest(memstore.named_ids(memstore.proposals.operation, false)
                               || ARRAY(SELECT unnest(ARRAY[e.src, e.dst])
                                        FROM memstore.edges e
                                        WHERE e.namespace_id = memstore.proposals.namespace_id
                                          AND e.id = ANY (memstore.named_ids(
                                              memstore.proposals.operation, true)))) AS x(id)
            WHERE NOT EXISTS (
                SELECT FROM memstore.nodes n
                WHERE n.namespace_id = memstore.proposals.namespace_id AND n.id = x.id
                  AND n.privacy
                      <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint))
    OR EXISTS (SELECT FROM jsonb_path_query(memstore.proposals.operation,
                                            'strict $.** ? (@.type() == "object")') AS o(obj)
               WHERE jsonb_typeof(o.obj -> 'privacy') = 'number'
                 AND (o.obj ->> 'privacy')::numeric
                     > nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint)
)"""
)


def proposal_rows(
    conn: Connection,
    namespace_id: int,
    *,
    ids: Iterable[int] | None = None,
    pending: int | None = None,
    lock: bool = False,
) -> list[RowMapping]:
    """The namespace's proposals visible under the transaction's ceiling: those of ``ids``,
    or the oldest ``pending`` pending ones; ``lock`` holds them until the transaction
    ends (a decision is taken once)."""
    query = (
        sa.select(proposals)
        .where(proposals.c.namespace_id == namespace_id)
        .where(VISIBLE_UNDER_CEILING)
        .order_by(proposals.c.proposed_at, proposals.c.id)
    )
    if ids is not None:
        query = query.where(proposals.c.id.in_(sorted(set(ids))))
    if pending is not None:
        query = query.where(proposals.c.status == "pending").limit(pending)
    if lock:
        query = query.with_for_update()
    return list(conn.execute(query).mappings())


def pending_proposal(conn: Connection, namespace_id: int, operation: dict[str, Any]) -> int | None:
    """The oldest pending proposal of exactly this operation, if one waits."""
    found = conn.execute(
        sa.select(proposals.c.id)
        .where(
            proposals.c.namespace_id == namespace_id,
            proposals.c.status == "pending",
            proposals.c.operation == sa.cast(operation, JSONB),
        )
        .order_by(proposals.c.id)
        .limit(1)
    ).scalar_one_or_none()
    return None if found is None else int(found)


def insert_proposal(
    conn: Connection,
    namespace_id: int,
    *,
    operation: dict[str, Any],
    rationale: str,
    evidence: list[str],
    proposed_by: str,
) -> int:
    """A new pending proposal; returns its id."""
    found = conn.execute(
        sa.insert(proposals)
        .values(
            namespace_id=namespace_id,
            operation=operation,
            rationale=rationale,
            evidence=evidence,
            proposed_by=proposed_by,
        )
        .returning(proposals.c.id)
    ).scalar_one()
    return int(found)


def decide_proposal(
    conn: Connection,
    namespace_id: int,
    proposal_id: int,
    *,
    status: str,
    decided_by: str,
    reason: str | None,
) -> None:
    """Record a decision on a proposal (the database allows pending → accepted or
    rejected, once)."""
    conn.execute(
        sa.update(proposals)
        .where(proposals.c.namespace_id == namespace_id, proposals.c.id == proposal_id)
        .values(status=status, decided_by=decided_by, decision_reason=reason)
    )


# The keys record_operations reads from each row; any other key is ignored.
ROW_KEYS = ("batch_id", "op", "phase", "actor", "outcome", "reason", "payload", "receipt")


def write_operations(
    conn: Connection, namespace_id: int, rows: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Record ``rows`` (dicts with :data:`ROW_KEYS`) in one call; their ids, in order."""
    if not rows:
        return []
    given = [{key: row.get(key) for key in ROW_KEYS} for row in rows]
    found = conn.execute(
        sa.select(
            sa.func.memstore.record_operations(
                namespace_id, sa.cast(sa.literal(given, JSONB), JSONB)
            )
        )
    ).scalars()
    return [int(i) for i in found]
