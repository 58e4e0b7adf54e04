"""Confirmations: later observations that confirmed a memory (sql/11_confirmations.sql).

A confirmation is a row of ``memstore.confirmations``: the node and the
transaction time. A node's ``last_confirmed_at`` is its newest row's time,
read by :func:`last_confirmed` inside the statement that reads the node.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.schema import confirmations


def last_confirmed(node: sa.FromClause, namespace_id: int) -> sa.ScalarSelect[Any]:
    """The time of ``node``'s newest confirmation, or NULL: one probe of
    ix_confirmations_node (its newest entry first)."""
    return (
        sa.select(confirmations.c.at)
        .where(confirmations.c.namespace_id == namespace_id)
        .where(confirmations.c.node_id == node.c.id)
        .order_by(confirmations.c.at.desc())
        .limit(1)
        .scalar_subquery()
    )


def record_confirmation(conn: Connection, namespace_id: int, node_id: int) -> datetime:
    """Write a confirmation of ``node_id`` and return its (transaction) time.

    The caller has locked the node and checked that it is current.
    """
    at = conn.execute(
        sa.insert(confirmations)
        .values(namespace_id=namespace_id, node_id=node_id)
        .returning(confirmations.c.at)
    ).scalar_one()
    assert isinstance(at, datetime)
    return at


__all__ = ["last_confirmed", "record_confirmation"]
