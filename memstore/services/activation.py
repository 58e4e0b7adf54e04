"""Spreading activation in one namespace, and the fading of what it learned.

:class:`Activator` seeds activation from a recall (through the namespace's
:class:`~memstore.services.recall.Recaller`, on the same transaction) and from
given ids, then hands the pull and the scoring to :mod:`memstore.activation`;
it also fades learned edge weights (:meth:`Activator.decay_hebbian`).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from memstore import activation
from memstore.activation import learning
from memstore.activation.model import ActivateRequest, Activation
from memstore.db.transaction import PipelinedTransaction, pipelined_namespace_transaction
from memstore.errors import InvalidInputError
from memstore.graph import lineage as lineage_sql
from memstore.graph.namespaces import name_check
from memstore.graph.rows import fetch_nodes
from memstore.inputs import validated
from memstore.models import NodeStatus
from memstore.recall import RecallQuery
from memstore.services.recall import Recaller
from memstore.services.scope import NO_NAMESPACE, Scope
from memstore.tx import NamespaceTransaction


class _Renamed(Exception):
    """An activation's transaction found that the namespace's kept id lost its name."""


class Activator:
    """The activation verbs of one namespace."""

    def __init__(self, scope: Scope, recaller: Recaller):
        self.scope = scope
        self.recaller = recaller

    def activate(self, query: str | None, **options: Any) -> Activation:
        """See :meth:`memstore.namespace.Namespace.activate` (``options`` are its keywords)."""
        scope = self.scope
        options["privacy_ceiling"] = scope.ceiling(options.get("privacy_ceiling"))
        scope.exists()  # another process may have created it since
        if options.get("params") is None:
            options.pop("params", None)
        request = validated(ActivateRequest, query=query, **options)
        started = time.perf_counter()
        vector = None
        if request.query is not None:
            vector = scope.embedder.embed([request.query])[0]
            if not vector.any():
                vector = None
        for _ in range(2):
            try:
                result = self._run(request, vector, started)
                break
            except _Renamed:
                scope.exists()  # the kept id was dropped: the name is looked up again
        else:
            scope.renamed()
        if request.query is None:
            return result
        missing, shown = self.recaller.missing_vectors(
            validated(RecallQuery, text=request.query, privacy_ceiling=request.privacy_ceiling)
        )
        if not missing:
            return result
        return result.model_copy(update={"missing_vectors": missing, "missing_ids": shown})

    def _run(self, request: ActivateRequest, vector: Any, started: float) -> Activation:
        """One activation on one transaction; raises :class:`_Renamed` (the transaction
        rolled back) when the query's transaction finds that the kept id lost its name."""
        scope = self.scope
        namespace_id = scope.id
        # Learning writes: an activation that learns runs on the primary.
        opened = (
            pipelined_namespace_transaction(
                scope.engine, namespace_id, privacy_ceiling=request.privacy_ceiling
            )
            if request.learn
            else scope.pipelined_reading(privacy_ceiling=request.privacy_ceiling)
        )
        with opened as tx:
            conn = tx.conn
            start: dict[int, float] = {}
            given = request.seeds or []
            if request.query is not None:
                # The transaction opens now (the recall's statistics may be read
                # first), and the kept id's name is checked in that round trip.
                if not self._opened_as_named(tx, namespace_id):
                    raise _Renamed
                hits = self.recaller.run_in(
                    conn,
                    validated(
                        RecallQuery,
                        text=request.query,
                        k=request.params.seed_count,
                        as_of=request.as_of,
                        privacy_ceiling=request.privacy_ceiling,
                        tags=request.tags,
                        # Plain fused recall: activation spreads through the edges
                        # itself, so seeding from recall's graph evidence would count
                        # the graph twice and show a neighbour as a seed.
                        neighbour_share=0.0,
                    ),
                    vector,
                )
                top = max((hit.score for hit in hits), default=0.0) or 1.0
                for hit in hits:
                    start[hit.node.id] = max(start.get(hit.node.id, 0.0), hit.score / top)
            seeded = round((time.perf_counter() - started) * 1000, 3)
            result = activation.run(
                conn,
                scope.id,
                scope.name,
                start,
                request,
                vector=vector,
                model=scope.embedder.name,
                timings={"seed": seeded},
                # The pull resolves and checks the given ids in its own round
                # trip; the full check runs only to raise for a bad one.
                given=given,
                check_given=lambda: self._seed_ids(conn, given, request.as_of),
                tx=tx,
                prepare=scope.settings.prepared_statements,
            )
        return result

    def _opened_as_named(self, tx: PipelinedTransaction, namespace_id: int) -> bool:
        """Start ``tx`` with the name check of ``namespace_id`` in its first round trip;
        whether the namespace still has the scope's name (:meth:`Scope.still_named`)."""
        if namespace_id == NO_NAMESPACE:
            tx.start()
            return True
        query, params = name_check(namespace_id)
        with tx.raw.cursor() as cursor:
            with tx.pipeline():
                cursor.execute(query, params)
            row = cursor.fetchone()
        return self.scope.still_named(namespace_id, row[0] if row else None)

    def _seed_ids(
        self, conn: Connection, ids: list[int], as_of: datetime | None
    ) -> dict[int, float]:
        """Given seeds as current ids (strength 1); unknown ids raise.

        Without ``as_of`` a forgotten or redacted seed raises too; with it, the
        pull decides what was visible then. Two round trips whatever the count:
        :meth:`activate` calls it only when the pull's own report on the seeds
        (same checks, no extra round trip) found one to raise for.
        """
        tx = NamespaceTransaction(self.scope, conn)
        found = fetch_nodes(conn, self.scope.id, self.scope.name, ids)
        current = lineage_sql.current_versions(conn, self.scope.id, ids, as_of)
        if as_of is None:
            newer = set(current.values()) - set(found)
            found |= fetch_nodes(conn, self.scope.id, self.scope.name, newer)
        for node_id in ids:
            # A seed whose current version is above the ceiling stands for nothing
            # the caller may see: answered like a missing id.
            if node_id not in found or current[node_id] not in found:
                tx.raise_missing(node_id)
            if as_of is None and found[current[node_id]].status is not NodeStatus.CURRENT:
                tx.current(current[node_id])  # raises: the memory was forgotten or redacted
        return {current[node_id]: 1.0 for node_id in ids}

    def decay_hebbian(self, factor: float, *, unused_for: timedelta | None = None) -> int:
        """See :meth:`memstore.namespace.Namespace.decay_hebbian`."""
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
        if not self.scope.exists():
            return 0  # nothing written yet: nothing to fade, no namespace to create
        with self.scope.connection() as conn:
            return learning.decay_hebbian(conn, self.scope.id, float(factor), unused_for)
