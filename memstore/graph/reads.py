"""Graph reads of one memory: its live edges, its neighbours within a few hops, the
vectors two memories are compared by, and an explicit change of learned weights
(``reads.sql``; the rules of a live edge are the activation pull's)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib.resources import files
from typing import Any, Literal, NamedTuple

import numpy as np
from psycopg.rows import dict_row
from sqlalchemy.engine import Connection

from memstore.db.queries import named_queries
from memstore.db.transaction import PipelinedTransaction, Statement
from memstore.graph.namespaces import NAME_SQL
from memstore.models import Edge

QUERIES = named_queries(files("memstore.graph").joinpath("reads.sql").read_text())

Direction = Literal["both", "out", "in"]


class LiveEdge(NamedTuple):
    """An edge of a memory, and the current version its far end leads to."""

    edge: Edge
    far: int


def _rows(conn: Connection, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor(row_factory=dict_row) as cursor:
        rows: list[dict[str, Any]] = cursor.execute(QUERIES[name], params).fetchall()
    return rows


def _directions(direction: Direction) -> dict[str, bool]:
    return {"outgoing": direction != "in", "incoming": direction != "out"}


def live_edges(
    conn: Connection,
    namespace_id: int,
    namespace: str,
    node_id: int,
    *,
    direction: Direction,
    relation: str | None,
    limit: int,
) -> list[LiveEdge]:
    """The live edges of the memory whose current version is ``node_id``, heaviest
    (authored weight) first, then oldest; at most ``limit``."""
    return edges_of(
        _rows(conn, "edges", edge_params(namespace_id, node_id, direction, relation, limit)),
        namespace,
    )


def edge_params(
    namespace_id: int, node_id: int, direction: Direction, relation: str | None, limit: int
) -> dict[str, Any]:
    """The parameters of the ``edges`` read (from ``node_id``'s current version)."""
    return {
        "ns": namespace_id,
        "node": node_id,
        "relation": relation,
        "limit": limit,
        **_directions(direction),
    }


def edges_of(rows: list[dict[str, Any]], namespace: str) -> list[LiveEdge]:
    """The ``edges`` read's rows as edges, each with the current version it leads to."""
    found = []
    for row in rows:
        far = int(row.pop("far"))
        found.append(LiveEdge(Edge(**row, namespace=namespace), far))
    return found


def neighbour_ids(
    conn: Connection,
    namespace_id: int,
    node_id: int,
    *,
    depth: int,
    direction: Direction,
    relation: str | None,
    limit: int,
) -> list[tuple[int, int]]:
    """(node id, distance) of the current memories within ``depth`` live edges of the
    memory whose current version is ``node_id`` (itself left out), nearest first, then by
    id; at most ``limit``. See :func:`walk_params` and :func:`nearest`."""
    params = walk_params(namespace_id, node_id, depth, direction, relation, limit)
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cursor:
        rows = cursor.execute(QUERIES["neighbours"], params).fetchall()
    return nearest(rows, node_id, limit)


def walk_params(
    namespace_id: int,
    node_id: int,
    depth: int,
    direction: Direction,
    relation: str | None,
    limit: int,
) -> dict[str, Any]:
    """The parameters of the ``neighbours`` walk: it sends at most (limit + 1) × (depth +
    1) rows, which hold ``limit`` distinct memories besides the start whenever the walk
    reaches that many (a memory comes at most once per distance), and stops there: a
    small limit does not pay for a hub's whole 3-hop neighbourhood."""
    return {
        "ns": namespace_id,
        "node": node_id,
        "depth": depth,
        "relation": relation,
        "rows": (limit + 1) * (depth + 1),
        **_directions(direction),
    }


def nearest(rows: Iterable[Sequence[Any]], start: int, limit: int) -> list[tuple[int, int]]:
    """The walk's first ``limit`` distinct memories other than ``start`` (the current
    version walked from), each at its least distance (rows arrive one distance after
    the other), nearest first, then by id. Which memories of the last distance reached
    make the limit is the walk's order, not their ids."""
    found: dict[int, int] = {}
    for far, distance in rows:
        if far != start and far not in found:
            found[int(far)] = int(distance)
            if len(found) >= limit:
                break
    return sorted(found.items(), key=lambda pair: (pair[1], pair[0]))


def checked_read(
    tx: PipelinedTransaction,
    namespace_id: int,
    node_id: int,
    read: str,
    params: dict[str, Any],
    *,
    commit: bool,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], str | None]:
    """In one round trip (BEGIN and the scope too, if the transaction has not started):
    the memory ``node_id`` as its checks need it (``memory``: None when it is not
    visible), the rows of the named ``read`` that starts from it, and the name of the
    namespace ``namespace_id`` (memstore.graph.namespaces.NAME_SQL); with ``commit`` the
    transaction ends in the same round trip, else it stays open for a read that depends
    on these rows."""
    with (
        tx.raw.cursor(row_factory=dict_row) as memory,
        tx.raw.cursor(row_factory=dict_row) as rows,
        tx.raw.cursor() as named,
    ):
        with tx.pipeline(commit=commit):
            memory.execute(QUERIES["memory"], {"ns": namespace_id, "node": node_id})
            rows.execute(QUERIES[read], params)
            named.execute(NAME_SQL, {"ns": namespace_id})
        verdict = memory.fetchone()
        found: list[dict[str, Any]] = rows.fetchall()
        name_row = named.fetchone()
    return verdict, found, None if name_row is None else str(name_row[0])


def stored_vectors(
    conn: Connection, namespace_id: int, model: str, node_ids: list[int]
) -> dict[int, np.ndarray[Any, Any]]:
    """The ``model`` vectors stored for ``node_ids`` (a node without one is absent)."""
    _, params = vectors_statement(namespace_id, model, node_ids)
    return vectors_of(_rows(conn, "vectors", dict(params)))


def vectors_statement(namespace_id: int, model: str, node_ids: list[int]) -> Statement:
    """:func:`stored_vectors`' statement, to send in a pipeline beside others."""
    return QUERIES["vectors"], {"ns": namespace_id, "model": model, "ids": sorted(set(node_ids))}


def vectors_of(rows: list[dict[str, Any]]) -> dict[int, np.ndarray[Any, Any]]:
    """The vectors of :func:`vectors_statement`'s rows, by node id."""
    return {
        int(row["node_id"]): np.asarray(
            [float(x) for x in row["embedding"].strip("[]").split(",")], dtype=np.float64
        )
        for row in rows
    }


def cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    """Cosine similarity of two vectors (pgvector's ``1 - (a <=> b)``)."""
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / norms) if norms > 0 else 0.0


def change_learned_weights(
    conn: Connection, namespace_id: int, edge_ids: list[int], delta: float
) -> dict[int, float]:
    """Move the learned (Hebbian) weight of ``edge_ids`` by ``delta`` within [0, 1];
    returns each edge's new weight."""
    params = {"ns": namespace_id, "edges": sorted(set(edge_ids)), "delta": delta}
    return {
        int(row["edge_id"]): float(row["learned_weight"])
        for row in _rows(conn, "strengthen", params)
    }
