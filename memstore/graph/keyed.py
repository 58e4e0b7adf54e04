"""Keyed entries: the current memory of a tier by its key (label), and filters on ``data``.

A key-value shell over the graph (a framework's store, see docs/integrations.md)
keeps one current memory per key: the key is the node's ``label``, the value
its ``data``. These statements find the current entries by key, list them with
conditions on fields of ``data``, and name the namespaces that hold any.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.engine import Connection, Engine

from memstore.db.schema import nodes
from memstore.db.transaction import in_one_round_trip
from memstore.graph.rows import (
    is_redacted,
    is_superseded,
    is_tombstoned,
    node_columns,
    to_node,
    within_ceiling,
)
from memstore.models import Node

Comparison = Literal["eq", "ne", "gt", "gte", "lt", "lte"]
# How many keys one lookup may name, and how deep a data path may reach.
MAX_KEYS = 1000
MAX_PATH = 32
# The namespace id a scoped transaction names to read across namespaces: none (ids start at 1).
NO_NAMESPACE = 0


class DataCondition(BaseModel):
    """One condition on a field of a memory's ``data``.

    ``path`` names the field (``("author",)``, or ``("meta", "year")`` for a
    nested one). ``eq`` and ``ne`` compare JSON values exactly (``ne`` also
    matches a memory without the field); ``gt``, ``gte``, ``lt`` and ``lte``
    compare numbers as numbers and text as text (by code point), and match
    nothing where the field holds another type.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Annotated[tuple[str, ...], Field(min_length=1, max_length=MAX_PATH)]
    op: Comparison = "eq"
    value: Any


def is_current(namespace_id: int) -> sa.ColumnElement[bool]:
    """Not superseded, not tombstoned, not redacted (for the ``nodes`` table)."""
    return sa.and_(
        ~is_superseded(nodes, namespace_id),
        ~is_tombstoned(nodes, namespace_id),
        ~is_redacted(nodes, namespace_id),
    )


def _field(path: tuple[str, ...]) -> sa.ColumnElement[Any]:
    return nodes.c.data.op("#>", return_type=JSONB)(sa.cast(list(path), ARRAY(sa.Text)))


def _field_text(path: tuple[str, ...]) -> sa.ColumnElement[str]:
    return nodes.c.data.op("#>>", return_type=sa.Text)(sa.cast(list(path), ARRAY(sa.Text)))


def condition_clause(condition: DataCondition) -> sa.ColumnElement[bool]:
    """The SQL of one :class:`DataCondition` (bound parameters only)."""
    field = _field(condition.path)
    value = condition.value
    if condition.op in ("eq", "ne"):
        same = field == sa.cast(sa.literal(value, JSONB), JSONB)
        return same if condition.op == "eq" else sa.or_(field.is_(None), ~same)
    compare = {"gt": "__gt__", "gte": "__ge__", "lt": "__lt__", "lte": "__le__"}[condition.op]
    kind = sa.func.jsonb_typeof(field)
    operand: sa.ColumnElement[Any]
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        # Ordered as JSON within one type (false < true); other types never match.
        typed = sa.cast(sa.literal(value, JSONB), JSONB)
        operand = sa.case((kind == sa.func.jsonb_typeof(typed), field))
        return getattr(operand, compare)(typed)  # type: ignore[no-any-return]
    if isinstance(value, int | float):
        operand = sa.case((kind == "number", sa.cast(_field_text(condition.path), sa.Numeric)))
        return getattr(operand, compare)(  # type: ignore[no-any-return]
            sa.cast(sa.literal(str(value)), sa.Numeric)
        )
    operand = sa.case((kind == "string", _field_text(condition.path).collate("C")))
    return getattr(operand, compare)(sa.literal(str(value)))  # type: ignore[no-any-return]


def lock_labels(conn: Connection, namespace_id: int, tier: str, labels: Sequence[str]) -> None:
    """Serialise the writers of these keys of ``tier`` until the transaction ends.

    One statement takes every key's advisory lock in the order of its hash, so
    two writers of overlapping keys wait for each other and never deadlock.
    """
    keys = ["\x1f".join(("memstore.tier", tier, label)) for label in labels]
    conn.execute(
        sa.text(
            "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT"
            " hashtextextended(k, :ns) AS h FROM unnest(CAST(:keys AS text[])) AS k"
            " ORDER BY h) AS ordered"
        ),
        {"keys": keys, "ns": namespace_id},
    )


def current_by_labels(
    conn: Connection, namespace_id: int, namespace: str, tier: str, labels: Sequence[str]
) -> dict[str, Node]:
    """The current entry of each label of ``tier`` that has one (up to the ceiling)."""
    if not labels:
        return {}
    query = sa.select(*node_columns(nodes, namespace_id)).where(
        nodes.c.namespace_id == namespace_id,
        nodes.c.tier == tier,
        nodes.c.label == sa.func.any(sa.cast(list(labels), ARRAY(sa.Text))),
        is_current(namespace_id),
        within_ceiling(nodes),
    )
    found: dict[str, Node] = {}
    for row in conn.execute(query).mappings():
        node = to_node(row, namespace)
        assert node.label is not None
        # One current entry per key is the writers' rule; should two exist, the newest wins.
        if node.label not in found or found[node.label].id < node.id:
            found[node.label] = node
    return found


def list_current(
    conn: Connection,
    namespace_id: int,
    namespace: str,
    tier: str,
    conditions: Sequence[DataCondition],
    *,
    limit: int,
    offset: int,
    ids: Sequence[int] | None = None,
) -> list[Node]:
    """Current entries of ``tier`` meeting every condition (and among ``ids`` when given),
    the latest written first."""
    query = (
        sa.select(*node_columns(nodes, namespace_id))
        .where(
            nodes.c.namespace_id == namespace_id,
            nodes.c.tier == tier,
            is_current(namespace_id),
            within_ceiling(nodes),
            *(condition_clause(condition) for condition in conditions),
        )
        .order_by(nodes.c.id.desc())
        .limit(limit)
        .offset(offset)
    )
    if ids is not None:
        query = query.where(nodes.c.id == sa.func.any(sa.cast(list(ids), ARRAY(sa.BigInteger))))
    return [to_node(row, namespace) for row in conn.execute(query).mappings()]


# The namespaces holding a current entry of a tier: one statement, sent with its
# transaction in one round trip (a search under a prefix runs it before each recall).
NAMESPACES_HOLDING = """
SELECT ns.name
FROM memstore.namespaces ns
WHERE (%(prefix)s::text IS NULL
       OR ns.name = %(prefix)s::text
       OR starts_with(ns.name, %(prefix)s::text || '.'))
  AND EXISTS (
      SELECT 1 FROM memstore.nodes n
      WHERE n.namespace_id = ns.id AND n.tier = %(tier)s::text
        AND NOT EXISTS (SELECT 1 FROM memstore.supersessions s
                        WHERE s.namespace_id = n.namespace_id AND s.old_id = n.id)
        AND NOT EXISTS (SELECT 1 FROM memstore.tombstones t
                        WHERE t.namespace_id = n.namespace_id AND t.node_id = n.id)
        AND NOT EXISTS (SELECT 1 FROM memstore.redactions r
                        WHERE r.namespace_id = n.namespace_id AND r.node_id = n.id))
ORDER BY ns.name
"""


def namespaces_holding(engine: Engine, tier: str, *, prefix: str | None = None) -> list[str]:
    """Names of the namespaces with a current entry of ``tier`` (by name), optionally only
    ``prefix`` itself and the names that continue it with ``"."``.

    Reads across namespaces: an operator's call. A role that row-level security
    confines (``memstore_app``) sees none (docs/security.md).
    """
    rows = in_one_round_trip(
        engine, NO_NAMESPACE, NAMESPACES_HOLDING, {"prefix": prefix, "tier": tier}
    )
    return [str(row["name"]) for row in rows]


def versions_by_label(
    conn: Connection, namespace_id: int, namespace: str, tier: str, label: str
) -> list[Node]:
    """Every node of ``tier`` with ``label`` (up to the ceiling), oldest first, with status."""
    query = (
        sa.select(*node_columns(nodes, namespace_id))
        .where(
            nodes.c.namespace_id == namespace_id,
            nodes.c.tier == tier,
            nodes.c.label == label,
            within_ceiling(nodes),
        )
        .order_by(nodes.c.id)
    )
    return [to_node(row, namespace) for row in conn.execute(query).mappings()]
