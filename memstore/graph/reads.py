"""Graph reads of one memory: its live edges, its neighbours within a few hops, the
vectors two memories are compared by, and an explicit change of learned weights
(``reads.sql``; the rules of a live edge are the activation pull's)."""

from __future__ import annotations

from importlib.resources import files
from typing import Any, Literal, NamedTuple

import numpy as np
from psycopg.rows import dict_row
from sqlalchemy.engine import Connection

from memstore.db.queries import named_queries
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
    params = {
        "ns": namespace_id,
        "node": node_id,
        "relation": relation,
        "limit": limit,
        **_directions(direction),
    }
    found = []
    for row in _rows(conn, "edges", params):
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
    id; at most ``limit``.

    The walk's rows arrive one distance after the other, read through a
    server-side cursor: the first row of a memory has its least distance, and
    once ``limit`` memories are in, the walk stops (a small limit does not pay
    for a hub's whole 3-hop neighbourhood). Which memories of the last
    distance reached make the limit is the walk's order, not their ids.
    """
    params = {
        "ns": namespace_id,
        "node": node_id,
        "depth": depth,
        "relation": relation,
        **_directions(direction),
    }
    raw = conn.connection.driver_connection
    assert raw is not None
    found: dict[int, int] = {}
    with raw.cursor(name="memstore_neighbours") as cursor:
        cursor.itersize = min(max(limit, 100), 2_000)
        cursor.execute(QUERIES["neighbours"], params)
        for far, distance in cursor:
            if far != node_id and far not in found:
                found[int(far)] = int(distance)
                if len(found) >= limit:
                    break
    return sorted(found.items(), key=lambda pair: (pair[1], pair[0]))


def stored_vectors(
    conn: Connection, namespace_id: int, model: str, node_ids: list[int]
) -> dict[int, np.ndarray[Any, Any]]:
    """The ``model`` vectors stored for ``node_ids`` (a node without one is absent)."""
    params = {"ns": namespace_id, "model": model, "ids": sorted(set(node_ids))}
    return {
        int(row["node_id"]): np.asarray(
            [float(x) for x in row["embedding"].strip("[]").split(",")], dtype=np.float64
        )
        for row in _rows(conn, "vectors", params)
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
