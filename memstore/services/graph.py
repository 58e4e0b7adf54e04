"""Graph reads of one namespace: a memory's edges and neighbours, two memories'
similarity, and an explicit strengthening of the edges between two memories.

A memory is named by any of its versions' ids and stands for its current
version, as activation seeds do: edges stay on the version they were written
for, and a memory's edges are those of all its versions (docs/recall.md,
"Graph reads"). Edges are followed by the activation pull's rules
(sql/05_neighbourhood.sql): live edges to visible, current memories only.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Connection, Engine

from memstore.db.transaction import Statement, pipelined_namespace_transaction
from memstore.errors import (
    InvalidInputError,
    NodeNotFoundError,
    NodeRedactedError,
    NodeStateError,
    NodeTombstonedError,
)
from memstore.graph import lineage as lineage_sql
from memstore.graph import reads
from memstore.graph.namespaces import name_check
from memstore.graph.rows import fetch_nodes, nodes_of, nodes_statement
from memstore.inputs import checked_id, validated
from memstore.models import Edge, Neighbour, Node, RowId
from memstore.services.scope import Scope
from memstore.tx import NamespaceTransaction

MAX_DEPTH = 3
"""Neighbours are at most this many edges away: past three hops a hub reaches
much of a graph (docs/architecture.md, the pull's measurements)."""
MAX_EDGES = 10_000
MAX_NEIGHBOURS = 10_000

Direction = Literal["both", "out", "in"]
Relation = Annotated[str, Field(min_length=1, max_length=64)]


class EdgesQuery(BaseModel):
    """The arguments of :meth:`~memstore.namespace.Namespace.edges`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node_id: RowId
    direction: Direction = "both"
    relation: Relation | None = None
    limit: int = Field(default=100, ge=1, le=MAX_EDGES, strict=True)


class NeighboursQuery(BaseModel):
    """The arguments of :meth:`~memstore.namespace.Namespace.neighbours`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node_id: RowId
    depth: int = Field(default=1, ge=1, le=MAX_DEPTH, strict=True)
    direction: Direction = "both"
    relation: Relation | None = None
    limit: int = Field(default=50, ge=1, le=MAX_NEIGHBOURS, strict=True)


class SimilarityQuery(BaseModel):
    """The arguments of :meth:`~memstore.namespace.Namespace.similarity`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    a: RowId
    b: RowId


class Strengthening(BaseModel):
    """The arguments of :meth:`~memstore.namespace.Namespace.strengthen`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    a: RowId
    b: RowId
    delta: float = Field(ge=-1.0, le=1.0, allow_inf_nan=False)


class GraphReader:
    """The graph reads (and the explicit co-activation) of one namespace."""

    def __init__(self, scope: Scope):
        self.scope = scope

    def edges(
        self, node_id: int, *, privacy_ceiling: int | None = None, **options: object
    ) -> list[Edge]:
        """See :meth:`memstore.namespace.Namespace.edges`: one round trip, the memory's
        checks answered beside the edges."""
        query = validated(EdgesQuery, node_id=node_id, **options)
        ceiling = self.scope.ceiling(privacy_ceiling)
        for _ in range(2):
            self.scope.exists()
            namespace_id = self.scope.id
            params = reads.edge_params(
                namespace_id, query.node_id, query.direction, query.relation, query.limit
            )
            with self.scope.pipelined_reading(privacy_ceiling=ceiling) as tx:
                verdict, rows, name = reads.checked_read(
                    tx, namespace_id, query.node_id, "edges", params, commit=True
                )
            if self.scope.still_named(namespace_id, name):
                self._check(verdict, query.node_id)
                return [live.edge for live in reads.edges_of(rows, self.scope.name)]
        self._missing(query.node_id)  # the namespace's name went elsewhere twice

    def neighbours(
        self, node_id: int, *, privacy_ceiling: int | None = None, **options: object
    ) -> list[Neighbour]:
        """See :meth:`memstore.namespace.Namespace.neighbours`: the memory's checks and the
        walk in one round trip, the nodes found in a second (with COMMIT)."""
        query = validated(NeighboursQuery, node_id=node_id, **options)
        ceiling = self.scope.ceiling(privacy_ceiling)
        for _ in range(2):
            self.scope.exists()
            namespace_id = self.scope.id
            params = reads.walk_params(
                namespace_id,
                query.node_id,
                query.depth,
                query.direction,
                query.relation,
                query.limit,
            )
            with self.scope.pipelined_reading(privacy_ceiling=ceiling) as tx:
                verdict, rows, name = reads.checked_read(
                    tx, namespace_id, query.node_id, "neighbours", params, commit=False
                )
                if not self.scope.still_named(namespace_id, name):
                    continue
                memory = self._check(verdict, query.node_id)
                near = reads.nearest(
                    ((row["id"], row["distance"]) for row in rows), memory, query.limit
                )
                found = fetch_nodes(tx.conn, namespace_id, self.scope.name, [i for i, _ in near])
            return [Neighbour(node=found[i], distance=d) for i, d in near if i in found]
        self._missing(query.node_id)  # the namespace's name went elsewhere twice

    def node(self, node_id: int, *, privacy_ceiling: int | None = None) -> Node:
        """See :meth:`memstore.namespace.Namespace.get`: one round trip (the node, the
        namespace's name check, BEGIN, the scope and COMMIT in one pipeline)."""
        ceiling = self.scope.ceiling(privacy_ceiling)
        node_id = checked_id(node_id)
        (rows,) = self._in_one_round_trip(
            ceiling, node_id, lambda ns, conn: [nodes_statement(conn, ns, [node_id])]
        )
        found = nodes_of(rows, self.scope.name)
        if node_id not in found:
            self._missing(node_id)
        return found[node_id]

    def lineage(self, node_id: int, *, privacy_ceiling: int | None = None) -> list[Node]:
        """See :meth:`memstore.namespace.Namespace.lineage`: two round trips (the node,
        its versions' ids and the name check; then the versions, with COMMIT)."""
        ceiling = self.scope.ceiling(privacy_ceiling)
        node_id = checked_id(node_id)
        for _ in range(2):
            self.scope.exists()
            read = partial(self._lineage, self.scope.id, node_id, ceiling)
            nodes = self.scope.read(read)
            if nodes is not None:
                return nodes
        self._missing(node_id)  # the namespace's name went elsewhere twice

    def _lineage(
        self, namespace_id: int, node_id: int, ceiling: int, engine: Engine
    ) -> list[Node] | None:
        """:meth:`lineage` on ``engine``; None when the kept id had lost the name."""
        with pipelined_namespace_transaction(engine, namespace_id, privacy_ceiling=ceiling) as tx:
            asked, versions, named = tx.rows(
                [
                    nodes_statement(tx.conn, namespace_id, [node_id]),
                    lineage_sql.lineage_statement(tx.conn, namespace_id, node_id),
                    name_check(namespace_id),
                ],
                commit=False,
            )
            if not self.scope.still_named(namespace_id, named[0]["name"] if named else None):
                return None
            if not asked:
                self._missing(node_id)
            ids = [int(row["id"]) for row in versions]
            (rows,) = tx.rows([nodes_statement(tx.conn, namespace_id, ids)], commit=True)
        found = nodes_of(rows, self.scope.name)
        return [found[i] for i in ids if i in found]

    def _in_one_round_trip(
        self,
        ceiling: int,
        node_id: int,
        statements: Callable[[int, Connection], list[Statement]],
    ) -> list[list[dict[str, Any]]]:
        """The rows of ``statements(namespace id, connection)``, read in one round trip
        with the namespace's name check; read again once if the kept id had lost the name
        (the memory ``node_id`` is missing if it moved twice, as :meth:`edges` says)."""
        for _ in range(2):
            found, name = self.scope.rows_once(ceiling, statements)
            if self.scope.still_named(self.scope.id, name):
                return found
        self._missing(node_id)  # the namespace's name went elsewhere twice

    def similarity(self, a: int, b: int, *, privacy_ceiling: int | None = None) -> float:
        """See :meth:`memstore.namespace.Namespace.similarity`: one round trip (both
        nodes and their vectors)."""
        ceiling = self.scope.ceiling(privacy_ceiling)
        query = validated(SimilarityQuery, a=a, b=b)
        model = self.scope.embedder.name
        both = [query.a, query.b]
        rows, stored = self._in_one_round_trip(
            ceiling,
            query.a,
            lambda ns, conn: [
                nodes_statement(conn, ns, both),
                reads.vectors_statement(ns, model, both),
            ],
        )
        found = nodes_of(rows, self.scope.name)
        for node_id in both:  # raises for the first it cannot see
            if node_id not in found:
                self._missing(node_id)
        nodes = [found[query.a], found[query.b]]
        vectors = reads.vectors_of(stored)
        for node in nodes:
            if node.id not in vectors:
                raise NodeStateError(
                    f"node {node.id} has no vector for the embedder {model!r}"
                    f" ({self._why_no_vector(node)}); compute it with"
                    f" `memstore embed rebuild -n {self.scope.name}`",
                    node_id=node.id,
                )
        return reads.cosine(vectors[query.a], vectors[query.b])

    def strengthen(self, a: int, b: int, delta: float) -> list[Edge]:
        """See :meth:`memstore.namespace.Namespace.strengthen`."""
        if isinstance(delta, bool):
            raise InvalidInputError("delta must be a number from -1 to 1", field="delta")
        change = validated(Strengthening, a=a, b=b, delta=delta)
        if change.delta == 0:
            raise InvalidInputError("delta must not be 0: nothing would change", field="delta")
        with self.scope.transaction() as tx:
            first, second = self._memory(tx, change.a), self._memory(tx, change.b)
            if first == second:
                raise InvalidInputError(
                    f"nodes {change.a} and {change.b} are versions of one memory", field="b"
                )
            between = [
                live.edge
                for live in reads.live_edges(
                    tx.conn,
                    tx.id,
                    self.scope.name,
                    first,
                    direction="both",
                    relation=None,
                    limit=MAX_EDGES,
                )
                if live.far == second and not live.edge.inhibitory
            ]
            if not between:
                raise InvalidInputError(
                    f"no live excitatory edge links node {change.a} and node {change.b}:"
                    " link them first (ns.link), then strengthen the link",
                    field="b",
                )
            weights = reads.change_learned_weights(
                tx.conn, tx.id, [edge.id for edge in between], change.delta
            )
        return [
            edge.model_copy(update={"learned_weight": weights[edge.id]})
            for edge in sorted(between, key=lambda edge: edge.id)
        ]

    def _memory(self, tx: NamespaceTransaction, node_id: int) -> int:
        """The current version of the memory ``node_id`` is a version of; raises when the
        caller cannot see it, or the memory was forgotten or erased."""
        tx.node(node_id)
        latest = lineage_sql.current_version(tx.conn, tx.id, node_id)
        if latest != node_id and latest not in fetch_nodes(tx.conn, tx.id, tx.name, [latest]):
            tx.raise_missing(node_id)  # its current version is above the ceiling
        tx.current(latest)  # raises for a forgotten or redacted memory
        return latest

    def _check(self, verdict: dict[str, object] | None, node_id: int) -> int:
        """The current version of the memory ``node_id`` is a version of, from the verdict
        a read sent beside its rows (reads.sql, ``memory``); raises what :meth:`_memory`
        raises, with the same messages, when the caller cannot see it, or the memory was
        forgotten or erased."""
        if verdict is None:
            self._missing(node_id)
        latest = int(str(verdict["current"]))
        if latest != node_id and not verdict["visible"]:
            self._missing(node_id)  # its current version is above the ceiling
        if verdict["redacted"]:
            raise NodeRedactedError(f"node {latest} was redacted", node_id=latest)
        if verdict["tombstoned"]:
            raise NodeTombstonedError(f"node {latest} was forgotten", node_id=latest)
        return latest

    def _missing(self, node_id: int) -> NoReturn:
        """The error for a node id the caller cannot see (NamespaceTransaction.raise_missing:
        the same whether it was never used, is another namespace's or above the ceiling)."""
        raise NodeNotFoundError(
            f"node {node_id} does not exist in namespace {self.scope.name!r}",
            namespace=self.scope.name,
            target_id=node_id,
        )

    @staticmethod
    def _why_no_vector(node: Node) -> str:
        if node.status.value == "redacted":
            return "it was redacted"
        return "the namespace was embedded by another model, or the vector was dropped"
