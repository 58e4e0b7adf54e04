"""Reading nodes and edges back as models, with their status."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa
from psycopg.rows import dict_row
from sqlalchemy.engine import Connection

from memstore.db.queries import any_of
from memstore.db.schema import edges, embeddings, nodes, redactions, supersessions, tombstones
from memstore.db.transaction import Statement
from memstore.graph.confirmations import last_confirmed
from memstore.models import Edge, Node, NodeStatus

NODE_FIELDS = (
    "id", "kind", "node_type", "tier", "layer", "label", "content", "data", "importance",
    "confidence", "decay_rate", "privacy", "protected", "subject", "scope", "source", "actor",
    "run_id", "observed_at", "valid_from", "valid_to", "recorded_at", "tags",
)  # fmt: skip


# The ceiling a namespace transaction declared (memstore.db.transaction), read
# by the very expression row-level security uses (sql/07_row_security.sql): the
# service's own filter and the policy cannot disagree, and a statement run
# where no ceiling was declared returns no node at all.
CEILING_SQL = "nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint"


def within_ceiling(node: sa.FromClause) -> sa.ColumnElement[bool]:
    """Whether ``node``'s privacy is at most the transaction's declared ceiling.

    The owner and superusers bypass row-level security, so every read of
    nodes filters with this as well (docs/security.md).
    """
    return node.c.privacy <= sa.literal_column(CEILING_SQL)


def superseded_by(node: sa.FromClause, namespace_id: int) -> sa.ScalarSelect[Any]:
    """The id of the version that replaced ``node``, or NULL — also when that version is
    above the transaction's privacy ceiling: its id must not tell that it exists."""
    newer = nodes.alias("newer")
    return (
        sa.select(supersessions.c.new_id)
        .where(supersessions.c.namespace_id == namespace_id)
        .where(supersessions.c.old_id == node.c.id)
        .where(
            sa.exists().where(
                newer.c.namespace_id == namespace_id,
                newer.c.id == supersessions.c.new_id,
                within_ceiling(newer),
            )
        )
        .scalar_subquery()
    )


def is_superseded(node: sa.FromClause, namespace_id: int) -> sa.Exists:
    """Whether ``node`` was replaced by a newer version (visible or not)."""
    return sa.exists().where(
        supersessions.c.namespace_id == namespace_id, supersessions.c.old_id == node.c.id
    )


def is_tombstoned(node: sa.FromClause, namespace_id: int) -> sa.Exists:
    """Whether ``node`` has a tombstone."""
    return sa.exists().where(
        tombstones.c.namespace_id == namespace_id, tombstones.c.node_id == node.c.id
    )


def is_redacted(node: sa.FromClause, namespace_id: int) -> sa.Exists:
    """Whether ``node`` was redacted."""
    return sa.exists().where(
        redactions.c.namespace_id == namespace_id, redactions.c.node_id == node.c.id
    )


def node_columns(node: sa.FromClause, namespace_id: int) -> list[sa.ColumnElement[Any]]:
    """The columns :func:`to_node` reads: the node's own plus its status."""
    return [
        *(node.c[name] for name in NODE_FIELDS),
        superseded_by(node, namespace_id).label("superseded_by"),
        is_superseded(node, namespace_id).label("superseded"),
        is_tombstoned(node, namespace_id).label("tombstoned"),
        is_redacted(node, namespace_id).label("redacted"),
        last_confirmed(node, namespace_id).label("last_confirmed_at"),
    ]


def status_of(superseded: int | bool | None, tombstoned: bool, redacted: bool) -> NodeStatus:
    """Redacted outranks tombstoned, which outranks superseded (the newer version's id, or
    True when it is not shown)."""
    if redacted:
        return NodeStatus.REDACTED
    if tombstoned:
        return NodeStatus.TOMBSTONED
    if superseded is not None and superseded is not False:
        return NodeStatus.SUPERSEDED
    return NodeStatus.CURRENT


def to_node(row: Mapping[Any, Any], namespace: str) -> Node:
    """A :class:`Node` from a row holding :func:`node_columns` (or the same names)."""
    values = {name: row[name] for name in NODE_FIELDS}
    return Node(
        **values,
        namespace=namespace,
        # "superseded" where the row has it: superseded_by is NULL when the newer
        # version is above the privacy ceiling, and the node is superseded all the same.
        status=status_of(
            row["superseded"] if "superseded" in row else row["superseded_by"],
            row["tombstoned"],
            row["redacted"],
        ),
        superseded_by=row["superseded_by"],
        # Every statement that reads nodes for callers selects it (node_columns,
        # recall.sql, remember.sql, activation's node rows); others read none.
        last_confirmed_at=row["last_confirmed_at"] if "last_confirmed_at" in row else None,
    )


def fetch_nodes(
    conn: Connection, namespace_id: int, namespace: str, ids: Iterable[int]
) -> dict[int, Node]:
    """Nodes by id (missing ids, and nodes above the transaction's privacy ceiling, are
    simply absent from the result)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = conn.execute(_nodes_query(namespace_id, wanted)).mappings()
    return {row["id"]: to_node(row, namespace) for row in rows}


def _nodes_query(namespace_id: int, wanted: list[int]) -> sa.Select[Any]:
    return (
        sa.select(*node_columns(nodes, namespace_id))
        .where(nodes.c.namespace_id == namespace_id)
        .where(any_of(nodes.c.id, wanted))
        .where(within_ceiling(nodes))
    )


def nodes_statement(conn: Connection, namespace_id: int, ids: Iterable[int]) -> Statement:
    """:func:`fetch_nodes`' statement compiled for psycopg, to send in a pipeline beside
    others (PipelinedTransaction.rows); :func:`nodes_of` reads its rows."""
    compiled = _nodes_query(namespace_id, sorted(set(ids))).compile(dialect=conn.dialect)
    return str(compiled).encode(), compiled.params


def nodes_of(rows: Iterable[Mapping[str, Any]], namespace: str) -> dict[int, Node]:
    """The nodes of :func:`nodes_statement`'s rows, by id."""
    return {row["id"]: to_node(row, namespace) for row in rows}


def fetch_edges(
    conn: Connection, namespace_id: int, namespace: str, ids: Sequence[int]
) -> dict[int, Edge]:
    """Edges by id, with whether each was tombstoned."""
    tombstoned = sa.exists().where(
        tombstones.c.namespace_id == namespace_id, tombstones.c.edge_id == edges.c.id
    )
    query = (
        sa.select(edges, tombstoned.label("tombstoned"))
        .where(edges.c.namespace_id == namespace_id)
        .where(any_of(edges.c.id, ids))
    )
    found: dict[int, Edge] = {}
    for row in conn.execute(query).mappings():
        values = {k: v for k, v in row.items() if k != "namespace_id"}
        found[row["id"]] = Edge(**values, namespace=namespace)
    return found


class NamespaceStats(NamedTuple):
    """Sizes of one namespace that steer recall."""

    documents: int
    avg_length: float
    """Average lexemes per node (BM25's length normalisation)."""
    vectors: int
    """Vectors of the current embedder."""
    indexed: int | None = None
    """Vectors in that model's HNSW index, every namespace's (None: no index)."""
    confined: bool = False
    """Whether row-level security confines the connected role."""


# BM25's average document length comes from the newest documents: averaging a
# whole namespace read every row's full-text vector (41 ms at 100k nodes, once
# a minute, in some unlucky recall's time), where the key counts are
# index-only scans.
AVG_LENGTH_SAMPLE = 2_000


# namespace_stats and the planner's count of the model's index (Embedding.cache's
# indexed_vectors) and whether row-level security confines the role
# (db.transaction.confined) as one statement: a recall that must read a namespace's
# sizes first pays one round trip for them, or none when they ride with the recall
# (memstore/services/recall.py). The name beside them checks the id a store keeps
# for the namespace's name (memstore/services/scope.py).
STATS_SQL = """
SELECT (SELECT count(*) FROM memstore.nodes n WHERE n.namespace_id = %(ns)s) AS documents,
       (SELECT coalesce(avg(length(w.search)), 1)::float8
        FROM (SELECT n.search FROM memstore.nodes n WHERE n.namespace_id = %(ns)s
              ORDER BY n.id DESC LIMIT %(sample)s) AS w) AS avg_length,
       (SELECT count(*) FROM memstore.embeddings e
        WHERE e.namespace_id = %(ns)s AND e.model = %(model)s) AS vectors,
       (SELECT c.reltuples FROM pg_catalog.pg_class c
        WHERE c.oid = to_regclass(%(index)s)) AS indexed,
       (SELECT NOT (r.rolsuper OR r.rolbypassrls
                    OR (pg_has_role(current_user, c.relowner, 'USAGE')
                        AND NOT c.relforcerowsecurity))
        FROM pg_catalog.pg_roles r, pg_catalog.pg_class c
        WHERE r.rolname = current_user AND c.oid = 'memstore.nodes'::regclass) AS confined,
       (SELECT ns.name FROM memstore.namespaces ns WHERE ns.id = %(ns)s) AS name
"""


# STATS_SQL for a namespace known by its name only, with its id (NULL: none has that
# name). Only for a role that row-level security does not confine: a confined role
# sees a namespace's rows only in a transaction that declared its id, so it looks the
# id up first (memstore.graph.namespaces.LOOKUP_SQL).
STATS_BY_NAME_SQL = "SELECT memstore.find_namespace(%(name)s::text) AS id," + STATS_SQL.replace(
    "%(ns)s", "(SELECT memstore.find_namespace(%(name)s::text))"
).replace("\nSELECT ", "\n", 1)


def stats_params(namespace_id: int, model: str, index: str) -> dict[str, Any]:
    """The parameters of :data:`STATS_SQL` (``index``: the model's index, schema-qualified)."""
    return {"ns": namespace_id, "model": model, "index": index, "sample": AVG_LENGTH_SAMPLE}


def stats_row(conn: Connection, statement: Statement) -> dict[str, Any]:
    """The one row of :data:`STATS_SQL` (or :data:`STATS_BY_NAME_SQL`), read on ``conn``."""
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor(row_factory=dict_row) as cursor:
        rows: list[dict[str, Any]] = cursor.execute(statement[0], statement[1]).fetchall()
    return rows[0]


def stats_of(row: Mapping[str, Any]) -> NamespaceStats:
    """A :data:`STATS_SQL` row as the sizes that steer recall."""
    indexed = row["indexed"]
    return NamespaceStats(
        int(row["documents"]),
        float(row["avg_length"]),
        int(row["vectors"]),
        indexed=None if indexed is None else max(int(indexed), 0),
        confined=bool(row["confined"]),
    )


def namespace_stats(conn: Connection, namespace_id: int, model: str) -> NamespaceStats:
    """Count the namespace's nodes and vectors; the average lexeme count of its newest nodes
    (:data:`AVG_LENGTH_SAMPLE`: all of them in a smaller namespace)."""
    newest = (
        sa.select(nodes.c.search)
        .where(nodes.c.namespace_id == namespace_id)
        .order_by(nodes.c.id.desc())
        .limit(AVG_LENGTH_SAMPLE)
        .subquery()
    )
    documents, avg_length = conn.execute(
        sa.select(
            sa.select(sa.func.count())
            .select_from(nodes)
            .where(nodes.c.namespace_id == namespace_id)
            .scalar_subquery(),
            sa.select(
                sa.func.coalesce(sa.func.avg(sa.func.length(newest.c.search)), 1)
            ).scalar_subquery(),
        )
    ).one()
    vectors = conn.execute(
        sa.select(sa.func.count())
        .select_from(embeddings)
        .where(embeddings.c.namespace_id == namespace_id, embeddings.c.model == model)
    ).scalar_one()
    return NamespaceStats(int(documents), float(avg_length), int(vectors))
