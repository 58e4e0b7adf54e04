"""A namespace handle: the verbs of one tenant's memory, each in one transaction."""

from __future__ import annotations

import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, Engine

from memstore import activation
from memstore.activation import learning
from memstore.activation.model import ActivateRequest, Activation, ActivationParams
from memstore.config import Settings
from memstore.db.transaction import (
    confined,
    in_one_round_trip,
    namespace_transaction,
    pipelined_namespace_transaction,
    scope_statement,
    transaction,
)
from memstore.embedding import cache
from memstore.embedding.base import Embedder
from memstore.errors import (
    InvalidInputError,
)
from memstore.graph import lineage as lineage_sql
from memstore.graph.content import checked_content, checked_data
from memstore.graph.nodes import QUERIES as NODE_QUERIES
from memstore.graph.nodes import copy_nodes, may_copy_directly, remember_params
from memstore.graph.rows import (
    NamespaceStats,
    fetch_nodes,
    namespace_stats,
    to_node,
)
from memstore.inputs import validated
from memstore.law.consolidate import Distiller
from memstore.law.ops import Operation, Phase
from memstore.law.policy import Policy
from memstore.law.receipt import Receipt
from memstore.lifecycle import Review
from memstore.lifecycle import service as lifecycle
from memstore.models import (
    PRIVACY_MAX,
    Edge,
    EmbeddingStatus,
    Hit,
    Kind,
    MemoryInput,
    Node,
    NodeStatus,
    RecallMode,
    RedactVersions,
    TargetKind,
    check_clean,
)
from memstore.recall import (
    RecallPlan,
    RecallQuery,
    TermCounts,
    learn_term_counts,
    run_in,
    sample_term_counts,
    searched_exactly,
)
from memstore.recall import hits as recall_hits
from memstore.recall import plan as recall_plan
from memstore.recall.query import Fusion
from memstore.tiers import context, summary
from memstore.tiers.consolidation import Consolidation
from memstore.tiers.context import ContextPacket, ContextRequest, TokenCounter
from memstore.tiers.keyed import KeyedEntries
from memstore.tiers.lessons import Lessons
from memstore.tiers.procedures import Procedures
from memstore.tiers.scratchpad import Scratchpad
from memstore.tiers.summary import NamespaceSummary
from memstore.tiers.timeline import Timeline
from memstore.tx import NamespaceTransaction, check_direct, check_kind

M = TypeVar("M", bound=BaseModel)

NAME_MAX_BYTES = 2048
STATS_TTL = 60.0  # seconds
ANALYZE_AFTER = 1000  # rows loaded by one remember_many
REMEMBER_NODE = NODE_QUERIES["remember_node"]


# The id a read uses for a name nobody has written to yet: identity ids start at
# 1, so every statement scoped to it finds nothing, and nothing is created.
NO_NAMESPACE = 0


def check_namespace_name(name: object) -> str:
    """Text of 1 to 2048 UTF-8 bytes, without leading or trailing whitespace and without
    control or format characters (Unicode categories Cc and Cf: NUL, newlines, escape
    sequences, zero-width and bidirectional marks); compared exactly (docs/security.md)."""
    if not isinstance(name, str):
        raise InvalidInputError("a namespace name must be text", field="name")
    if not name:
        raise InvalidInputError("a namespace name must not be empty", field="name")
    if "\x00" in name:
        raise InvalidInputError("a namespace name must not contain NUL", field="name")
    try:
        check_clean(name)
    except ValueError as exc:
        raise InvalidInputError(f"the namespace name {exc}", field="name") from None
    if len(name.encode()) > NAME_MAX_BYTES:
        raise InvalidInputError(
            f"a namespace name may be at most {NAME_MAX_BYTES} bytes", field="name"
        )
    if name != name.strip():
        raise InvalidInputError(
            "a namespace name must not begin or end with whitespace", field="name"
        )
    for char in name:
        if unicodedata.category(char) in ("Cc", "Cf"):
            raise InvalidInputError(
                f"a namespace name must not contain control or format characters"
                f" (found U+{ord(char):04X})",
                field="name",
            )
    return name


def checked_ceiling(value: object, default: int) -> int:
    """A privacy ceiling (an int from 0 to 3), or ``default`` (the store's) for None."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= PRIVACY_MAX:
        raise InvalidInputError(
            f"privacy_ceiling must be an integer from 0 to {PRIVACY_MAX}",
            field="privacy_ceiling",
        )
    return value


def find_namespace(conn: Connection, name: str) -> int | None:
    """The id of the namespace called ``name``, or None; never creates it.

    memstore.find_namespace (sql/07) compares the name exactly, never with
    LIKE, so '_' and '%' are just characters; SECURITY DEFINER, so a role
    confined by row-level security can look up a name it knows (and only that).
    """
    found = conn.execute(sa.select(sa.func.memstore.find_namespace(name))).scalar_one()
    return None if found is None else int(found)


def open_namespace(conn: Connection, name: str, embedder: Embedder) -> int:
    """The namespace's id, creating it (and recording its embedder) in ``conn``'s
    transaction if it does not exist: a rollback undoes the creation too."""
    name = check_namespace_name(name)
    settings = {"embedder": embedder.name, "dims": embedder.dims}
    found = conn.execute(
        sa.select(
            sa.func.memstore.open_namespace(name, sa.cast(sa.literal(settings, JSONB), JSONB))
        )
    ).scalar_one()
    return int(found)


def check_privacy(item: MemoryInput, ceiling: int) -> None:
    """Refuse a memory above the ceiling a write runs under: its writer could never read it
    back (row-level security refuses even the RETURNING of such a row)."""
    if item.privacy > ceiling:
        raise InvalidInputError(
            f"privacy {item.privacy} is above the privacy ceiling {ceiling} this write runs"
            " under (the privacy_ceiling setting, or the transaction's)",
            field="privacy",
        )


class Namespace:
    """One namespace of a :class:`~memstore.MemoryStore`; get it with ``store.namespace(name)``.

    >>> ns = store.namespace("agent-7")                        # doctest: +SKIP
    >>> home = ns.remember("Alice lives in Lisbon", kind="semantic")  # doctest: +SKIP
    >>> ns.recall("where does Alice live?")[0].node.id == home.id    # doctest: +SKIP
    True
    """

    def __init__(self, engine: Engine, name: str, *, settings: Settings, embedder: Embedder):
        self._engine = engine
        self.name = check_namespace_name(name)
        self.embedder = embedder
        self.settings = settings
        # The id once the namespace exists (None before its first write commits);
        # the thread running that first write sees the new id in _creating.
        self._id: int | None = None
        self._creating = threading.local()
        self._cached_stats: tuple[NamespaceStats, float] | None = None
        self._term_counts = TermCounts()
        self.exists()

    @property
    def id(self) -> int:
        """The namespace's id; 0 while nobody has written to it (reads then find nothing)."""
        if self._id is not None:
            return self._id
        pending: int | None = getattr(self._creating, "id", None)
        return NO_NAMESPACE if pending is None else pending

    def exists(self, *, privacy_ceiling: int | None = None) -> bool:
        """Whether the namespace has been created (by a first successful write).

        Looking never creates: a read of a namespace that does not exist answers
        empty or not found, and a write creates it in its own transaction.
        ``privacy_ceiling`` is accepted like every read's; a namespace has no privacy.
        """
        checked_ceiling(privacy_ceiling, self.settings.privacy_ceiling)
        if self._id is None:
            with transaction(self._engine) as conn:
                found = find_namespace(conn, self.name)
            if found is not None:
                self._id = found
                self._cached_stats = None
        return self._id is not None

    def _ceiling(self, privacy_ceiling: object) -> int:
        """The ceiling of a call: its own (checked), else the store's default."""
        return checked_ceiling(privacy_ceiling, self.settings.privacy_ceiling)

    # --- tiers: profiles over the one graph (docs/tiers.md) ----------------------

    @cached_property
    def timeline(self) -> Timeline:
        """Conversation turns, each linked to the previous turn of its session."""
        return Timeline(self)

    @cached_property
    def scratchpad(self) -> Scratchpad:
        """Pinned facts by key; a new value supersedes the old one."""
        return Scratchpad(self)

    @cached_property
    def lessons(self) -> Lessons:
        """Rules learned from experience, with confidence that decays when unused."""
        return Lessons(self)

    @cached_property
    def procedures(self) -> Procedures:
        """Named skills as versioned step lists."""
        return Procedures(self)

    @cached_property
    def consolidation(self) -> Consolidation:
        """The record of consolidation ("sleep") events."""
        return Consolidation(self)

    # --- the lifecycle law (docs/lifecycle.md) -------------------------------------

    @cached_property
    def review(self) -> Review:
        """The human review queue: pending proposals, accept and reject."""
        return Review(self)

    def apply(
        self,
        ops: Sequence[Operation | Mapping[str, Any] | str],
        *,
        phase: Phase,
        actor: str | None = None,
        atomic: bool = True,
    ) -> Receipt:
        """Judge a batch of typed operations by the law, then apply the accepted ones.

        ``ops`` are operation models, dicts or JSON strings (what an LLM emits);
        ``phase`` is ``"wake"``, ``"rumination"``, ``"sleep"`` or ``"review"``.
        Every operation is accepted or rejected with a reason. By default
        (``atomic=True``) one rejection means nothing is written and
        ``receipt.applied`` is False; with ``atomic=False`` the accepted
        operations are applied and the rejected ones are recorded. An applied
        batch is one transaction and leaves one ``memstore.operations`` row per
        operation.

        >>> receipt = ns.apply([{"op": "record_short_term", "anatomy": {...}}],
        ...                    phase="rumination", actor="agent")  # doctest: +SKIP
        >>> receipt.accepted[0].nodes                                # doctest: +SKIP
        [42]
        """
        return lifecycle.apply(self, ops, phase=phase, actor=actor, atomic=atomic)

    def sleep(
        self,
        ops: Sequence[Operation | Mapping[str, Any] | str] | None = None,
        *,
        forced: bool = False,
        actor: str | None = None,
        distiller: Distiller | None = None,
        older_than: timedelta | None = None,
    ) -> Receipt:
        """Consolidate short-term memory: a batch in the ``sleep`` phase.

        The short-term memories under pressure are the alive ones (recorded at
        least ``older_than`` ago, when given). With ``ops=None`` the
        ``distiller`` (by default the model-free
        :class:`~memstore.law.consolidate.Consolidator`) proposes the
        operations. ``receipt.residue`` lists what is still alive afterwards.
        With ``forced=True`` the pass must account for every one of them
        (distilled, merged into incubation, or pruned with a reason): otherwise
        it raises :class:`~memstore.errors.SleepResidueError` and writes nothing.
        """
        return lifecycle.sleep(
            self, ops, forced=forced, actor=actor, distiller=distiller, older_than=older_than
        )

    def cultivate(
        self,
        node_id: int,
        content: str | None = None,
        *,
        reason: str,
        actor: str,
        retire: bool = False,
        **changes: Any,
    ) -> Node:
        """The one sanctioned change to a protected node (identity, values).

        Writes a new version (``content`` and ``changes``, like :meth:`revise`;
        the new version stays protected), or with ``retire=True`` tombstones
        it. The actor and reason are recorded in ``memstore.operations``
        (op ``cultivate``) as well as on the supersession or tombstone.
        """
        return lifecycle.cultivate(
            self, node_id, content, reason=reason, actor=actor, retire=retire, changes=changes
        )

    def policy(self, *, privacy_ceiling: int | None = None) -> Policy:
        """The namespace's law policy (refused kinds and operations, review, limits).

        ``privacy_ceiling`` is accepted like every read's; a policy has no privacy.
        """
        with self.reading(privacy_ceiling=privacy_ceiling) as tx:
            return lifecycle.read_policy(tx)

    def set_policy(
        self, policy: Policy | Mapping[str, Any], *, reason: str, actor: str | None = None
    ) -> Policy:
        """Replace the namespace's policy; each version is kept, with its reason."""
        return lifecycle.set_policy(
            self,
            dict(policy) if isinstance(policy, Mapping) else policy,
            reason=reason,
            actor=actor,
        )

    # --- context -----------------------------------------------------------------------

    def recall_context(
        self,
        query: str,
        budget_tokens: int = 2000,
        *,
        allocation: dict[str, float] | None = None,
        token_counter: TokenCounter | None = None,
        session_id: str | None = None,
        privacy_ceiling: int | None = None,
    ) -> ContextPacket:
        """A token-budgeted context packet for ``query`` (docs/tiers.md).

        Sections and default shares: scratchpad 35%, lessons 25% (confidence
        ≥ 0.8), procedures 15%, timeline 15% (``session_id`` narrows its
        recent turns), graph 10% (spreading activation). Budget a section
        leaves unused flows to the others; ``token_counter`` (default: four
        characters a token) counts the rendered text, which never exceeds
        ``budget_tokens``. No section holds a memory above ``privacy_ceiling``
        (default: the store's ``privacy_ceiling`` setting).
        """
        values: dict[str, Any] = {} if allocation is None else {"allocation": allocation}
        request = validated(
            ContextRequest,
            query=query,
            budget_tokens=budget_tokens,
            session_id=session_id,
            privacy_ceiling=self._ceiling(privacy_ceiling),
            **values,
        )
        if token_counter is not None and not callable(token_counter):
            raise InvalidInputError("token_counter must be callable", field="token_counter")
        return context.assemble(self, request, token_counter or context.chars_over_four)

    def summary(self, *, privacy_ceiling: int | None = None) -> NamespaceSummary:
        """Nodes per tier and status, vector freshness and last activity.

        Counts only memories up to ``privacy_ceiling`` (default: the store's):
        a count must not reveal that a memory above it exists.
        """
        return summary.summarise(self, self._ceiling(privacy_ceiling))

    def status_summary(self, *, privacy_ceiling: int | None = None) -> str:
        """:meth:`summary` as plain text (``memstore status -n NAME``; ``--json`` for the model)."""
        return self.summary(privacy_ceiling=privacy_ceiling).text()

    def clear(self, *, reason: str, actor: str | None = None) -> int:
        """Retire every current memory of the namespace with a tombstone; returns how many.

        No row is deleted: each tombstone names ``reason``, and every memory
        stays recoverable from the audit trail. Protected nodes (identity and
        values) are kept: only :meth:`cultivate` changes or retires them. So are
        memories above the store's privacy ceiling: a caller retires only what
        it could read.
        """
        return summary.clear(self, reason, actor)

    @contextmanager
    def transaction(self, *, privacy_ceiling: int | None = None) -> Iterator[NamespaceTransaction]:
        """The namespace's verbs on one transaction: all of them are written, or none.

        The transaction runs under ``privacy_ceiling`` (default: the store's):
        nothing above it can be read, linked, revised or written in it. If the
        namespace does not exist yet it is created in this transaction, so a
        transaction that fails (or is rolled back) leaves no namespace behind.

        >>> with ns.transaction() as tx:                            # doctest: +SKIP
        ...     a = tx.remember("Team dinner on Friday")
        ...     b = tx.remember("Maya is allergic to peanuts")
        ...     tx.link(a.id, b.id, relation="constrained_by")
        """
        ceiling = self._ceiling(privacy_ceiling)
        if self.exists():
            with self.connection(privacy_ceiling=ceiling) as conn:
                yield NamespaceTransaction(self, conn, privacy_ceiling=ceiling)
            return
        with transaction(self._engine) as conn:
            created = open_namespace(conn, self.name, self.embedder)
            raw = conn.connection.driver_connection
            assert raw is not None
            raw.execute(scope_statement(created, ceiling))
            self._creating.id = created
            try:
                yield NamespaceTransaction(self, conn, privacy_ceiling=ceiling)
            finally:
                self._creating.id = None
        self._id = created  # committed: every thread may use it now
        self._cached_stats = None

    @contextmanager
    def reading(self, *, privacy_ceiling: int | None = None) -> Iterator[NamespaceTransaction]:
        """A transaction for reads under ``privacy_ceiling`` (default: the store's).

        Unlike :meth:`transaction` it never creates the namespace: before the
        first write, every read in it finds nothing.
        """
        ceiling = self._ceiling(privacy_ceiling)
        with self.connection(privacy_ceiling=ceiling) as conn:
            yield NamespaceTransaction(self, conn, privacy_ceiling=ceiling)

    @contextmanager
    def connection(self, *, privacy_ceiling: int | None = None) -> Iterator[Connection]:
        """A connection in one transaction scoped to this namespace (docs/security.md).

        The transaction first declares the namespace and ``privacy_ceiling``
        (default: the store's ``privacy_ceiling`` setting) with ``SET LOCAL``,
        so row-level security confines a non-owner role to them, and the
        service's own filters read the same ceiling. Every namespace-scoped read
        and write of the service opens its transaction here or in
        :meth:`transaction`. It never creates the namespace.
        """
        ceiling = self._ceiling(privacy_ceiling)
        self.exists()  # another process may have created it since
        with namespace_transaction(self._engine, self.id, privacy_ceiling=ceiling) as conn:
            yield conn

    # --- writing ----------------------------------------------------------------

    def remember(self, content: str, **fields: Any) -> Node:
        """Store one memory (idempotent) and its vector; returns the node.

        Keyword fields are those of :class:`~memstore.models.MemoryInput`
        (kind, node_type, tier, layer, label, data, importance, confidence,
        decay_rate, privacy, protected, subject, scope, source, actor, run_id,
        observed_at, valid_from, valid_to, embedding). The same normalised
        content with the same kind and node_type is one node: remembering it
        again returns the stored node, whatever its status.
        """
        # data first: a 50 MB document is refused after reading about the limit.
        checked_data(fields.get("data"), limit=self.settings.max_data_bytes)
        item = validated(MemoryInput, content=content, **fields)
        check_direct(item)  # lifecycle records and protected memories have their own doors
        text = checked_content(item.content, limit=self.settings.max_content_bytes)
        ceiling = self._ceiling(None)
        check_privacy(item, ceiling)
        vector = self.vectors([item], [text])  # outside the transaction: keep it short
        if not self.exists():
            # The first write creates the namespace, in its own transaction.
            with self.transaction() as tx:
                return tx.remember_item(item, vector=vector)
        # One round trip: BEGIN, the namespace scope, the one statement that
        # writes node and vector (memstore/graph/remember.sql), COMMIT.
        params = remember_params(self.id, item, text, self.embedder.name, vector[0])
        rows = in_one_round_trip(
            self._engine,
            self.id,
            REMEMBER_NODE,
            params,
            privacy_ceiling=ceiling,
            prepare=self.settings.prepared_statements,
        )
        if rows:
            return to_node(rows[0], self.name)
        # A concurrent writer stored the same memory after the statement's
        # snapshot: a new transaction sees its node. (Or the namespace policy
        # refuses the kind: the statement wrote nothing, and this raises.)
        with self.transaction() as tx:
            return tx.remember_item(item, vector=vector)

    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any] | MemoryInput],
        *,
        batch_size: int = 1000,
        progress: Callable[[int], None] | None = None,
    ) -> list[int]:
        """Bulk ingest by binary COPY; returns node ids in input order.

        Every item is validated before anything is written, and the whole call
        is one transaction: it stores all items or none. Embeddings are
        computed ``batch_size`` at a time. If the embedder's HNSW index does
        not exist yet it is built once, after the load, which is far cheaper
        than inserting into a live index.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(
                "batch_size must be an integer of at least 1", field="batch_size"
            )
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InvalidInputError(
                "items must be an iterable of texts, mappings or MemoryInputs", field="items"
            )
        parsed = [self._as_input(i, item) for i, item in enumerate(items)]
        ceiling = self._ceiling(None)
        for i, p in enumerate(parsed):
            check_privacy(p, ceiling)
            check_direct(p, field=f"items[{i}].tier")
        limit = self.settings.max_content_bytes
        texts = [
            checked_content(p.content, limit=limit, field=f"items[{i}].content")
            for i, p in enumerate(parsed)
        ]
        for i, p in enumerate(parsed):  # MemoryInputs given as such were not checked yet
            checked_data(p.data, limit=self.settings.max_data_bytes, field=f"items[{i}].data")
        build_index_after = False
        ids: list[int] = []
        if not parsed:
            return ids  # nothing to write: no namespace to create
        with self.transaction() as tx:
            conn = tx.conn
            build_index_after = not cache.index_exists(conn, self.embedder.name, self.embedder.dims)
            policy = NamespaceTransaction(self, conn).policy()
            for i, p in enumerate(parsed):
                check_kind(p, policy, field=f"items[{i}].kind")
            # The owner COPYs straight into the tables; a confined role cannot.
            direct = may_copy_directly(conn)
            for start in range(0, len(parsed), batch_size):
                batch, batch_texts = (
                    parsed[start : start + batch_size],
                    texts[start : start + batch_size],
                )
                vectors = self.vectors(batch, batch_texts)
                ids += copy_nodes(
                    conn, self.id, batch, batch_texts, self.embedder.name, vectors, direct=direct
                )
                if progress is not None:
                    progress(len(batch))
        if len(ids) >= ANALYZE_AFTER:
            # Fresh planner statistics now, not when autovacuum gets round to
            # it: recall plans over unanalysed tables can be quadratic.
            with transaction(self._engine) as conn:
                conn.exec_driver_sql("ANALYZE memstore.nodes, memstore.embeddings")
        if build_index_after and ids:
            cache.ensure_index(self._engine, self.embedder.name, self.embedder.dims)
        return ids

    def link(self, src: int, dst: int, **fields: Any) -> Edge:
        """Add an edge ``src → dst`` (relation, weight, inhibitory, confidence, layer, provenance).

        Both ends must be nodes of this namespace and not forgotten.
        """
        with self.transaction() as tx:
            return tx.link(src, dst, **fields)

    def revise(self, node_id: int, content: str, *, reason: str, **changes: Any) -> Node:
        """Write a new version of a current node and link old → new; returns the new node.

        Fields not given in ``changes`` are copied from the old version. Edges
        stay on the version they were written for; reads follow supersession
        to the current version. ``actor`` (in changes) is recorded on the link.
        A revision the memory already holds (its current version says
        ``content`` with every field of ``changes``) writes nothing and returns
        that version, even when ``node_id`` is an older one: a script that
        remembers and revises a fact can run twice.
        """
        with self.transaction() as tx:
            return tx.revise(node_id, content, reason=reason, **changes)

    def forget(
        self, target_id: int, *, reason: str, target: TargetKind = "node", actor: str | None = None
    ) -> int:
        """Tombstone a node or an edge (hidden from reads, never deleted); returns its id."""
        with self.transaction() as tx:
            return tx.forget(target_id, reason=reason, target=target, actor=actor)

    def redact(
        self,
        node_id: int,
        *,
        reason: str,
        actor: str | None = None,
        versions: RedactVersions = "all",
    ) -> Node:
        """Erase a memory for good (audited); returns the node ``node_id``, now redacted.

        ``versions="all"`` (the default) erases every version of the memory's
        lineage, older and newer than ``node_id`` (what :meth:`lineage` lists);
        ``"one"`` erases ``node_id`` alone. Each erased version loses its
        content, label, data, subject, scope, tier and node type, its vectors,
        and every other trace of the caller's words: the text of the edges
        touching it, the reasons of its tombstones and supersessions, the
        operations and proposals naming it, the session ids of the sessions
        that activated it; provenance (source, actor, run id) and session ids
        become keyed hashes (docs/security.md, "Erasure"). Ids, edges and
        lineage stay. ``reason`` and ``actor`` are recorded with each erased
        version in ``memstore.redactions``: do not put personal data in them.

        Raises :class:`~memstore.errors.RedactionError` when every version to
        erase is already redacted, :class:`~memstore.errors.NodeNotFoundError`
        for an unknown node, :class:`~memstore.errors.InvalidInputError` for a
        ``versions`` other than ``"all"`` or ``"one"``.
        """
        with self.transaction() as tx:
            return tx.redact(node_id, reason=reason, actor=actor, versions=versions)

    def get(self, node_id: int, *, privacy_ceiling: int | None = None) -> Node:
        """The node with its status: current, superseded, tombstoned or redacted.

        A node above ``privacy_ceiling`` (default: the store's) raises
        :class:`~memstore.errors.NodeNotFoundError` exactly as a missing id does.
        """
        with self.reading(privacy_ceiling=privacy_ceiling) as tx:
            return tx.node(node_id)

    def lineage(self, node_id: int, *, privacy_ceiling: int | None = None) -> list[Node]:
        """Every version of this memory, oldest first, ending with the current one.

        Versions above ``privacy_ceiling`` (default: the store's) are left out;
        a ``node_id`` above it raises :class:`~memstore.errors.NodeNotFoundError`.
        """
        with self.reading(privacy_ceiling=privacy_ceiling) as tx:
            return tx.lineage(node_id)

    def recall(
        self,
        query: str,
        *,
        k: int = 10,
        mode: RecallMode = "hybrid",
        kinds: list[Kind] | None = None,
        node_types: list[str] | None = None,
        tiers: list[str] | None = None,
        as_of: datetime | None = None,
        valid_at: datetime | None = None,
        include_superseded: bool = False,
        include_tombstoned: bool = False,
        privacy_ceiling: int | None = None,
        fusion: Fusion = "weighted",
        semantic_weight: float | None = None,
    ) -> list[Hit]:
        """The ``k`` memories most relevant to ``query``, best first.

        ``mode``: ``semantic`` (HNSW cosine), ``lexical`` (full text) or
        ``hybrid`` (both, fused; see docs/recall.md). Only current memories by
        default; ``as_of`` answers with what the store knew then, ``valid_at``
        filters by world time. Every hit carries its score parts and the
        node's provenance. ``fusion`` (``weighted`` or ``rrf``) and
        ``semantic_weight`` (default: the embedder's, else 0.5) tune hybrid mode.
        Nothing above ``privacy_ceiling`` (default: the store's) is returned.
        """
        privacy_ceiling = self._ceiling(privacy_ceiling)
        spec = validated(
            RecallQuery,
            text=query,
            k=k,
            mode=mode,
            kinds=kinds,
            node_types=node_types,
            tiers=tiers,
            as_of=as_of,
            valid_at=valid_at,
            include_superseded=include_superseded,
            include_tombstoned=include_tombstoned,
            privacy_ceiling=privacy_ceiling,
            fusion=fusion,
            semantic_weight=semantic_weight,
        )
        vector = None
        if spec.mode != "lexical":
            vector = self.embedder.embed([spec.text])[0]
            if not vector.any():
                vector = None  # nothing to compare (e.g. only punctuation)
        self.exists()  # another process may have created it since
        run = self.plan_recall(spec, vector)
        rows = in_one_round_trip(
            self._engine,
            self.id,
            run.statement,
            run.params,
            privacy_ceiling=spec.privacy_ceiling,
            settings=run.settings,
            prepare=self.settings.prepared_statements,
        )
        self.learn_from_recall(rows)
        return recall_hits(rows, spec, self.embedder, self.name)

    def activate(
        self,
        query: str | None = None,
        *,
        seeds: list[int] | None = None,
        depth: int = 2,
        fanout: int = 16,
        limit: int = 20,
        learn: bool = False,
        as_of: datetime | None = None,
        privacy_ceiling: int | None = None,
        both_directions: bool = False,
        session_id: str | None = None,
        params: ActivationParams | None = None,
    ) -> Activation:
        """Spread activation from the query's recall hits and/or ``seeds`` (docs/activation.md).

        Seeds from the query are its ``params.seed_count`` hybrid-recall hits
        (seed strength: the fused score over the best one's); given ids are
        seeds of strength 1 (an old version stands for its current one). One
        database call pulls the neighbourhood (``depth`` hops, each node's
        ``fanout`` heaviest edges, current nodes and live edges only, within
        ``privacy_ceiling`` and ``as_of``); numpy scores it. ``learn`` records
        the accesses of working memory and strengthens co-activated edges.
        ``privacy_ceiling`` defaults to the store's.
        """
        privacy_ceiling = self._ceiling(privacy_ceiling)
        self.exists()  # another process may have created it since
        values: dict[str, Any] = {"params": params} if params is not None else {}
        request = validated(
            ActivateRequest,
            query=query,
            seeds=seeds,
            depth=depth,
            fanout=fanout,
            limit=limit,
            learn=learn,
            as_of=as_of,
            privacy_ceiling=privacy_ceiling,
            both_directions=both_directions,
            session_id=session_id,
            **values,
        )
        started = time.perf_counter()
        vector = None
        if request.query is not None:
            vector = self.embedder.embed([request.query])[0]
            if not vector.any():
                vector = None
        with pipelined_namespace_transaction(
            self._engine, self.id, privacy_ceiling=request.privacy_ceiling
        ) as tx:
            conn = tx.conn
            start: dict[int, float] = {}
            given = request.seeds or []
            if request.query is not None:
                tx.start()  # the recall's statistics may be read first
                hits = self.recall_in(
                    conn,
                    validated(
                        RecallQuery,
                        text=request.query,
                        k=request.params.seed_count,
                        as_of=request.as_of,
                        privacy_ceiling=request.privacy_ceiling,
                    ),
                    vector,
                )
                top = max((hit.score for hit in hits), default=0.0) or 1.0
                for hit in hits:
                    start[hit.node.id] = max(start.get(hit.node.id, 0.0), hit.score / top)
            seeded = round((time.perf_counter() - started) * 1000, 3)
            return activation.run(
                conn,
                self.id,
                self.name,
                start,
                request,
                vector=vector,
                model=self.embedder.name,
                timings={"seed": seeded},
                # The pull resolves and checks the given ids in its own round
                # trip; the full check runs only to raise for a bad one.
                given=given,
                check_given=lambda: self._seed_ids(conn, given, request.as_of),
                tx=tx,
                prepare=self.settings.prepared_statements,
            )

    def decay_hebbian(self, factor: float, *, unused_for: timedelta | None = None) -> int:
        """Fade learned edge weights: hebb ← hebb × ``factor``; returns how many edges changed.

        Only edges not fired within ``unused_for`` (every learned edge when
        None). A weight that falls below 0.001 becomes 0. Authored weights
        never change.
        """
        if (
            not isinstance(factor, int | float)
            or isinstance(factor, bool)
            or not 0.0 <= factor <= 1.0
        ):
            raise InvalidInputError("factor must be a number from 0 to 1", field="factor")
        if unused_for is not None and (
            not isinstance(unused_for, timedelta) or unused_for < timedelta(0)
        ):
            raise InvalidInputError(
                "unused_for must be a non-negative timedelta", field="unused_for"
            )
        if not self.exists():
            return 0  # nothing written yet: nothing to fade, no namespace to create
        with self.connection() as conn:
            return learning.decay_hebbian(conn, self.id, float(factor), unused_for)

    def embedding_status(self, *, privacy_ceiling: int | None = None) -> EmbeddingStatus:
        """Fresh, missing and stale vectors of this namespace for the store's embedder,
        counting memories up to ``privacy_ceiling`` (default: the store's)."""
        with self.connection(privacy_ceiling=privacy_ceiling) as conn:
            return cache.status(conn, self.id, self.name, self.embedder.name, self.embedder.dims)

    def rebuild_embeddings(
        self, *, batch_size: int = 256, progress: Callable[[int], None] | None = None
    ) -> int:
        """Compute every missing or stale vector (and the index); returns how many."""
        if not self.exists():
            return 0  # nothing written yet: nothing to embed, no namespace to create
        return cache.rebuild(
            self._engine, self.id, self.embedder, batch_size=batch_size, progress=progress
        )

    # --- helpers ----------------------------------------------------------------

    def recall_in(
        self, conn: Connection, spec: RecallQuery, vector: np.ndarray[Any, Any] | None
    ) -> list[Hit]:
        """Run a validated recall on an open connection (for composite reads)."""
        rows = run_in(
            conn, self.plan_recall(spec, vector, conn), prepare=self.settings.prepared_statements
        )
        self.learn_from_recall(rows)
        return recall_hits(rows, spec, self.embedder, self.name)

    def plan_recall(
        self,
        spec: RecallQuery,
        vector: np.ndarray[Any, Any] | None,
        conn: Connection | None = None,
    ) -> RecallPlan:
        """The statement of a validated recall in this namespace, not yet run (for
        reads that send it with others); :meth:`learn_from_recall` takes its rows."""
        stats = self._stats(conn)
        terms = None
        if spec.mode != "semantic" and not stats.confined:
            terms = self._common_terms(stats, conn)
        return recall_plan(
            self.id,
            spec,
            vector,
            self.embedder,
            exact=self._exact(stats, vector),
            confined=stats.confined,
            text_stats=(stats.documents, stats.avg_length),
            terms=terms,
        )

    def _common_terms(self, stats: NamespaceStats, conn: Connection | None = None) -> TermCounts:
        """Document counts of the namespace's common terms, for BM25: estimated from a sample
        when a lexical or hybrid recall first needs them, and again once the namespace has
        grown by a tenth (memstore/recall/terms.py). Never for a role that row-level security
        confines: its counts depend on its privacy ceiling."""
        if not self._term_counts.current_for(stats.documents):
            if conn is None:
                with self.connection() as fresh:
                    return self._common_terms(stats, fresh)
            self._term_counts = sample_term_counts(conn, self.id, stats.documents)
        return self._term_counts

    def learn_from_recall(self, rows: list[dict[str, Any]]) -> None:
        """Keep the term counts a recall statement's rows report (see :meth:`plan_recall`)."""
        learn_term_counts(self._term_counts, rows)

    @staticmethod
    def _exact(stats: NamespaceStats, vector: np.ndarray[Any, Any] | None) -> bool:
        return vector is not None and searched_exactly(stats.vectors, stats.indexed)

    def _seed_ids(
        self, conn: Connection, ids: list[int], as_of: datetime | None
    ) -> dict[int, float]:
        """Given seeds as current ids (strength 1); unknown ids raise.

        Without ``as_of`` a forgotten or redacted seed raises too; with it, the
        pull decides what was visible then. Two round trips whatever the count:
        :meth:`activate` calls it only when the pull's own report on the seeds
        (same checks, no extra round trip) found one to raise for.
        """
        tx = NamespaceTransaction(self, conn)
        found = fetch_nodes(conn, self.id, self.name, ids)
        current = lineage_sql.current_versions(conn, self.id, ids, as_of)
        if as_of is None:
            newer = set(current.values()) - set(found)
            found |= fetch_nodes(conn, self.id, self.name, newer)  # usually nothing to fetch
        for node_id in ids:
            # A seed whose current version is above the ceiling stands for nothing
            # the caller may see: answered like a missing id.
            if node_id not in found or current[node_id] not in found:
                tx.raise_missing(node_id)
            if as_of is None and found[current[node_id]].status is not NodeStatus.CURRENT:
                tx.current(current[node_id])  # raises: the memory was forgotten or redacted
        return {current[node_id]: 1.0 for node_id in ids}

    def _stats(self, conn: Connection | None = None) -> NamespaceStats:
        """Sizes that pick a plan and feed BM25, cached for a minute (read on ``conn``, or a
        transaction of their own).

        They only steer ranking and plan choice, so slightly stale is fine.
        """
        now = time.monotonic()
        if self._cached_stats is None or now - self._cached_stats[1] > STATS_TTL:
            if conn is None:
                with self.connection() as fresh:
                    return self._stats(fresh)
            model, dims = self.embedder.name, self.embedder.dims
            stats = namespace_stats(conn, self.id, model)._replace(
                indexed=cache.indexed_vectors(conn, model, dims), confined=confined(conn)
            )
            self._cached_stats = (stats, now)
        return self._cached_stats[0]

    def _as_input(self, position: int, item: object) -> MemoryInput:
        if isinstance(item, MemoryInput):
            return item
        if isinstance(item, str):
            return validated(MemoryInput, content=item)
        if isinstance(item, Mapping):
            if not all(isinstance(key, str) for key in item):
                raise InvalidInputError(
                    f"items[{position}] has a key that is not text", field="items"
                )
            checked_data(
                item.get("data"),
                limit=self.settings.max_data_bytes,
                field=f"items[{position}].data",
            )
            try:
                return validated(MemoryInput, **item)
            except InvalidInputError as exc:
                raise InvalidInputError(f"items[{position}]: {exc}", field=exc.field) from None
        raise InvalidInputError(
            f"items[{position}] must be text, a mapping or a MemoryInput", field="items"
        )

    def vectors(self, items: list[MemoryInput], texts: list[str]) -> np.ndarray[Any, Any]:
        """Given vectors where items carry one; the embedder's for the rest."""
        dims = self.embedder.dims
        given = [i for i, item in enumerate(items) if item.embedding is not None]
        out = np.empty((len(items), dims), dtype=np.float32)
        if given and not self._given_vectors_at_once(items, given, out):
            for i in given:  # one by one: the first bad vector raises its own error
                out[i] = cache.check_vector(items[i].embedding, dims)
        todo = [i for i in range(len(items)) if items[i].embedding is None]
        if todo:
            out[todo] = self.embedder.embed([texts[i] for i in todo])
        return out

    def _given_vectors_at_once(
        self, items: list[MemoryInput], given: list[int], out: np.ndarray[Any, Any]
    ) -> bool:
        """Check and store the given vectors as one array, if every one passes.

        The checks of :func:`~memstore.embedding.cache.check_vector`, done for
        a whole batch at once (a bulk load of given vectors spent most of its
        vector time checking them one by one); False when any vector would fail
        them, so the caller checks one by one and raises the exact error.
        """
        try:
            block = np.asarray([items[i].embedding for i in given], dtype=np.float32)
        except (TypeError, ValueError):
            return False
        dims = self.embedder.dims
        if block.shape != (len(given), dims):
            return False
        if not (np.isfinite(block).all() and block.any(axis=1).all()):
            return False
        out[given] = block
        return True

    # --- keyed entries (a framework's key-value store, docs/integrations.md) ------------

    def keyed(self, tier: str) -> KeyedEntries:
        """The current memory of each key of ``tier`` (a tier of the caller's own).

        >>> items = ns.keyed("notes")                                # doctest: +SKIP
        >>> items.put("color", "Alice likes red", data={"color": "red"}).label  # doctest: +SKIP
        'color'
        """
        return KeyedEntries(self, tier)


__all__ = ["Namespace"]
