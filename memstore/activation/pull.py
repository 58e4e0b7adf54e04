"""The neighbourhood pull: one call of ``memstore.neighbourhood``, read as numpy arrays.

Every value travels as a bound parameter; the query vector once, in binary.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from psycopg import sql
from sqlalchemy.engine import Connection

# The statement lives in sql/05_neighbourhood.sql as memstore.neighbourhood(), a
# PL/pgSQL function: its plan is cached per connection (planning it cost more
# than running it).
PULL = sql.SQL(
    "SELECT * FROM memstore.neighbourhood(%(ns)s, %(seeds)s::bigint[], %(depth)s::int,"
    " %(fanout)s::int, %(both)s::boolean, %(privacy)s::int, %(as_of)s::timestamptz,"
    " %(vector)s::vector, %(model)s::text)"
)

IntArray = np.ndarray[Any, np.dtype[np.int64]]
FloatArray = np.ndarray[Any, np.dtype[np.float64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


@dataclass(frozen=True)
class Neighbourhood:
    """What one pull returns: the edges followed and every node reached.

    Edge arrays are aligned (one entry per edge followed, in the direction it
    was followed: ``src`` is where activation comes from); node arrays are
    aligned with ``node_id``. ``access_node``/``access_age`` list one entry per
    remembered access (seconds before the activation's time).
    """

    edge_src: IntArray
    edge_dst: IntArray
    edge_id: IntArray
    edge_weight: FloatArray
    edge_hebb: FloatArray
    edge_inhibitory: BoolArray
    edge_relation: list[str]
    edge_reverse: BoolArray
    edge_depth: IntArray
    node_id: IntArray
    node_depth: IntArray
    node_layer: IntArray
    node_type: list[str]
    node_label: list[str | None]
    node_tier: list[str | None]
    node_importance: FloatArray
    node_decay_rate: FloatArray
    node_age: FloatArray
    node_similarity: FloatArray
    """Cosine similarity to the query; NaN where the node has no vector (or no query)."""
    access_node: IntArray
    access_age: FloatArray

    @property
    def edge_count(self) -> int:
        return len(self.edge_id)


def _ints(values: list[Any] | None) -> IntArray:
    return np.asarray(values or [], dtype=np.int64)


def _floats(values: list[Any] | None) -> FloatArray:
    return np.asarray([np.nan if v is None else v for v in values or []], dtype=np.float64)


def _bools(values: list[Any] | None) -> BoolArray:
    return np.asarray(values or [], dtype=np.bool_)


def pull(
    conn: Connection,
    namespace_id: int,
    seeds: list[int],
    *,
    depth: int,
    fanout: int,
    both_directions: bool,
    privacy_ceiling: int | None,
    as_of: datetime | None,
    vector: np.ndarray[Any, Any] | None,
    model: str,
) -> Neighbourhood:
    """Pull the neighbourhood of ``seeds`` (current ids; superseded ones are followed)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    params = {
        "ns": namespace_id,
        "seeds": seeds,
        "depth": depth,
        "fanout": fanout,
        "both": both_directions,
        "privacy": privacy_ceiling,
        "as_of": as_of,
        "vector": vector,
        "model": model,
    }
    with raw.cursor(binary=True) as cursor:
        row = cursor.execute(PULL, params).fetchone()
        assert row is not None and cursor.description is not None
        found = dict(zip([c.name for c in cursor.description], row, strict=True))
    return Neighbourhood(
        edge_src=_ints(found["edge_src"]),
        edge_dst=_ints(found["edge_dst"]),
        edge_id=_ints(found["edge_id"]),
        edge_weight=_floats(found["edge_weight"]),
        edge_hebb=_floats(found["edge_hebb"]),
        edge_inhibitory=_bools(found["edge_inhibitory"]),
        edge_relation=list(found["edge_relation"] or []),
        edge_reverse=_bools(found["edge_reverse"]),
        edge_depth=_ints(found["edge_depth"]),
        node_id=_ints(found["node_id"]),
        node_depth=_ints(found["node_depth"]),
        node_layer=_ints(found["node_layer"]),
        node_type=list(found["node_type"] or []),
        node_label=list(found["node_label"] or []),
        node_tier=list(found["node_tier"] or []),
        node_importance=_floats(found["node_importance"]),
        node_decay_rate=_floats(found["node_decay_rate"]),
        node_age=_floats(found["node_age"]),
        node_similarity=_floats(found["node_similarity"]),
        access_node=_ints(found["access_node"]),
        access_age=_floats(found["access_age"]),
    )
