"""Listing a namespace's current memories page by page (keyset pagination by id).

A page is the memories with an id above the cursor, in id order, so a page
never repeats or skips a memory whatever is written meanwhile (an offset would
shift under concurrent writes). Only current memories: not superseded,
tombstoned or redacted, and within the transaction's privacy ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Connection

from memstore.db.schema import nodes
from memstore.graph.rows import (
    is_redacted,
    is_superseded,
    is_tombstoned,
    node_columns,
    to_node,
    within_ceiling,
)
from memstore.models import BIGINT_MAX, MAX_FILTER_ITEMS, Kind, Node, TagFilter

LIST_LIMIT_MAX = 1000


class ListQuery(BaseModel):
    """One page of :meth:`~memstore.namespace.Namespace.list_memories`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after: int = Field(default=0, ge=0, le=BIGINT_MAX)
    """The cursor: the last id of the previous page (0: the first page)."""
    limit: int = Field(default=50, ge=1, le=LIST_LIMIT_MAX)
    kinds: list[Kind] | None = Field(default=None, max_length=MAX_FILTER_ITEMS)
    tiers: list[str] | None = Field(default=None, max_length=MAX_FILTER_ITEMS)
    tags: TagFilter = None
    """Only memories carrying every one of these tags."""


class MemoryPage(BaseModel):
    """A page of current memories and the cursor of the next one (None: this was the last)."""

    model_config = ConfigDict(frozen=True)

    items: list[Node]
    next_cursor: int | None


def list_page(conn: Connection, namespace_id: int, namespace: str, query: ListQuery) -> MemoryPage:
    """The page ``query`` asks for, read in ``conn``'s namespace transaction."""
    statement = (
        sa.select(*node_columns(nodes, namespace_id))
        .where(nodes.c.namespace_id == namespace_id)
        .where(nodes.c.id > query.after)
        .where(within_ceiling(nodes))
        .where(~is_superseded(nodes, namespace_id))
        .where(~is_tombstoned(nodes, namespace_id))
        .where(~is_redacted(nodes, namespace_id))
        .order_by(nodes.c.id)
        .limit(query.limit + 1)  # one more: is there a next page?
    )
    if query.kinds:
        statement = statement.where(nodes.c.kind.in_(_unique(query.kinds)))
    if query.tiers:
        statement = statement.where(nodes.c.tier.in_(_unique(query.tiers)))
    if query.tags:
        statement = statement.where(nodes.c.tags.contains(query.tags))  # @>: ix_nodes_tags
    rows = list(conn.execute(statement).mappings())
    items = [to_node(row, namespace) for row in rows[: query.limit]]
    more = len(rows) > query.limit
    return MemoryPage(items=items, next_cursor=items[-1].id if more and items else None)


def _unique(values: Sequence[str]) -> list[str]:
    return sorted(set(values))


__all__ = ["LIST_LIMIT_MAX", "ListQuery", "MemoryPage", "list_page"]
