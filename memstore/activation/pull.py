"""The neighbourhood pull: one call of ``memstore.neighbourhood_v3``, read as numpy arrays.

Every value travels as a bound parameter; the query vector once, in binary.
The same call reports on the caller's own seed ids (what they resolve to and
whether they may be used), so checking them costs no round trip of its own.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.abc import AdaptContext, Buffer
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg.rows import dict_row
from sqlalchemy.engine import Connection

from memstore.graph.rows import to_node
from memstore.models import Node

# The statements live in sql/05_neighbourhood.sql as PL/pgSQL functions: their
# plans are cached per connection (planning the pull cost more than running
# it; composing and planning the node read cost more than its round trip).
PULL = sql.SQL(
    "SELECT * FROM memstore.neighbourhood_v3(%(ns)s, %(seeds)s::bigint[], %(given)s::bigint[],"
    " %(depth)s::int, %(fanout)s::int, %(both)s::boolean, %(privacy)s::int,"
    " %(as_of)s::timestamptz, %(vector)s::vector, %(model)s::text)"
)
# Its columns, in order: the row is read by position (naming the columns from
# the cursor's description built 24 objects a call).
PULL_COLUMNS = (
    "edge_src", "edge_dst", "edge_id", "edge_weight", "edge_hebb", "edge_inhibitory",
    "edge_relation", "edge_reverse", "edge_depth",
    "node_id", "node_depth", "node_layer", "node_type", "node_label", "node_tier",
    "node_importance", "node_decay_rate", "node_recorded", "node_similarity",
    "access_node", "access_at",
    "given_current", "given_known", "given_live",
    "moment",
)  # fmt: skip
# With each node's newest confirmation (memstore/graph/confirmations.py).
NODE_ROWS = sql.SQL(
    "SELECT r.*, (SELECT f.at FROM memstore.confirmations f"
    " WHERE f.namespace_id = %(ns)s AND f.node_id = r.id"
    " ORDER BY f.at DESC LIMIT 1) AS last_confirmed_at"
    " FROM memstore.node_rows(%(ns)s, %(ids)s::bigint[]) AS r"
)
# Which of the pulled nodes carry every tag of a filter (ix_nodes_tags, or the
# primary key for a small neighbourhood: the planner picks).
TAGGED = sql.SQL(
    "SELECT n.id FROM memstore.nodes n WHERE n.namespace_id = %(ns)s"
    " AND n.id = ANY (%(ids)s::bigint[]) AND n.tags @> %(tags)s::text[]"
)

# Opens a pipeline on the raw connection (PipelinedTransaction.pipeline): the
# statement then travels with what the transaction queues around it.
Pipeline = Callable[[], AbstractContextManager[Any]]

IntArray = np.ndarray[Any, np.dtype[np.int64]]
FloatArray = np.ndarray[Any, np.dtype[np.float64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


@dataclass(frozen=True)
class GivenSeeds:
    """What the pull found out about the caller's seed ids, aligned with them."""

    current: list[int]
    """Each id's current version (as of the pull's ``as_of``)."""
    known: list[bool]
    """Whether the id is a node of the namespace (one the caller may see)."""
    live: list[bool]
    """Whether that current version is neither forgotten nor redacted (now)."""


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
    given: GivenSeeds | None = None
    """The report on the ``given`` seed ids of :func:`pull` (None when none were given)."""

    @property
    def edge_count(self) -> int:
        """How many edges the pull returned."""
        return len(self.edge_id)


# Numeric arrays come back as numpy arrays, not lists: the binary array format
# of a one-dimensional array without NULLs is a 20-byte header, then for each
# element its length (4 bytes) and its big-endian value, which numpy reads as
# records in one call. (At 3 hops psycopg's lists and numpy's conversion of
# them cost 1.5 ms of a 30 ms activation.) Arrays with NULLs, and any other
# shape, are left to psycopg's own loader.
_ELEMENTS = {  # array type oid -> (element as sent, as numpy keeps it)
    1016: (">i8", np.int64),  # bigint[]
    1007: (">i4", np.int32),  # int[]
    1005: (">i2", np.int16),  # smallint[]
    1022: (">f8", np.float64),  # float8[]
    1021: (">f4", np.float32),  # real[]
    1000: ("u1", np.bool_),  # boolean[]
    1185: (">i8", np.int64),  # timestamptz[]: microseconds since 2000-01-01 UTC
}
# The origin of PostgreSQL's binary timestamps.
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_HEADER = struct.Struct("!iiiii")  # ndim, has nulls, element oid, length, lower bound


class _NumpyArrayLoader(Loader):
    format = Format.BINARY

    def __init__(self, oid: int, context: AdaptContext | None = None) -> None:
        super().__init__(oid, context)
        sent, self._kept = _ELEMENTS[oid]
        self._records = np.dtype([("length", ">i4"), ("value", sent)])
        fallback = psycopg.adapters.get_loader(oid, Format.BINARY)
        assert fallback is not None
        self._fallback = fallback(oid, context)

    def load(self, data: Buffer) -> Any:
        if len(data) >= _HEADER.size:
            ndim, nulls, _, length, _ = _HEADER.unpack_from(data)
            body = memoryview(data)[_HEADER.size :]
            if ndim == 1 and not nulls and len(body) == length * self._records.itemsize:
                return np.frombuffer(body, dtype=self._records)["value"].astype(self._kept)
        # psycopg's own loader: NULLs, an empty array, other shapes
        return self._fallback.load(data)


def _numpy_arrays(cursor: psycopg.Cursor[Any]) -> None:
    """Load the numeric arrays of ``cursor``'s results as numpy arrays."""
    for oid in _ELEMENTS:
        cursor.adapters.register_loader(oid, _NumpyArrayLoader)


# A column is a numpy array (see _NumpyArrayLoader), a list (psycopg's
# loader: NULLs inside) or None (no rows were aggregated).
Column = np.ndarray[Any, Any] | list[Any] | None


def _ints(values: Column) -> IntArray:
    return np.asarray([] if values is None else values, dtype=np.int64)


def _floats(values: Column) -> FloatArray:
    # numpy reads None as NaN for a float dtype (no list comprehension needed).
    return np.asarray([] if values is None else values, dtype=np.float64)


def _bools(values: Column) -> BoolArray:
    return np.asarray([] if values is None else values, dtype=np.bool_)


def _microseconds(moment: datetime) -> int:
    return (moment - _PG_EPOCH) // _MICROSECOND


def _ages(times: Column, moment: datetime) -> FloatArray:
    """Seconds from each of ``times`` (a timestamptz[] column) to ``moment``."""
    if times is None:
        return np.zeros(0, dtype=np.float64)
    if not isinstance(times, np.ndarray):  # psycopg's loader: datetimes
        times = np.array([_microseconds(t) for t in times], dtype=np.int64)
    return (_microseconds(moment) - times) / 1e6


def _plain(values: Column) -> list[Any]:
    """Python values (ints, bools), whatever the column arrived as."""
    if values is None:
        return []
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def pull(
    conn: Connection,
    namespace_id: int,
    seeds: list[int],
    *,
    given: Sequence[int] = (),
    depth: int,
    fanout: int,
    both_directions: bool,
    privacy_ceiling: int | None,
    as_of: datetime | None,
    vector: np.ndarray[Any, Any] | None,
    model: str,
    pipeline: Pipeline | None = None,
    prepare: bool = False,
) -> Neighbourhood:
    """Pull the neighbourhood of ``seeds`` and ``given`` (any version of a node: each stands
    for its current one).

    For ``given``, the caller's own seed ids, the result also says what each
    one resolved to and whether it may be used (``Neighbourhood.given``).
    With ``pipeline`` the statement is sent in it (e.g. with the transaction's
    BEGIN and scope: one wait for the server); ``prepare`` keeps the statement
    prepared on the connection (no parsing and planning of the call).
    """
    raw = conn.connection.driver_connection
    assert raw is not None
    params = {
        "ns": namespace_id,
        "seeds": seeds,
        "given": list(given),
        "depth": depth,
        "fanout": fanout,
        "both": both_directions,
        "privacy": privacy_ceiling,
        "as_of": as_of,
        "vector": vector,
        "model": model,
    }
    with raw.cursor(binary=True) as cursor:
        _numpy_arrays(cursor)
        with (pipeline or nullcontext)():
            cursor.execute(PULL, params, prepare=prepare)
        row = cursor.fetchone()
        assert row is not None
        found = dict(zip(PULL_COLUMNS, row, strict=True))
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
        node_age=_ages(found["node_recorded"], found["moment"]),
        node_similarity=_floats(found["node_similarity"]),
        access_node=_ints(found["access_node"]),
        access_age=_ages(found["access_at"], found["moment"]),
        given=GivenSeeds(
            current=_plain(found["given_current"]),
            known=_plain(found["given_known"]),
            live=_plain(found["given_live"]),
        )
        if given
        else None,
    )


def node_rows(
    conn: Connection,
    namespace_id: int,
    namespace: str,
    ids: Iterable[int],
    *,
    pipeline: Pipeline | None = None,
    also: Callable[[], None] | None = None,
    prepare: bool = False,
) -> dict[int, Node]:
    """Nodes by id with their status, as :func:`memstore.graph.rows.fetch_nodes` reads them.

    Missing ids are absent from the result. With ``pipeline`` the statement
    is sent in it, and ``also`` queues more statements after it (learning,
    say) in the same pipeline; ``prepare`` as for :func:`pull`.
    """
    wanted = sorted(set(ids))
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor(binary=True, row_factory=dict_row) as cursor:
        with (pipeline or nullcontext)():
            if wanted:
                cursor.execute(NODE_ROWS, {"ns": namespace_id, "ids": wanted}, prepare=prepare)
            if also is not None:
                also()
        rows = cursor.fetchall() if wanted else []
    return {row["id"]: to_node(row, namespace) for row in rows}


def tagged(conn: Connection, namespace_id: int, nb: Neighbourhood, tags: list[str]) -> BoolArray:
    """Whether each node of ``nb`` (aligned with ``nb.node_id``) carries every one of ``tags``."""
    if not len(nb.node_id):
        return np.zeros(0, dtype=np.bool_)
    raw = conn.connection.driver_connection
    assert raw is not None
    params = {"ns": namespace_id, "ids": nb.node_id.tolist(), "tags": tags}
    found = [row[0] for row in raw.execute(TAGGED, params).fetchall()]
    return np.isin(nb.node_id, np.asarray(found, dtype=np.int64))
