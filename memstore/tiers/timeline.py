"""The timeline: conversation turns, each linked to the previous turn of its session."""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from memstore.db.transaction import transaction
from memstore.embedding import cache
from memstore.errors import ContentTooLargeError, InvalidInputError
from memstore.graph.content import checked_content, content_hash
from memstore.graph.entries import count_current, current_entries, entries_statement, now
from memstore.graph.keyed import lock_labels
from memstore.graph.nodes import analyze_nodes, copy_new_nodes, may_copy_directly
from memstore.graph.rows import to_node
from memstore.graph.turns import (
    Key,
    Latest,
    insert_links,
    latest_turns,
    record_turn_order,
    start_turn_order,
    stored_nodes,
)
from memstore.inputs import checked_text, validated
from memstore.models import Hit, MemoryInput, Node
from memstore.services.ingest import ANALYZE_AFTER
from memstore.tiers.common import TIMELINE, lock_key
from memstore.tx import check_kind

if TYPE_CHECKING:
    from memstore.law.policy import Policy
    from memstore.services.recall import Recaller
    from memstore.services.scope import Scope
    from memstore.tx import NamespaceTransaction

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
    tags: list[str] | None = None
    """The turn's tags (docs/recall.md, "Tags"); a turn already stored keeps its own."""


class TurnsReport(BaseModel):
    """What :meth:`Timeline.ingest_turns` returns: counts, not the nodes (a transcript
    may be long; ``recent`` and ``search`` read its turns back)."""

    model_config = ConfigDict(frozen=True)

    turns: int = Field(description="Turns read.")
    created: int = Field(description="Turns stored as new nodes.")
    existing: int = Field(
        description="Turns that were already stored (or came twice in the input)."
    )
    linked: int = Field(description="next edges written.")
    sessions: int = Field(description="Distinct sessions among the turns read.")


def turn_item(turn: TurnInput, moment: datetime, *, limit: int) -> MemoryInput:
    """The memory a turn is stored as, observed at ``moment``: the one shaping shared by
    :meth:`Timeline.ingest_turn` and :meth:`Timeline.ingest_turns`.

    The content is ``"role: text"`` (the speaker in the indexed text helps
    recall); the dedupe key (session and time, with the content) makes the
    same turn ingested again the same node. ``limit``: the store's
    ``max_content_bytes``.
    """
    text = checked_content(turn.content, limit=limit)
    return validated(
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
        tags=turn.tags,
    )


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
        turn = validated(
            TurnInput,
            role=role,
            content=content,
            session_id=session_id,
            at=at,
            tags=None if tags is None else list(tags),
        )
        limit = self.ns.settings.max_content_bytes
        checked_content(turn.content, limit=limit)  # before the transaction
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
            node, created = tx.store_item(turn_item(turn, moment, limit=limit))
            if created and previous:
                # A late turn links to its predecessor; the turn after it keeps its link.
                tx.link(previous[0].id, node.id, relation="next", weight=NEXT_WEIGHT)
            return node

    def ingest_turns(
        self,
        turns: Iterable[TurnInput | Mapping[str, Any]],
        *,
        batch_size: int = 1000,
        progress: Callable[[int], None] | None = None,
    ) -> TurnsReport:
        """Ingest many turns, in reading order, as ``ingest_turn`` would one by one.

        ``turns``: :class:`TurnInput` objects or mappings of ``role``,
        ``content``, ``session_id`` and optionally ``at`` — any iterable, a
        generator too: it is read ``batch_size`` turns at a time, each batch
        embedded in one call and written by binary COPY; at most two batches
        are held (one is embedded while the one before is written). The nodes
        and ``next`` edges are those of one ``ingest_turn`` call per turn in
        the same order; turns without ``at`` get the call's start time plus
        one microsecond per such turn, so they keep their order. ``progress``
        is called with the size of each batch written. Returns counts
        (:class:`TurnsReport`).

        One transaction for the whole call: a bad turn anywhere (an
        :class:`~memstore.errors.InvalidInputError` naming ``turns[i]``), a
        failing embedder or a crash leaves the store as it was, and running
        the same transcript again adds nothing (give ``at`` for that: a turn
        without it is a new turn each time).
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(
                "batch_size must be an integer of at least 1", field="batch_size"
            )
        if isinstance(turns, str | bytes | Mapping) or not isinstance(turns, Iterable):
            raise InvalidInputError(
                "turns must be an iterable of TurnInputs or mappings", field="turns"
            )
        reading = iter(turns)
        first = [_as_turn(i, turn) for i, turn in enumerate(islice(reading, batch_size))]
        if not first:
            return TurnsReport(turns=0, created=0, existing=0, linked=0, sessions=0)
        embedder = self.ns.embedder
        # One worker embeds batch k+1 while this thread writes batch k: the database's
        # work hides behind the embedder's (both release the GIL while they wait).
        with self.ns.transaction() as tx, ThreadPoolExecutor(1) as worker:
            conn = tx.conn
            build_index_after = not cache.index_exists(conn, embedder.name, embedder.dims)
            start_turn_order(conn)
            run = _Run(policy=tx.policy(), direct=may_copy_directly(conn), clock=now(conn))
            parsed, pending = first, None
            while parsed:
                batch = self._prepare(tx, run, parsed)
                vectors = worker.submit(self._vectors, batch)
                if pending is not None:
                    self._write(tx, run, *pending, progress)
                pending = (batch, vectors)
                more = islice(reading, batch_size)
                parsed = [_as_turn(run.prepared + i, turn) for i, turn in enumerate(more)]
            if pending is not None:
                self._write(tx, run, *pending, progress)
        if run.created >= ANALYZE_AFTER:
            with transaction(self.ns.engine) as conn:
                analyze_nodes(conn)
        if build_index_after and run.created:
            cache.ensure_index(self.ns.engine, embedder.name, embedder.dims)
        return TurnsReport(
            turns=run.written,
            created=run.created,
            existing=run.written - run.created,
            linked=run.linked,
            sessions=len(run.sessions),
        )

    def _prepare(self, tx: NamespaceTransaction, run: _Run, turns: list[TurnInput]) -> _Batch:
        """Shape and check one batch, lock its sessions, find the turns already stored."""
        conn, limit = tx.conn, self.ns.settings.max_content_bytes
        items: list[MemoryInput] = []
        for i, turn in enumerate(turns):
            moment = turn.at
            if moment is None:
                moment = run.clock + timedelta(microseconds=run.undated)
                run.undated += 1
            try:
                items.append(turn_item(turn, moment, limit=limit))
            except InvalidInputError as exc:
                raise _at_position(run.prepared + i, exc) from None
        texts = [checked_content(item.content, limit=limit) for item in items]
        check_kind(items[0], run.policy, field="turns")  # every turn is of one kind
        sessions = {turn.session_id for turn in turns}
        # The lock ingest_turn takes: no other writer appends to these sessions until
        # this call commits.
        lock_labels(conn, tx.id, TIMELINE, sorted(sessions - run.sessions))
        run.sessions |= sessions
        keys: list[Key] = [
            (item.kind, item.node_type, content_hash(text, item.dedupe_key))
            for item, text in zip(items, texts, strict=True)
        ]
        # Stored before this call or by an earlier batch already written; a turn of
        # the batch still being written counts as new here and is found by the COPY.
        stored = stored_nodes(conn, tx.id, list(dict.fromkeys(keys)))
        new: dict[Key, int] = {}  # the first turn of each key not stored yet
        for i, key in enumerate(keys):
            if key not in stored:
                new.setdefault(key, i)
        batch = _Batch(run.prepared, items, texts, keys, stored, new)
        run.prepared += len(turns)
        return batch

    def _vectors(self, batch: _Batch) -> np.ndarray[Any, Any] | None:
        """The embedder's vectors of the batch's new turns (in the worker thread)."""
        fresh = list(batch.new.values())
        if not fresh:
            return None
        return self.ns.vectors([batch.items[i] for i in fresh], [batch.texts[i] for i in fresh])

    def _write(
        self,
        tx: NamespaceTransaction,
        run: _Run,
        batch: _Batch,
        vectors: Future[np.ndarray[Any, Any] | None],
        progress: Callable[[int], None] | None,
    ) -> None:
        """Store one prepared batch and link each new turn to its predecessor."""
        conn, items, keys, new = tx.conn, batch.items, batch.keys, batch.new
        fresh = list(new.values())
        latest = self._latest_before(tx, [(items[i].scope or "", _moment(items[i])) for i in fresh])
        before = dict(zip(fresh, latest, strict=True))
        ids = dict(batch.stored)
        created: set[int] = set()
        found = vectors.result()
        if fresh:
            fresh_ids, created = copy_new_nodes(
                conn,
                tx.id,
                [items[i] for i in fresh],
                [batch.texts[i] for i in fresh],
                self.ns.embedder.name,
                found,
                direct=run.direct,
            )
            ids.update((keys[i], node_id) for i, node_id in zip(fresh, fresh_ids, strict=True))
        # Walk the batch in reading order: each new turn links to the newest turn of its
        # session at or before its time — stored before, or new and read earlier.
        links: list[tuple[int, int]] = []
        order: list[tuple[int, int]] = []
        read_here: dict[str, list[tuple[datetime, int, int]]] = {}
        for i, key in enumerate(keys):
            node_id = ids[key]
            if node_id not in created or new.get(key) != i:
                continue  # stored already, or read twice: ingest_turn would not link it
            seq, moment, session = batch.start + i, _moment(items[i]), items[i].scope or ""
            previous = _newer(before[i], read_here.get(session, []), moment)
            if previous is not None:
                links.append((previous, node_id))
            insort(read_here.setdefault(session, []), (moment, seq, node_id))
            order.append((node_id, seq))
        insert_links(conn, tx.id, links, relation="next", weight=NEXT_WEIGHT)
        record_turn_order(conn, [n for n, _ in order], [s for _, s in order])
        run.written += len(items)
        run.created += len(order)
        run.linked += len(links)
        if progress is not None:
            progress(len(items))

    def _latest_before(
        self, tx: NamespaceTransaction, points: list[tuple[str, datetime]]
    ) -> list[Latest | None]:
        """The newest current turn of each (session, moment), with the turns stored before
        this call lineage-locked (as ``link`` locks both ends) and read again after locking:
        a forget that committed meanwhile is seen, a later one waits for this call."""
        latest = latest_turns(tx.conn, tx.id, tier=TIMELINE, node_type=TURN, points=points)
        while True:
            stored = {found.id for found in latest if found is not None and found.seq is None}
            if tx.locks.whole or stored <= tx.locks.held:
                return latest
            tx.locks.lock(stored)
            latest = latest_turns(tx.conn, tx.id, tier=TIMELINE, node_type=TURN, points=points)

    def recent(
        self, n: int = 20, *, session_id: str | None = None, privacy_ceiling: int | None = None
    ) -> list[Node]:
        """The ``n`` newest turns (of one session, or of all) up to ``privacy_ceiling``
        (default: the store's), newest first."""
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 10_000:
            raise InvalidInputError("n must be an integer from 1 to 10000", field="n")
        if session_id is not None:
            session_id = checked_text(session_id, "session_id")
        (rows,) = self.ns.rows_in_one_round_trip(
            privacy_ceiling,
            lambda namespace_id, conn: [
                entries_statement(
                    conn, namespace_id, TIMELINE, node_type=TURN, scope=session_id, limit=n
                )
            ],
        )
        return [to_node(row, self.ns.name) for row in rows]

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


@dataclass
class _Run:
    """What one ``ingest_turns`` call carries from batch to batch."""

    policy: Policy
    direct: bool  # may COPY straight into the tables (memstore.graph.nodes)
    clock: datetime  # the transaction's start: the time of turns without one
    undated: int = 0  # turns without a time so far
    prepared: int = 0  # turns read and checked
    written: int = 0
    created: int = 0
    linked: int = 0
    sessions: set[str] = field(default_factory=set)  # locked, and counted


@dataclass
class _Batch:
    """One batch of turns, checked and shaped, waiting for its vectors."""

    start: int  # the position of its first turn in the input
    items: list[MemoryInput]
    texts: list[str]  # the checked contents
    keys: list[Key]
    stored: dict[Key, int]  # stored before the batch was prepared
    new: dict[Key, int]  # the first turn of each other key


def _as_turn(position: int, turn: object) -> TurnInput:
    if isinstance(turn, TurnInput):
        return turn
    if not isinstance(turn, Mapping):
        raise InvalidInputError(
            f"turns[{position}] must be a TurnInput or a mapping", field=f"turns[{position}]"
        )
    if not all(isinstance(key, str) for key in turn):
        raise InvalidInputError(
            f"turns[{position}] has a key that is not text", field=f"turns[{position}]"
        )
    try:
        return validated(TurnInput, **turn)
    except InvalidInputError as exc:
        raise _at_position(position, exc) from None


def _at_position(position: int, exc: InvalidInputError) -> InvalidInputError:
    """``exc`` as the error of ``turns[position]``."""
    message = f"turns[{position}]: {exc}"
    if isinstance(exc, ContentTooLargeError):
        return ContentTooLargeError(message, size=exc.size, limit=exc.limit)
    return InvalidInputError(message, field=f"turns[{position}].{exc.field or 'content'}")


def _moment(item: MemoryInput) -> datetime:
    assert item.observed_at is not None  # turn_item always sets it
    return item.observed_at


def _newer(
    stored: Latest | None, read_here: list[tuple[datetime, int, int]], moment: datetime
) -> int | None:
    """The id of the newest turn at or before ``moment``: ``stored`` (the newest stored
    before this batch) or one of ``read_here`` (this batch's new turns of the session,
    sorted by time and reading order), whichever ``ingest_turn`` one by one would see
    last: the later time, and at one time the turn read later."""
    at = bisect_right(read_here, (moment, math.inf)) - 1
    here = read_here[at] if at >= 0 else None
    if here is None:
        return None if stored is None else stored.id
    if stored is None or here[0] >= stored.observed_at:
        return here[2]  # read after everything stored before the batch
    return stored.id
