"""The timeline: conversation turns, each linked to the previous turn of its session."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from memstore.errors import InvalidInputError
from memstore.graph.content import checked_content
from memstore.graph.entries import count_current, current_entries, now
from memstore.inputs import checked_text, validated
from memstore.models import Hit, MemoryInput, Node
from memstore.tiers.common import TIMELINE, lock_key

if TYPE_CHECKING:
    from memstore.services.recall import Recaller
    from memstore.services.scope import Scope

TURN = "Turn"  # memstore/recall/injection.py's TURN_TYPE: the turn's prefix is not scanned
# How strongly a turn calls up the next one (and, followed backwards, the one before).
NEXT_WEIGHT = 0.8


class TurnInput(BaseModel):
    """What :meth:`Timeline.ingest_turn` accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Annotated[str, Field(min_length=1, max_length=100)]
    content: str
    session_id: Annotated[str, Field(min_length=1, max_length=200)]
    at: AwareDatetime | None = None


class Timeline:
    """``ns.timeline``: episodic turns (node type ``Turn``, tier ``timeline``).

    A turn is stored as ``"role: content"`` (the speaker in the indexed text
    helps recall), with the session in ``scope``, the role in ``actor`` and the
    time in ``observed_at``; a ``next`` edge joins it to the previous turn of
    its session. The same turn (role, content, session, time) ingested again is
    the same node.
    """

    def __init__(self, ns: Scope, recaller: Recaller):
        self.ns = ns
        self.recaller = recaller

    def ingest_turn(
        self,
        role: str,
        content: str,
        session_id: str,
        *,
        at: datetime | None = None,
        tags: Sequence[str] | None = None,
    ) -> Node:
        """Append a turn to its session (``at`` defaults to now); returns its node.

        ``tags`` are the turn's (docs/recall.md, "Tags"); a turn already stored keeps its own.
        """
        turn = validated(TurnInput, role=role, content=content, session_id=session_id, at=at)
        text = checked_content(turn.content, limit=self.ns.settings.max_content_bytes)
        with self.ns.transaction() as tx:
            lock_key(tx, TIMELINE, turn.session_id)
            moment = turn.at or now(tx.conn)
            previous = current_entries(
                tx.conn,
                self.ns,
                TIMELINE,
                scope=turn.session_id,
                node_type=TURN,
                observed_until=moment,
                limit=1,
            )
            node, created = tx.store_item(
                validated(
                    MemoryInput,
                    content=f"{turn.role}: {text}",
                    kind="episodic",
                    node_type=TURN,
                    tier=TIMELINE,
                    actor=turn.role[:200],
                    scope=turn.session_id,
                    observed_at=moment,
                    data={"role": turn.role, "session_id": turn.session_id},
                    dedupe_key=f"turn\x1f{turn.session_id}\x1f{moment.isoformat()}",
                    tags=tags,
                )
            )
            if created and previous:
                # A late turn links to its predecessor; the turn after it keeps its link.
                tx.link(previous[0].id, node.id, relation="next", weight=NEXT_WEIGHT)
            return node

    def recent(
        self, n: int = 20, *, session_id: str | None = None, privacy_ceiling: int | None = None
    ) -> list[Node]:
        """The ``n`` newest turns (of one session, or of all) up to ``privacy_ceiling``
        (default: the store's), newest first."""
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 10_000:
            raise InvalidInputError("n must be an integer from 1 to 10000", field="n")
        if session_id is not None:
            session_id = checked_text(session_id, "session_id")
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return current_entries(
                tx.conn, self.ns, TIMELINE, node_type=TURN, scope=session_id, limit=n
            )

    def search(
        self, query: str, limit: int = 10, *, privacy_ceiling: int | None = None
    ) -> list[Hit]:
        """Turns relevant to ``query`` (hybrid: full text and semantic), up to the ceiling."""
        return self.recaller.recall(
            query, k=limit, tiers=[TIMELINE], privacy_ceiling=privacy_ceiling
        )

    def entry_count(self, *, privacy_ceiling: int | None = None) -> int:
        """Current turns in the timeline, up to ``privacy_ceiling`` (default: the store's)."""
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return count_current(tx.conn, self.ns, TIMELINE)
