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
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from memstore.db.transaction import confined, in_one_round_trip
from memstore.embedding import cache
from memstore.errors import InvalidInputError
from memstore.graph.rows import NamespaceStats, namespace_stats
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
from memstore.services.scope import Scope

STATS_TTL = 60.0  # seconds


class Recaller:
    """The recall verb of one namespace and its caches (one per namespace handle)."""

    def __init__(self, scope: Scope):
        self.scope = scope
        # (namespace id, sizes, when read): a namespace created since is read again.
        self.cached_stats: tuple[int, NamespaceStats, float] | None = None
        self.term_counts = TermCounts()
        # (namespace, ceiling, the sizes it was counted with) -> what lacks a vector.
        self.cached_missing: tuple[tuple[int, int | None, float], tuple[int, list[int]]] | None = (
            None
        )

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
        self.scope.exists()  # another process may have created it since
        missing, shown = self.missing_vectors(spec)
        if missing and spec.mode == "semantic" and spec.text is not None:
            # Memories without a vector are found by their text (docs/recall.md).
            spec = spec.model_copy(update={"mode": "hybrid"})
        run = self.plan(spec, vector)
        rows = self.scope.read(
            lambda engine: in_one_round_trip(
                engine,
                self.scope.id,
                run.statement,
                run.params,
                privacy_ceiling=spec.privacy_ceiling,
                settings=run.settings,
                prepare=self.scope.settings.prepared_statements,
            )
        )
        self.learn(rows)
        return Recalled(
            recall_hits(rows, spec, self.scope.embedder, self.scope.name),
            model=self.scope.embedder.name,
            namespace=self.scope.name,
            missing_vectors=missing,
            missing_ids=shown,
        )

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
            if conn is None:
                with self.scope.reading() as fresh:
                    return self.common_terms(stats, fresh.conn)
            self.term_counts = sample_term_counts(conn, self.scope.id, stats.documents)
        return self.term_counts

    def stats(self, conn: Connection | None = None) -> NamespaceStats:
        """Sizes that pick a plan and feed BM25, cached for a minute (read on ``conn``, or a
        transaction of their own).

        They only steer ranking and plan choice, so slightly stale is fine.
        """
        now = time.monotonic()
        cached = self.cached_stats
        if cached is None or cached[0] != self.scope.id or now - cached[2] > STATS_TTL:
            if conn is None:
                with self.scope.reading() as fresh:
                    return self.stats(fresh.conn)
            model, dims = self.scope.embedder.name, self.scope.embedder.dims
            stats = namespace_stats(conn, self.scope.id, model)._replace(
                indexed=cache.indexed_vectors(conn, model, dims), confined=confined(conn)
            )
            self.cached_stats = (self.scope.id, stats, now)
            return stats
        return cached[1]
