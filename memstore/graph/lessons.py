"""The lessons tier's reads (memstore/tiers/lessons.py): lessons with their learned state,
and the candidates a new rule is compared with.

A lesson's *effective* confidence is its current confidence in
``memstore.node_state`` when one was recorded, else the confidence it was added with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import REAL
from sqlalchemy.engine import Connection, RowMapping

from memstore.db.schema import embeddings, node_state, nodes
from memstore.graph.entries import is_current
from memstore.graph.rows import node_columns, within_ceiling


def _effective_confidence() -> sa.ColumnElement[float]:
    """The current confidence when one was recorded, else the node's initial confidence."""
    return sa.func.coalesce(node_state.c.current_confidence, nodes.c.confidence)


def _current_lessons(
    namespace_id: int, tier: str, node_type: str
) -> tuple[sa.ColumnElement[bool], ...]:
    """The conditions of a current lesson up to the transaction's privacy ceiling."""
    return (
        nodes.c.namespace_id == namespace_id,
        nodes.c.tier == tier,
        nodes.c.node_type == node_type,
        is_current(namespace_id),
        within_ceiling(nodes),
    )


def lesson_rows(
    conn: Connection,
    namespace_id: int,
    tier: str,
    node_type: str,
    *,
    lesson_id: int | None = None,
    unused: bool = False,
    min_confidence: float | None = None,
) -> list[RowMapping]:
    """Current lessons up to the transaction's ceiling, strongest first (highest effective
    confidence, then most applications, then newest): a node's columns, ``effective``
    (its effective confidence) and ``applied``.

    Only ``lesson_id`` when given; only never-applied lessons when ``unused``; only
    those whose effective confidence reaches ``min_confidence``.
    """
    applied = sa.func.coalesce(node_state.c.times_applied, 0)
    query = (
        sa.select(
            *node_columns(nodes, namespace_id),
            _effective_confidence().label("effective"),
            applied.label("applied"),
        )
        .select_from(
            nodes.outerjoin(
                node_state,
                sa.and_(
                    node_state.c.namespace_id == namespace_id,
                    node_state.c.node_id == nodes.c.id,
                ),
            )
        )
        .where(*_current_lessons(namespace_id, tier, node_type))
        .order_by(
            _effective_confidence().desc(),
            applied.desc(),
            nodes.c.recorded_at.desc(),
            nodes.c.id.desc(),
        )
    )
    if lesson_id is not None:
        query = query.where(nodes.c.id == lesson_id)
    if unused:
        query = query.where(applied == 0)
    if min_confidence is not None:
        # Confidences are REAL: compare in REAL, or a 0.7 lesson would miss threshold 0.7.
        query = query.where(_effective_confidence() >= sa.cast(min_confidence, REAL))
    return list(conn.execute(query).mappings())


def similar_rows(
    conn: Connection,
    namespace_id: int,
    tier: str,
    node_type: str,
    *,
    model: str,
    vector: np.ndarray[Any, Any],
    candidates: Sequence[int] | None,
) -> list[RowMapping]:
    """Current lessons up to the transaction's ceiling (only ``candidates`` when given), each
    with ``similarity``: the cosine similarity of its ``model`` vector to ``vector`` (None
    when either is missing or ``vector`` is all zeros)."""
    similarity: sa.ColumnElement[Any] = sa.null()
    if vector.any():  # a rule of only punctuation has no direction to compare
        similarity = 1 - embeddings.c.embedding.cosine_distance(vector)
    query = (
        sa.select(*node_columns(nodes, namespace_id), similarity.label("similarity"))
        .select_from(
            nodes.outerjoin(
                embeddings,
                sa.and_(
                    embeddings.c.namespace_id == namespace_id,
                    embeddings.c.node_id == nodes.c.id,
                    embeddings.c.model == model,
                ),
            )
        )
        .where(*_current_lessons(namespace_id, tier, node_type))
    )
    if candidates is not None:
        query = query.where(nodes.c.id.in_(candidates))
    return list(conn.execute(query).mappings())
