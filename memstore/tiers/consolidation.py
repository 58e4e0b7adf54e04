"""Consolidation events: what each "sleep" folded away, and a running total."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field

from memstore.errors import InvalidInputError
from memstore.graph.entries import current_entries, now, total_of
from memstore.inputs import validated
from memstore.models import MemoryInput, Node
from memstore.tiers.common import CONSOLIDATION

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
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return total_of(tx.conn, self.ns.id, CONSOLIDATION, EVENT, "messages_consolidated")
