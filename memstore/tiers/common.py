"""What every tier shares: reading a tier's current entries, per-key locks, learned state.

A tier is a profile over the one memory graph: its nodes carry ``tier`` (and a
node type), so recall, activation, lineage and the append-only law apply to
them unchanged (docs/tiers.md).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.schema import node_state, nodes, redactions, supersessions, tombstones
from memstore.errors import InvalidInputError
from memstore.graph.rows import node_columns, to_node, within_ceiling
from memstore.models import MemoryInput, Node, NodeStatus

if TYPE_CHECKING:
    from memstore.services.scope import Scope
    from memstore.tx import NamespaceTransaction

TIMELINE = "timeline"
SCRATCHPAD = "scratchpad"
LESSONS = "lessons"
PROCEDURES = "procedures"
CONSOLIDATION = "consolidation"
TIERS = (TIMELINE, SCRATCHPAD, LESSONS, PROCEDURES, CONSOLIDATION)


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
    ns: Scope,
    tier: str,
    *,
    label: str | None = None,
    where: sa.ColumnElement[bool] | None = None,
    order_by: tuple[sa.ColumnElement[object], ...] = (),
    limit: int | None = None,
) -> list[Node]:
    """A tier's current nodes up to the transaction's privacy ceiling, newest first (by
    observed time, then id) after ``order_by``."""
    query = (
        sa.select(*node_columns(nodes, ns.id))
        .where(
            nodes.c.namespace_id == ns.id,
            nodes.c.tier == tier,
            is_current(ns.id),
            within_ceiling(nodes),
        )
        .order_by(*order_by, nodes.c.observed_at.desc().nulls_last(), nodes.c.id.desc())
    )
    if label is not None:
        query = query.where(nodes.c.label == label)
    if where is not None:
        query = query.where(where)
    if limit is not None:
        query = query.limit(limit)
    return [to_node(row, ns.name) for row in conn.execute(query).mappings()]


def count_current(conn: Connection, ns: Scope, tier: str) -> int:
    """How many current nodes a tier holds, up to the transaction's privacy ceiling."""
    return int(
        conn.execute(
            sa.select(sa.func.count())
            .select_from(nodes)
            .where(
                nodes.c.namespace_id == ns.id,
                nodes.c.tier == tier,
                is_current(ns.id),
                within_ceiling(nodes),
            )
        ).scalar_one()
    )


def lock_key(tx: NamespaceTransaction, *parts: str) -> None:
    """Serialise writers of one key of one namespace until the transaction ends.

    Two concurrent pins of a key (or refinements of a procedure) would each see
    the same current version and both revise it; the second would fail on the
    supersession rule. With the lock the second waits and revises the first's.
    """
    tx.conn.execute(
        sa.text("SELECT pg_advisory_xact_lock(hashtextextended(:key, :ns))"),
        {"key": "\x1f".join(("memstore.tier", *parts)), "ns": tx.id},
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


def remember_fresh(
    tx: NamespaceTransaction, item: MemoryInput, *, vector: np.ndarray[Any, Any] | None = None
) -> Node:
    """Store ``item`` as a current entry of its tier, or return the identical current entry.

    Ingest is idempotent, so identical content may find a node that was since
    forgotten, revised or written outside the tier. That node is history, not
    the entry asked for: the content is stored again under a dedupe key that
    names it (deterministic, so concurrent writers still agree on one node).
    """
    node = tx.remember_item(item, vector=vector)
    while node.status is not NodeStatus.CURRENT or node.tier != item.tier:
        item = item.model_copy(update={"dedupe_key": f"{item.tier}:after:{node.id}"})
        node = tx.remember_item(item, vector=vector)
    return node


def unit(value: object, field: str) -> float:
    """``value`` as a float in [0, 1], or an :class:`InvalidInputError` naming ``field``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0.0 <= value <= 1.0
    ):
        raise InvalidInputError(f"{field} must be a number from 0 to 1", field=field)
    return float(value)
