"""Recall in one namespace, with the state that steers it.

:class:`Recaller` owns what a recall reads before it plans its statement and
keeps between calls: the namespace's sizes (cached for a minute: they pick the
plan and feed BM25) and the document counts of its common terms (sampled when
first needed, refreshed once the namespace has grown; memstore/recall/terms.py).
It plans a recall (:meth:`Recaller.plan`), runs it on its own transaction
(:meth:`Recaller.recall`) or on one already open (:meth:`Recaller.run_in`), and
keeps the term counts every recall statement reports (:meth:`Recaller.learn`).
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from memstore.db.transaction import (
    Statement,
    in_one_round_trip,
    known_confined,
    note_confined,
    statements_in_one_round_trip,
)
from memstore.embedding import cache
from memstore.errors import InvalidInputError
from memstore.graph.namespaces import name_check
from memstore.graph.rows import (
    STATS_BY_NAME_SQL,
    STATS_SQL,
    NamespaceStats,
    stats_of,
    stats_params,
    stats_row,
)
from memstore.inputs import validated
from memstore.models import MISSING_IDS_SHOWN, Hit, Recalled
from memstore.recall import (
    RecallPlan,
    RecallQuery,
    TermCounts,
    learn_term_counts,
    run_in,
    sample_term_counts,
    searched_exactly,
    shares_index,
)
from memstore.recall import hits as recall_hits
from memstore.recall import plan as recall_plan
from memstore.recall.terms import CACHED_DF_MIN
from memstore.services.scope import NO_NAMESPACE, Scope

STATS_TTL = 60.0  # seconds


class Recaller:
    """The recall verb of one namespace and its caches (one per namespace handle)."""

    def __init__(self, scope: Scope):
        self.scope = scope

    # What the store keeps of the namespace (memstore/services/scope.py NamespaceState),
    # shared by every handle of it.

    @property
    def cached_stats(self) -> tuple[int, NamespaceStats, float] | None:
        """(namespace id, sizes, when read), or None before they are read."""
        return self.scope.state.stats

    @cached_stats.setter
    def cached_stats(self, value: tuple[int, NamespaceStats, float] | None) -> None:
        self.scope.state.stats = value

    @property
    def term_counts(self) -> TermCounts:
        """The document counts of the namespace's common terms (memstore/recall/terms.py)."""
        return self.scope.state.term_counts

    @term_counts.setter
    def term_counts(self, value: TermCounts) -> None:
        self.scope.state.term_counts = value

    @property
    def cached_missing(self) -> tuple[tuple[int, int | None, float], tuple[int, list[int]]] | None:
        """(namespace, ceiling, the sizes it was counted with) -> what lacks a vector."""
        return self.scope.state.missing

    @cached_missing.setter
    def cached_missing(
        self, value: tuple[tuple[int, int | None, float], tuple[int, list[int]]] | None
    ) -> None:
        self.scope.state.missing = value

    def recall(self, query: str | None, **options: Any) -> Recalled:
        """See :meth:`memstore.namespace.Namespace.recall` (``options`` are its keywords)."""
        options["privacy_ceiling"] = self.scope.ceiling(options.get("privacy_ceiling"))
        given = options.pop("vector", None)
        if query is None:
            if given is None:
                raise InvalidInputError("recall needs query text, a vector, or both", field="query")
            if options.get("mode", "hybrid") == "hybrid":
                options["mode"] = "semantic"  # a vector alone answers by meaning only
        spec = validated(RecallQuery, text=query, **options)
        vector: np.ndarray[Any, Any] | None
        if given is not None:
            if spec.mode == "lexical":
                raise InvalidInputError(
                    "a lexical recall uses no vector: drop vector= or choose another mode",
                    field="vector",
                )
            vector = cache.check_vector(given, self.scope.embedder.dims, field="vector")
        else:
            vector = self.vector(spec)
        for _ in range(2):
            answered = self.recall_rows(spec, vector)
            if answered is not None:
                spec, rows = answered
                break
            # The kept id no longer had this name: looked up afresh, once.
        else:
            rows = []
        missing, shown = self.missing_vectors(spec)
        self.learn(rows)
        return Recalled(
            recall_hits(rows, spec, self.scope.embedder, self.scope.name),
            model=self.scope.embedder.name,
            namespace=self.scope.name,
            missing_vectors=missing,
            missing_ids=shown,
        )

    def recall_rows(
        self, spec: RecallQuery, vector: np.ndarray[Any, Any] | None
    ) -> tuple[RecallQuery, list[dict[str, Any]]] | None:
        """The recall as run (a semantic one runs hybrid while memories lack vectors) and
        its statement's rows, in one round trip once the namespace is known and its sizes
        kept (stale sizes are read again beside the recall, for the next one); None when
        the namespace's kept id turned out to have another name."""
        self.meet()
        self.scope.exists()  # another process may have created it since
        namespace_id = self.scope.id
        missing, _ = self.missing_vectors(spec)
        if missing and spec.mode == "semantic" and spec.text is not None:
            # Memories without a vector are found by their text (docs/recall.md).
            spec = spec.model_copy(update={"mode": "hybrid"})
        run = self.plan(spec, vector)
        stale = self.stats_due()
        statements: list[Statement] = [(run.statement, run.params)]
        if namespace_id:  # the name check, with the sizes when they are due
            statements.append(
                self.stats_statement(namespace_id) if stale else name_check(namespace_id)
            )
        found = self.scope.read(
            lambda engine: statements_in_one_round_trip(
                engine,
                namespace_id,
                statements,
                privacy_ceiling=spec.privacy_ceiling,
                settings=run.settings,
                prepare=self.scope.settings.prepared_statements,
            )
        )
        if namespace_id:
            (row,) = found[1]
            if not self.scope.still_named(namespace_id, row["name"]):
                return None
            if stale:
                self.keep_stats(namespace_id, row)
        return spec, found[0]

    def meet(self) -> None:
        """A namespace the store knows nothing of yet: for a role that row-level security
        does not confine, its id and its sizes in one round trip (a confined role must
        declare the id before it may count the rows: :meth:`Scope.exists` looks it up,
        :meth:`stats` reads the sizes)."""
        scope = self.scope
        if scope.state.id is not None or known_confined(scope.engine) is not False:
            return
        model, dims = scope.embedder.name, scope.embedder.dims
        params = {
            **stats_params(NO_NAMESPACE, model, f"memstore.{cache.index_name(model, dims)}"),
            "name": scope.name,
        }
        # On the primary, as Scope.exists looks up: reads need not wait for a replica.
        looking = scope.reads.read_on_primary() if scope.reads else nullcontext()
        with looking:
            (row,) = in_one_round_trip(scope.engine, NO_NAMESPACE, STATS_BY_NAME_SQL, params)
        if row["id"] is not None and scope.state.id is None:
            scope.state.id = int(row["id"])
            self.keep_stats(scope.state.id, row)

    def missing_vectors(self, spec: RecallQuery) -> tuple[int, list[int]]:
        """How many current memories up to the recall's ceiling have no vector for the
        store's embedder, and the first of their ids (none for a lexical recall).

        Counted only when the namespace's cached sizes show fewer vectors than
        nodes (e.g. a namespace embedded by another model, or redactions), and
        then kept as long as those sizes are: a recall pays nothing for it
        otherwise."""
        if spec.mode == "lexical" or not self.scope.id:
            return 0, []
        stats = self.stats()
        if stats.vectors >= stats.documents:
            return 0, []
        assert self.cached_stats is not None  # stats() has just kept them
        key = (self.scope.id, spec.privacy_ceiling, self.cached_stats[2])
        if self.cached_missing is None or self.cached_missing[0] != key:
            with self.scope.connection(privacy_ceiling=spec.privacy_ceiling) as conn:
                found = cache.missing_vectors(
                    conn, self.scope.id, self.scope.embedder.name, shown=MISSING_IDS_SHOWN
                )
            self.cached_missing = (key, found)
        return self.cached_missing[1]

    def vector(self, spec: RecallQuery) -> np.ndarray[Any, Any] | None:
        """The query's vector, or None for a lexical recall or a text with nothing to embed
        (e.g. only punctuation)."""
        if spec.mode == "lexical" or spec.text is None:
            return None
        vector = self.scope.embedder.embed([spec.text])[0]
        return vector if vector.any() else None

    def run_in(
        self, conn: Connection, spec: RecallQuery, vector: np.ndarray[Any, Any] | None
    ) -> list[Hit]:
        """Run a validated recall on an open connection (for composite reads)."""
        rows = run_in(
            conn, self.plan(spec, vector, conn), prepare=self.scope.settings.prepared_statements
        )
        self.learn(rows)
        return recall_hits(rows, spec, self.scope.embedder, self.scope.name)

    def plan(
        self,
        spec: RecallQuery,
        vector: np.ndarray[Any, Any] | None,
        conn: Connection | None = None,
    ) -> RecallPlan:
        """The statement of a validated recall in this namespace, not yet run (for
        reads that send it with others); :meth:`learn` takes its rows."""
        stats = self.stats(conn)
        terms = None
        if spec.mode != "semantic" and not stats.confined:
            terms = self.common_terms(stats, conn)
        return recall_plan(
            self.scope.id,
            spec,
            vector,
            self.scope.embedder,
            exact=vector is not None and searched_exactly(stats.vectors, stats.indexed),
            confined=stats.confined,
            text_stats=(stats.documents, stats.avg_length),
            terms=terms,
            shares_index=shares_index(stats.vectors, stats.indexed),
        )

    def learn(self, rows: list[dict[str, Any]]) -> None:
        """Keep the term counts a recall statement's rows report (see :meth:`plan`)."""
        learn_term_counts(self.term_counts, rows)

    def common_terms(self, stats: NamespaceStats, conn: Connection | None = None) -> TermCounts:
        """Document counts of the namespace's common terms, for BM25: estimated from a sample
        when a lexical or hybrid recall first needs them, and again once the namespace has
        grown by a tenth (memstore/recall/terms.py). Never for a role that row-level security
        confines: its counts depend on its privacy ceiling."""
        if not self.term_counts.current_for(stats.documents):
            if stats.documents < CACHED_DF_MIN:
                # No term can be common in so few documents: nothing to sample.
                self.term_counts = TermCounts(stats.documents)
                return self.term_counts
            if conn is None:
                with self.scope.reading() as fresh:
                    return self.common_terms(stats, fresh.conn)
            self.term_counts = sample_term_counts(conn, self.scope.id, stats.documents)
        return self.term_counts

    def stats(self, conn: Connection | None = None) -> NamespaceStats:
        """Sizes that pick a plan and feed BM25, kept for a minute: read on ``conn`` (a
        composite read's transaction) once older, else in one round trip of their own
        when none are kept for the namespace.

        They only steer ranking and plan choice, so slightly stale is fine: without
        ``conn`` (a recall of its own) kept sizes older than a minute still serve, and
        the recall reads them again beside its statement (:meth:`stats_due`).
        """
        cached = self.cached_stats
        namespace_id = self.scope.id
        if cached is not None and cached[0] == namespace_id:
            if conn is None or time.monotonic() - cached[2] <= STATS_TTL:
                return cached[1]
        statement, params = self.stats_statement(namespace_id)
        if conn is None:
            (row,) = self.scope.read(
                lambda engine: in_one_round_trip(engine, namespace_id, statement, params)
            )
        else:
            row = stats_row(conn, (statement, params))
        return self.keep_stats(namespace_id, row)

    def stats_due(self) -> bool:
        """Whether the kept sizes are older than :data:`STATS_TTL` (or none are kept)."""
        cached = self.cached_stats
        return (
            cached is None or cached[0] != self.scope.id or time.monotonic() - cached[2] > STATS_TTL
        )

    def stats_statement(self, namespace_id: int) -> Statement:
        """The statement of the namespace's sizes and name (memstore.graph.rows.STATS_SQL)."""
        model, dims = self.scope.embedder.name, self.scope.embedder.dims
        return STATS_SQL, stats_params(
            namespace_id, model, f"memstore.{cache.index_name(model, dims)}"
        )

    def keep_stats(self, namespace_id: int, row: dict[str, Any]) -> NamespaceStats:
        """Keep the sizes a :meth:`stats_statement` read."""
        stats = stats_of(row)
        note_confined(self.scope.engine, stats.confined)
        if namespace_id == self.scope.id:
            self.cached_stats = (namespace_id, stats, time.monotonic())
        return stats
