"""A tier's entries: its current nodes, their count, their learned state, per-key locks.

The statements the tiers (memstore/tiers/) and the lifecycle run on the nodes
of one tier: the tier is a profile over the one graph (nodes carrying ``tier``
and a node type), so these are graph reads with the tier's filters.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.queries import any_of
from memstore.db.schema import (
    node_state,
    nodes,
    operations,
    redactions,
    supersessions,
    tombstones,
)
from memstore.db.transaction import Statement
from memstore.graph.rows import node_columns, to_node, within_ceiling
from memstore.models import Node


class NamespaceRef(Protocol):
    """What names a namespace for a read: its id and its name (a scope, a transaction)."""

    @property
    def id(self) -> int: ...

    @property
    def name(self) -> str: ...


def is_current(namespace_id: int) -> sa.ColumnElement[bool]:
    """Not superseded, not tombstoned, not redacted (for the ``nodes`` table)."""
    return sa.and_(
        ~sa.exists().where(
            supersessions.c.namespace_id == namespace_id, supersessions.c.old_id == nodes.c.id
        ),
        ~sa.exists().where(
            tombstones.c.namespace_id == namespace_id, tombstones.c.node_id == nodes.c.id
        ),
        ~sa.exists().where(
            redactions.c.namespace_id == namespace_id, redactions.c.node_id == nodes.c.id
        ),
    )


def current_entries(
    conn: Connection,
    ns: NamespaceRef,
    tier: str,
    *,
    label: str | None = None,
    node_type: str | None = None,
    scope: str | None = None,
    observed_until: datetime | None = None,
    older_than: timedelta | None = None,
    limit: int | None = None,
) -> list[Node]:
    """A tier's current nodes up to the transaction's privacy ceiling, newest first (by
    observed time, then id).

    Only those with ``label``, ``node_type`` and ``scope`` when given, observed
    at or before ``observed_until``, recorded at least ``older_than`` before the
    transaction began.
    """
    query = _entries_query(ns.id, tier, label, node_type, scope, observed_until, older_than, limit)
    return [to_node(row, ns.name) for row in conn.execute(query).mappings()]


def entries_statement(
    conn: Connection,
    namespace_id: int,
    tier: str,
    *,
    node_type: str | None = None,
    scope: str | None = None,
    limit: int | None = None,
) -> Statement:
    """:func:`current_entries`' statement compiled for psycopg, to send in a pipeline with
    a transaction's opening (Scope.rows_in_one_round_trip); ``to_node`` reads its rows."""
    query = _entries_query(namespace_id, tier, None, node_type, scope, None, None, limit)
    compiled = query.compile(dialect=conn.dialect)
    return str(compiled).encode(), compiled.params


def _entries_query(
    namespace_id: int,
    tier: str,
    label: str | None,
    node_type: str | None,
    scope: str | None,
    observed_until: datetime | None,
    older_than: timedelta | None,
    limit: int | None,
) -> sa.Select[Any]:
    query = (
        sa.select(*node_columns(nodes, namespace_id))
        .where(
            nodes.c.namespace_id == namespace_id,
            nodes.c.tier == tier,
            is_current(namespace_id),
            within_ceiling(nodes),
        )
        .order_by(nodes.c.observed_at.desc().nulls_last(), nodes.c.id.desc())
    )
    if label is not None:
        query = query.where(nodes.c.label == label)
    if node_type is not None:
        query = query.where(nodes.c.node_type == node_type)
    if scope is not None:
        query = query.where(nodes.c.scope == scope)
    if observed_until is not None:
        query = query.where(nodes.c.observed_at <= observed_until)
    if older_than is not None:
        query = query.where(nodes.c.recorded_at <= sa.func.now() - older_than)
    if limit is not None:
        query = query.limit(limit)
    return query


def count_current(
    conn: Connection, ns: NamespaceRef, tier: str, *, node_type: str | None = None
) -> int:
    """How many current nodes a tier holds (of ``node_type`` when given), up to the
    transaction's privacy ceiling."""
    query = (
        sa.select(sa.func.count())
        .select_from(nodes)
        .where(
            nodes.c.namespace_id == ns.id,
            nodes.c.tier == tier,
            is_current(ns.id),
            within_ceiling(nodes),
        )
    )
    if node_type is not None:
        query = query.where(nodes.c.node_type == node_type)
    return int(conn.execute(query).scalar_one())


def lock_tier_key(conn: Connection, namespace_id: int, key: str) -> None:
    """Take the transaction-level advisory lock of one key of one namespace."""
    conn.execute(
        sa.text("SELECT pg_advisory_xact_lock(hashtextextended(:key, :ns))"),
        {"key": key, "ns": namespace_id},
    )


def bump_state(
    conn: Connection,
    namespace_id: int,
    node_id: int,
    *,
    applied: int = 0,
    successes: int = 0,
    confidence: float | None = None,
) -> dict[str, Any]:
    """Add to a node's learned counters (and set its current confidence); returns the row."""
    statement = sa.dialects.postgresql.insert(node_state).values(
        namespace_id=namespace_id,
        node_id=node_id,
        times_applied=applied,
        success_count=successes,
        current_confidence=confidence,
    )
    upsert = statement.on_conflict_do_update(
        index_elements=["namespace_id", "node_id"],
        set_={
            "times_applied": node_state.c.times_applied + applied,
            "success_count": node_state.c.success_count + successes,
            "current_confidence": sa.func.coalesce(
                statement.excluded.current_confidence, node_state.c.current_confidence
            ),
            "updated_at": sa.func.now(),
        },
    ).returning(node_state)
    return dict(conn.execute(upsert).mappings().one())


def now(conn: Connection) -> datetime:
    """The transaction's time (what ``recorded_at`` of its rows will be)."""
    moment: datetime = conn.execute(sa.select(sa.func.now())).scalar_one()
    return moment


def total_of(conn: Connection, namespace_id: int, tier: str, node_type: str, key: str) -> int:
    """The sum of the integer ``data[key]`` of a tier's current nodes of ``node_type``, up
    to the transaction's privacy ceiling (0 when there are none)."""
    value = sa.cast(nodes.c.data[key].astext, sa.BigInteger)
    total = conn.execute(
        sa.select(sa.func.coalesce(sa.func.sum(value), 0)).where(
            nodes.c.namespace_id == namespace_id,
            nodes.c.tier == tier,
            nodes.c.node_type == node_type,
            is_current(namespace_id),
            within_ceiling(nodes),
        )
    ).scalar_one()
    return int(total)


def learned_counts(conn: Connection, namespace_id: int, node_id: int) -> tuple[int, int]:
    """A node's (times applied, successes) from its learned state; (0, 0) without one."""
    row = conn.execute(
        sa.select(node_state.c.times_applied, node_state.c.success_count).where(
            node_state.c.namespace_id == namespace_id, node_state.c.node_id == node_id
        )
    ).first()
    return (int(row.times_applied), int(row.success_count)) if row else (0, 0)


def newest_by_label(
    conn: Connection, namespace_id: int, tier: str, labels: Sequence[str]
) -> dict[str, int]:
    """The newest current node of a tier for each of ``labels`` that has one (up to the
    transaction's privacy ceiling), by label."""
    rows = conn.execute(
        sa.select(nodes.c.label, sa.func.max(nodes.c.id))
        .where(
            nodes.c.namespace_id == namespace_id,
            nodes.c.tier == tier,
            nodes.c.label.in_(labels),
            is_current(namespace_id),
            within_ceiling(nodes),
        )
        .group_by(nodes.c.label)
    )
    return {str(label): int(node_id) for label, node_id in rows}


def last_recorded(
    conn: Connection, namespace_id: int, op: str, node_ids: Sequence[int]
) -> datetime | None:
    """When the newest ``memstore.operations`` row of ``op`` naming one of ``node_ids``
    (``payload.node_id``) was recorded; None if there is none."""
    named = sa.cast(operations.c.payload["node_id"].astext, sa.BigInteger)
    moment: datetime | None = conn.execute(
        sa.select(operations.c.recorded_at)
        .where(
            operations.c.namespace_id == namespace_id,
            operations.c.op == op,
            operations.c.outcome == "accepted",
            sa.func.jsonb_typeof(operations.c.payload["node_id"]) == "number",
            any_of(named, node_ids),
        )
        .order_by(operations.c.recorded_at.desc())
        .limit(1)
    ).scalar_one_or_none()
    return moment
