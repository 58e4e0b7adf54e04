"""Consolidation events: what each "sleep" folded away, and a running total."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field

from memstore.db.schema import nodes
from memstore.errors import InvalidInputError
from memstore.graph.rows import within_ceiling
from memstore.inputs import validated
from memstore.models import MemoryInput, Node
from memstore.tiers.common import CONSOLIDATION, current_entries, is_current, now

if TYPE_CHECKING:
    from memstore.services.scope import Scope

EVENT = "ConsolidationEvent"


class ConsolidationInput(BaseModel):
    """What :meth:`Consolidation.record` accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages_consolidated: Annotated[int, Field(ge=0, le=10_000_000)]
    summary: Annotated[str, Field(min_length=1)]
    context_length: Annotated[int, Field(ge=0, le=100_000_000)]


class Consolidation:
    """``ns.consolidation``: one ``ConsolidationEvent`` node per consolidation.

    The summary is the content (so recall finds it); the counts are in data.
    """

    def __init__(self, ns: Scope):
        self.ns = ns

    def record(self, messages_consolidated: int, summary: str, context_length: int) -> Node:
        """Record one consolidation; returns its node."""
        event = validated(
            ConsolidationInput,
            messages_consolidated=messages_consolidated,
            summary=summary,
            context_length=context_length,
        )
        with self.ns.transaction() as tx:
            moment = now(tx.conn)
            return tx.remember_item(
                validated(
                    MemoryInput,
                    content=event.summary,
                    kind="episodic",
                    node_type=EVENT,
                    tier=CONSOLIDATION,
                    observed_at=moment,
                    data={
                        "messages_consolidated": event.messages_consolidated,
                        "context_length": event.context_length,
                    },
                    # Two sleeps may write the same summary: each is an event.
                    dedupe_key=f"consolidation\x1f{moment.isoformat()}",
                )
            )

    def history(
        self, limit: int | None = None, *, privacy_ceiling: int | None = None
    ) -> list[Node]:
        """Consolidation events up to ``privacy_ceiling`` (default: the store's), newest first
        (all of them, or the newest ``limit``)."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000
        ):
            raise InvalidInputError("limit must be an integer from 1 to 10000", field="limit")
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return current_entries(tx.conn, self.ns, CONSOLIDATION, limit=limit)

    def total(self, *, privacy_ceiling: int | None = None) -> int:
        """Messages consolidated over all recorded events (up to ``privacy_ceiling``)."""
        messages = sa.cast(nodes.c.data["messages_consolidated"].astext, sa.BigInteger)
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            total = tx.conn.execute(
                sa.select(sa.func.coalesce(sa.func.sum(messages), 0)).where(
                    nodes.c.namespace_id == self.ns.id,
                    nodes.c.tier == CONSOLIDATION,
                    nodes.c.node_type == EVENT,
                    is_current(self.ns.id),
                    within_ceiling(nodes),
                )
            ).scalar_one()
        return int(total)
