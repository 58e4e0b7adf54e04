"""A namespace handle: the verbs of one tenant's memory, each in one transaction."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import cached_property
from typing import IO, Any

import numpy as np
from sqlalchemy.engine import Connection, Engine

from memstore.activation.model import Activation, ActivationParams
from memstore.config import Settings
from memstore.db.replicas import ReadRouter
from memstore.embedding import cache
from memstore.embedding.base import Embedder
from memstore.errors import InvalidInputError
from memstore.graph.listing import ListQuery, MemoryPage, list_page
from memstore.inputs import KEEP, Unchanged, given, known_keywords, validated
from memstore.law.consolidate import Distiller
from memstore.law.ops import Operation, Phase
from memstore.law.policy import Policy
from memstore.law.receipt import Receipt
from memstore.lifecycle import Review
from memstore.lifecycle import service as lifecycle
from memstore.models import (
    Edge,
    EmbeddingStatus,
    ExportSummary,
    Kind,
    MemoryInput,
    Neighbour,
    Node,
    Recalled,
    RecallMode,
    RedactVersions,
    TargetKind,
)
from memstore.recall.query import Fusion
from memstore.services import confirmation
from memstore.services.activation import Activator
from memstore.services.graph import Direction, GraphReader
from memstore.services.ingest import Ingester
from memstore.services.maintenance import Maintainer, MaintainRequest, MaintenanceReport
from memstore.services.recall import Recaller
from memstore.services.scope import (
    NamespaceState,
    Scope,
    check_namespace_name,
    checked_ceiling,
)
from memstore.tiers import context, summary
from memstore.tiers.consolidation import Consolidation
from memstore.tiers.context import ContextPacket, ContextRequest, TokenCounter
from memstore.tiers.keyed import KeyedEntries
from memstore.tiers.lessons import Lessons
from memstore.tiers.procedures import Procedures
from memstore.tiers.scratchpad import Scratchpad
from memstore.tiers.summary import NamespaceSummary
from memstore.tiers.timeline import Timeline
from memstore.tx import NamespaceTransaction


class Namespace:
    """One namespace of a :class:`~memstore.MemoryStore`; get it with ``store.namespace(name)``.

    >>> ns = store.namespace("agent-7")                        # doctest: +SKIP
    >>> home = ns.remember("Alice lives in Lisbon", kind="semantic")  # doctest: +SKIP
    >>> ns.recall("where does Alice live?")[0].node.id == home.id    # doctest: +SKIP
    True
    """

    def __init__(
        self,
        engine: Engine,
        name: str,
        *,
        settings: Settings,
        embedder: Embedder,
        reads: ReadRouter | None = None,
        state: NamespaceState | None = None,
    ):
        self._scope = Scope(
            engine, name, settings=settings, embedder=embedder, reads=reads, state=state
        )
        self._recall = Recaller(self._scope)
        self._activation = Activator(self._scope, self._recall)
        self._ingest = Ingester(self._scope)
        self._graph = GraphReader(self._scope)

    @property
    def name(self) -> str:
        """The namespace's name (checked: :func:`check_namespace_name`)."""
        return self._scope.name

    @property
    def embedder(self) -> Embedder:
        """The store's embedder, which computes this namespace's vectors."""
        return self._scope.embedder

    @property
    def settings(self) -> Settings:
        """The store's settings (limits, default privacy ceiling, default actor)."""
        return self._scope.settings

    @property
    def id(self) -> int:
        """The namespace's id; 0 while nobody has written to it (reads then find nothing)."""
        return self._scope.id

    def exists(self, *, privacy_ceiling: int | None = None) -> bool:
        """Whether the namespace has been created (by a first successful write).

        Looking never creates: a read of a namespace that does not exist answers
        empty or not found, and a write creates it in its own transaction.
        ``privacy_ceiling`` is accepted like every read's; a namespace has no privacy.
        """
        self._scope.ceiling(privacy_ceiling)
        return self._scope.exists()

    # --- tiers: profiles over the one graph (docs/tiers.md) ----------------------

    @cached_property
    def timeline(self) -> Timeline:
        """Conversation turns, each linked to the previous turn of its session."""
        return Timeline(self._scope, self._recall)

    @cached_property
    def scratchpad(self) -> Scratchpad:
        """Pinned facts by key; a new value supersedes the old one."""
        return Scratchpad(self._scope)

    @cached_property
    def lessons(self) -> Lessons:
        """Rules learned from experience, with confidence that decays when unused."""
        return Lessons(self._scope, self._recall)

    @cached_property
    def procedures(self) -> Procedures:
        """Named skills as versioned step lists."""
        return Procedures(self._scope)

    @cached_property
    def consolidation(self) -> Consolidation:
        """The record of consolidation ("sleep") events."""
        return Consolidation(self._scope)

    # --- the lifecycle law (docs/lifecycle.md) -------------------------------------

    @cached_property
    def review(self) -> Review:
        """The human review queue: pending proposals, accept and reject."""
        return Review(self._scope)

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
        return lifecycle.apply(self._scope, ops, phase=phase, actor=actor, atomic=atomic)

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
            self._scope, ops, forced=forced, actor=actor, distiller=distiller, older_than=older_than
        )

    @known_keywords
    def cultivate(
        self,
        node_id: int,
        content: str | None = None,
        *,
        reason: str,
        actor: str,
        retire: bool = False,
        kind: Kind | Unchanged = KEEP,
        node_type: str | Unchanged = KEEP,
        tier: str | Unchanged | None = KEEP,
        layer: int | Unchanged = KEEP,
        label: str | Unchanged | None = KEEP,
        data: dict[str, Any] | Unchanged | None = KEEP,
        importance: float | Unchanged = KEEP,
        confidence: float | Unchanged = KEEP,
        decay_rate: float | Unchanged = KEEP,
        privacy: int | Unchanged = KEEP,
        protected: bool | Unchanged = KEEP,
        subject: str | Unchanged | None = KEEP,
        scope: str | Unchanged | None = KEEP,
        source: str | Unchanged | None = KEEP,
        run_id: str | Unchanged | None = KEEP,
        observed_at: datetime | Unchanged | None = KEEP,
        valid_from: datetime | Unchanged | None = KEEP,
        valid_to: datetime | Unchanged | None = KEEP,
        embedding: Sequence[float] | np.ndarray[Any, Any] | Unchanged | None = KEEP,
        dedupe_key: str | Unchanged | None = KEEP,
        tags: Sequence[str] | Unchanged = KEEP,
    ) -> Node:
        """The one sanctioned change to a protected node (identity, values).

        Writes a new version (``content`` and the fields given, like :meth:`revise`;
        the new version stays protected), or with ``retire=True`` tombstones
        it. The actor and reason are recorded in ``memstore.operations``
        (op ``cultivate``) as well as on the supersession or tombstone.
        """
        changes = given(locals(), "self", "node_id", "content", "reason", "actor", "retire")
        return lifecycle.cultivate(
            self._scope,
            node_id,
            content,
            reason=reason,
            actor=actor,
            retire=retire,
            changes=changes,
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
            self._scope,
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
        role: str | None = None,
        tags: list[str] | None = None,
    ) -> ContextPacket:
        """A token-budgeted context packet for ``query`` (docs/tiers.md).

        Sections and default shares: scratchpad 30%, lessons 20% (confidence
        ≥ 0.8), procedures 15%, timeline 15% (``session_id`` narrows its
        recent turns), graph 10% (spreading activation), lifecycle 10%
        (recalled lifecycle records, open pressures, fresh short-term ones). Budget a section
        leaves unused flows to the others; ``token_counter`` (default: four
        characters a token) counts the rendered text, which never exceeds
        ``budget_tokens``. No section holds a memory above ``privacy_ceiling``
        (default: the store's ``privacy_ceiling`` setting). With a ``role``, the
        procedures section holds only procedures scoped to that role or to none;
        of each procedure it serves the version with the best record
        (``ns.procedures.record_outcome``; docs/tiers.md). With ``tags``, every
        section holds only memories carrying every one of them.
        """
        values: dict[str, Any] = {} if allocation is None else {"allocation": allocation}
        if tags is not None:
            values["tags"] = tags
        request = validated(
            ContextRequest,
            query=query,
            budget_tokens=budget_tokens,
            session_id=session_id,
            privacy_ceiling=self._scope.ceiling(privacy_ceiling),
            role=role,
            **values,
        )
        if token_counter is not None and not callable(token_counter):
            raise InvalidInputError("token_counter must be callable", field="token_counter")
        return context.assemble(
            self._scope, self._recall, request, token_counter or context.chars_over_four
        )

    def summary(self, *, privacy_ceiling: int | None = None) -> NamespaceSummary:
        """Nodes per tier and status, vector freshness and last activity.

        Counts only memories up to ``privacy_ceiling`` (default: the store's):
        a count must not reveal that a memory above it exists.
        """
        return summary.summarise(self._scope, self._scope.ceiling(privacy_ceiling))

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
        return summary.clear(self._scope, reason, actor)

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
        with self._scope.transaction(privacy_ceiling=privacy_ceiling) as tx:
            yield tx

    @contextmanager
    def reading(self, *, privacy_ceiling: int | None = None) -> Iterator[NamespaceTransaction]:
        """A transaction for reads under ``privacy_ceiling`` (default: the store's).

        Unlike :meth:`transaction` it never creates the namespace: before the
        first write, every read in it finds nothing.
        """
        with self._scope.reading(privacy_ceiling=privacy_ceiling) as tx:
            yield tx

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
        with self._scope.connection(privacy_ceiling=privacy_ceiling) as conn:
            yield conn

    # --- writing ----------------------------------------------------------------

    @known_keywords
    def remember(
        self,
        content: str,
        *,
        kind: Kind = "episodic",
        node_type: str = "Memory",
        tier: str | None = None,
        layer: int = 1,
        label: str | None = None,
        data: dict[str, Any] | None = None,
        importance: float = 0.5,
        confidence: float = 0.5,
        decay_rate: float = 0.5,
        privacy: int = 0,
        protected: bool = False,
        subject: str | None = None,
        scope: str | None = None,
        source: str | None = None,
        actor: str | None = None,
        run_id: str | None = None,
        observed_at: datetime | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        embedding: Sequence[float] | np.ndarray[Any, Any] | None = None,
        dedupe_key: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> Node:
        """Store one memory (idempotent) and its vector; returns the node.

        The keywords are the fields of :class:`~memstore.models.MemoryInput`,
        with its defaults, and are validated by it (an unknown keyword is an
        :class:`~memstore.errors.InvalidInputError` too). The same normalised
        content with the same kind and node_type is one node: remembering it
        again returns the stored node, whatever its status (and its tags: tags
        are set when a version is written; :meth:`revise` gives new ones).
        ``tags`` are normalised (trimmed, lower case) and deduplicated
        (docs/recall.md, "Tags").
        """
        fields = given(locals(), "self", "content")  # first: the keywords, nothing else
        return self._ingest.remember(content, fields)

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
        return self._ingest.remember_many(items, batch_size=batch_size, progress=progress)

    @known_keywords
    def link(
        self,
        src: int,
        dst: int,
        *,
        relation: str = "related",
        weight: float = 0.5,
        inhibitory: bool = False,
        confidence: float = 0.5,
        layer: int = 1,
        source: str | None = None,
        actor: str | None = None,
        run_id: str | None = None,
    ) -> Edge:
        """Add an edge ``src → dst`` (relation, weight, inhibitory, confidence, layer, provenance).

        Both ends must be current nodes of this namespace (not superseded,
        forgotten or redacted). The same link again (equal ends and fields)
        returns the edge already written (docs/recall.md).
        """
        fields = given(locals(), "self", "src", "dst")  # first: the keywords, nothing else
        with self.transaction() as tx:
            return tx.link(src, dst, **fields)

    @known_keywords
    def revise(
        self,
        node_id: int,
        content: str,
        *,
        reason: str,
        kind: Kind | Unchanged = KEEP,
        node_type: str | Unchanged = KEEP,
        tier: str | Unchanged | None = KEEP,
        layer: int | Unchanged = KEEP,
        label: str | Unchanged | None = KEEP,
        data: dict[str, Any] | Unchanged | None = KEEP,
        importance: float | Unchanged = KEEP,
        confidence: float | Unchanged = KEEP,
        decay_rate: float | Unchanged = KEEP,
        privacy: int | Unchanged = KEEP,
        protected: bool | Unchanged = KEEP,
        subject: str | Unchanged | None = KEEP,
        scope: str | Unchanged | None = KEEP,
        source: str | Unchanged | None = KEEP,
        actor: str | Unchanged | None = KEEP,
        run_id: str | Unchanged | None = KEEP,
        observed_at: datetime | Unchanged | None = KEEP,
        valid_from: datetime | Unchanged | None = KEEP,
        valid_to: datetime | Unchanged | None = KEEP,
        embedding: Sequence[float] | np.ndarray[Any, Any] | Unchanged | None = KEEP,
        dedupe_key: str | Unchanged | None = KEEP,
        tags: Sequence[str] | Unchanged = KEEP,
    ) -> Node:
        """Write a new version of a current node and link old → new; returns the new node.

        The keywords are the fields of :class:`~memstore.models.MemoryInput`;
        those left at ``KEEP`` (not given) are copied from the old version. Edges
        stay on the version they were written for; reads follow supersession
        to the current version. ``actor`` is recorded on the link.
        A revision the memory already holds (its current version says
        ``content`` with every field given) writes nothing and returns
        that version, even when ``node_id`` is an older one: a script that
        remembers and revises a fact can run twice. The new version carries
        the old version's ``tags`` unless ``tags`` are given (``tags=[]``
        drops them).
        """
        changes = given(locals(), "self", "node_id", "content", "reason")  # first: the keywords
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
        content, label, data, subject, scope, tier, tags and node type, its vectors,
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
        return self._graph.node(node_id, privacy_ceiling=privacy_ceiling)

    def lineage(self, node_id: int, *, privacy_ceiling: int | None = None) -> list[Node]:
        """Every version of this memory, oldest first, ending with the current one.

        Versions above ``privacy_ceiling`` (default: the store's) are left out;
        a ``node_id`` above it raises :class:`~memstore.errors.NodeNotFoundError`.
        """
        return self._graph.lineage(node_id, privacy_ceiling=privacy_ceiling)

    def recall(
        self,
        query: str | None = None,
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
        tags: list[str] | None = None,
        neighbour_share: float | None = None,
        vector: Sequence[float] | np.ndarray[Any, Any] | None = None,
    ) -> Recalled:
        """The ``k`` memories most relevant to ``query``, best first.

        ``mode``: ``semantic`` (HNSW cosine), ``lexical`` (full text) or
        ``hybrid`` (both, fused; see docs/recall.md). Only current memories by
        default; ``as_of`` answers with what the store knew then, ``valid_at``
        filters by world time. Every hit carries its score parts and the
        node's provenance. ``fusion`` (``weighted`` or ``rrf``) and
        ``semantic_weight`` (default: the embedder's, else 0.5; 0.6 of that when
        graph evidence has edges or sessions to sum over) tune hybrid mode.
        In hybrid mode a memory also gains ``neighbour_share`` (default 0.5;
        0 turns it off) of its linked neighbours' scores, times each edge's
        weight: graph evidence, so a turn next to the answer rises with it;
        and, with it, shares of the best score for being in the best hits'
        session, said by a speaker the query names, or observed on a date it
        names (docs/recall.md).
        Nothing above ``privacy_ceiling`` (default: the store's) is returned.
        ``tags``: only memories carrying every one of them (filtered among the
        candidates, so ``k`` hits come back whenever ``k`` such memories match).

        ``vector`` is a query vector of the embedder's dimensions to use instead
        of embedding ``query``; without ``query`` the recall is semantic only.
        The result is a list of hits that also says how many current memories
        have no vector for the store's embedder (``missing_vectors``,
        ``missing_ids``, ``notice``): those are found by their text only, and a
        semantic recall of a namespace with any then runs hybrid
        (docs/recall.md, "When vectors are missing").
        """
        return self._recall.recall(
            query,
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
            tags=tags,
            neighbour_share=neighbour_share,
            vector=vector,
        )

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
        tags: list[str] | None = None,
    ) -> Activation:
        """Spread activation from the query's recall hits and/or ``seeds`` (docs/activation.md).

        Seeds from the query are its ``params.seed_count`` hybrid-recall hits
        (seed strength: the fused score over the best one's); given ids are
        seeds of strength 1 (an old version stands for its current one). One
        database call pulls the neighbourhood (``depth`` hops, each node's
        ``fanout`` heaviest edges, current nodes and live edges only, within
        ``privacy_ceiling`` and ``as_of``); numpy scores it. ``learn`` records
        the accesses of working memory and strengthens co-activated edges.
        ``privacy_ceiling`` defaults to the store's. ``tags``: the query's seeds
        and working memory hold only memories carrying every one of them
        (activation still spreads through the others).
        """
        return self._activation.activate(
            query,
            seeds=seeds,
            depth=depth,
            fanout=fanout,
            limit=limit,
            learn=learn,
            as_of=as_of,
            privacy_ceiling=privacy_ceiling,
            both_directions=both_directions,
            session_id=session_id,
            params=params,
            tags=tags,
        )

    def decay_hebbian(self, factor: float, *, unused_for: timedelta | None = None) -> int:
        """Fade learned edge weights: hebb ← hebb × ``factor``; returns how many edges changed.

        Only edges not fired within ``unused_for`` (every learned edge when
        None). A weight that falls below 0.001 becomes 0. Authored weights
        never change.
        """
        return self._activation.decay_hebbian(factor, unused_for=unused_for)

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
            self._scope.engine, self.id, self.embedder, batch_size=batch_size, progress=progress
        )

    # --- listing (appended: the REST API's GET /memories) ------------------------------

    def list_memories(
        self,
        *,
        after: int = 0,
        limit: int = 50,
        kinds: list[Kind] | None = None,
        tiers: list[str] | None = None,
        privacy_ceiling: int | None = None,
        tags: list[str] | None = None,
    ) -> MemoryPage:
        """One page of current memories in id order, from the id after ``after``.

        Pass the page's ``next_cursor`` as ``after`` for the next page (None:
        there is none). Keyset pagination: pages neither repeat nor skip a
        memory while others write. Superseded, forgotten and erased memories
        are left out, and so is anything above ``privacy_ceiling`` (default:
        the store's). ``tags``: only memories carrying every one of them.

        >>> page = ns.list_memories(limit=2)                # doctest: +SKIP
        >>> page = ns.list_memories(after=page.next_cursor)  # doctest: +SKIP
        """
        query = validated(ListQuery, after=after, limit=limit, kinds=kinds, tiers=tiers, tags=tags)
        with self.reading(privacy_ceiling=privacy_ceiling) as tx:
            return list_page(tx.conn, self.id, self.name, query)

    # --- keyed entries (a framework's key-value store, docs/integrations.md) ------------

    def keyed(self, tier: str) -> KeyedEntries:
        """The current memory of each key of ``tier`` (a tier of the caller's own).

        >>> items = ns.keyed("notes")                                # doctest: +SKIP
        >>> items.put("color", "Alice likes red", data={"color": "red"}).label  # doctest: +SKIP
        'color'
        """
        return KeyedEntries(self._scope, tier)

    # --- maintenance (docs/operations.md, "Maintenance") --------------------------------

    def maintain(
        self,
        *,
        dry_run: bool = False,
        retention: timedelta | None = None,
        decay_period: timedelta | None = None,
    ) -> MaintenanceReport:
        """One maintenance pass: lesson decay, Hebbian decay, telemetry retention.

        Decay is applied in whole steps, one per ``decay_period`` (default: the
        ``maintain_decay_period_hours`` setting) since the last step, with the
        ``maintain_*`` factors of the settings; the activation log's rows older
        than ``retention`` (default: ``activation_retention_days``) are
        summarised into ``activation_summaries`` and removed. Truth tables are
        never touched. One transaction under the namespace's maintenance lock:
        a concurrent pass waits, then finds nothing due; a second pass at once
        changes nothing. ``dry_run`` reports what would change and rolls back.

        >>> ns.maintain(dry_run=True).dry_run                    # doctest: +SKIP
        True
        """
        settings = self._scope.settings
        request = validated(
            MaintainRequest,
            dry_run=dry_run,
            retention=(
                timedelta(days=settings.activation_retention_days)
                if retention is None
                else retention
            ),
            decay_period=(
                timedelta(hours=settings.maintain_decay_period_hours)
                if decay_period is None
                else decay_period
            ),
        )
        return Maintainer(self._scope, self.lessons).run(
            dry_run=request.dry_run,
            retention=request.retention,
            period=request.decay_period,
            lesson_decay=settings.maintain_lesson_decay,
            lesson_min_confidence=settings.maintain_lesson_min_confidence,
            hebbian_decay=settings.maintain_hebbian_decay,
        )

    # --- confirmation (IRIS, docs/recall.md) -----------------------------------------------

    def confirm(self, node_id: int) -> Node:
        """Record that a later observation confirmed the current memory ``node_id``.

        Returns the node with its new ``last_confirmed_at`` (the transaction's
        time). ``remember`` of content already stored as a current memory
        confirms it too. A superseded version raises
        :class:`~memstore.errors.NodeSupersededError` naming the current one (a
        confirmation belongs to the version that was observed); a forgotten or
        redacted memory raises its error, a missing id ``NodeNotFoundError``.

        >>> ns.confirm(node.id).last_confirmed_at  # doctest: +SKIP
        datetime.datetime(2026, 12, 3, 9, 0, tzinfo=datetime.timezone.utc)
        """
        return confirmation.confirm(self._scope, node_id)

    # --- graph reads (appended: issue 21 item 4, docs/recall.md "Graph reads") ---------

    def edges(
        self,
        node_id: int,
        *,
        direction: Direction = "both",
        relation: str | None = None,
        limit: int = 100,
        privacy_ceiling: int | None = None,
    ) -> list[Edge]:
        """The live edges of the memory ``node_id`` (any of its versions), heaviest first.

        ``direction``: ``"out"`` (it is the source), ``"in"`` (the target) or
        ``"both"``; ``relation`` keeps one relation. Edges written on earlier
        versions of the memory are its own, as in activation. An edge is left
        out when it was forgotten, or its other end - followed to that end's
        current version - was forgotten, erased or is above
        ``privacy_ceiling`` (default: the store's). ``src`` and ``dst`` are
        the versions the edge was written for; ``learned_weight`` is its
        Hebbian weight. A forgotten or erased ``node_id`` raises.

        >>> [e.relation for e in ns.edges(home.id, direction="out")]  # doctest: +SKIP
        ['lives_in']
        """
        return self._graph.edges(
            node_id,
            direction=direction,
            relation=relation,
            limit=limit,
            privacy_ceiling=privacy_ceiling,
        )

    def neighbours(
        self,
        node_id: int,
        *,
        depth: int = 1,
        direction: Direction = "both",
        relation: str | None = None,
        limit: int = 50,
        privacy_ceiling: int | None = None,
    ) -> list[Neighbour]:
        """The current memories within ``depth`` (1 to 3) live edges of ``node_id``,
        nearest first, each with its ``distance``; at most ``limit``.

        The edges followed are those :meth:`edges` lists (``direction`` and
        ``relation`` apply at every step); the memory itself is left out.
        """
        return self._graph.neighbours(
            node_id,
            depth=depth,
            direction=direction,
            relation=relation,
            limit=limit,
            privacy_ceiling=privacy_ceiling,
        )

    def similarity(self, a: int, b: int, *, privacy_ceiling: int | None = None) -> float:
        """Cosine similarity of the stored vectors of nodes ``a`` and ``b`` for the store's
        embedder (-1 to 1).

        Raises :class:`~memstore.errors.NodeStateError` when one has no vector
        for that embedder (``memstore embed rebuild`` computes them), and
        :class:`~memstore.errors.NodeNotFoundError` for a node above
        ``privacy_ceiling`` (default: the store's).
        """
        return self._graph.similarity(a, b, privacy_ceiling=privacy_ceiling)

    def strengthen(self, a: int, b: int, delta: float) -> list[Edge]:
        """Co-activate two memories without a query: move the learned (Hebbian) weight of
        every live excitatory edge between them by ``delta`` (-1 to 1, not 0), kept
        within 0 and 1; returns those edges with their new ``learned_weight``.

        The same learned weight activation's ``learn=True`` raises and
        :meth:`decay_hebbian` fades (docs/activation.md); authored weights
        never change. A positive ``delta`` fires the edges (their fire count
        and time). No such edge: :class:`~memstore.errors.InvalidInputError`
        (link them first).
        """
        return self._graph.strengthen(a, b, delta)

    # --- export (appended: docs/operations.md, "Export and restore") --------------------

    def export(
        self,
        destination: str | os.PathLike[str] | IO[bytes],
        *,
        with_vectors: bool = False,
        privacy_ceiling: int | None = None,
    ) -> ExportSummary:
        """Write the whole namespace to ``destination`` (a path, or a binary stream) as JSON
        lines, from one consistent snapshot, in constant memory.

        Every version (current, superseded, forgotten, redacted — an erased
        version as the table now holds it: its content never appears), edge,
        tombstone, supersession, redaction record, learned state, confirmation,
        procedure outcome and role, proposal with its decision, and the audit
        log; ``with_vectors`` adds the store's vectors (by default a restore
        re-embeds). Activation logs are left out. A whole namespace needs
        every privacy level: ``privacy_ceiling``
        (default: the store's) below 3 raises
        :class:`~memstore.errors.InvalidInputError`. A path is written beside
        and renamed once complete. Restore with :meth:`MemoryStore.restore`.

        >>> ns.export("agent-7.jsonl").rows["node"]                    # doctest: +SKIP
        42
        """
        from memstore.services import snapshot

        return snapshot.export(
            self._scope, destination, with_vectors=with_vectors, privacy_ceiling=privacy_ceiling
        )


__all__ = ["Namespace", "check_namespace_name", "checked_ceiling"]
