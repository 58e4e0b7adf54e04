"""Supersede once and never in a cycle; tombstone once; decide a proposal once."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from memstore.errors import (
    SQLSTATE_PROPOSAL,
    SQLSTATE_SUPERSESSION,
    SQLSTATE_TOMBSTONE,
)


def _supersede(conn, ns, old, new):
    conn.execute(
        "INSERT INTO memstore.supersessions (namespace_id, old_id, new_id, reason)"
        " VALUES (%s, %s, %s, 'test')",
        (ns, old, new),
    )


def _node(conn, ns, content):
    row = conn.execute(
        "INSERT INTO memstore.nodes (namespace_id, kind, content) VALUES (%s, 'semantic', %s)"
        " RETURNING id",
        (ns, content),
    ).fetchone()
    return row[0]


def test_a_node_is_superseded_at_most_once_and_the_error_names_the_current_version(conn, seed):
    ns = seed.namespace_id
    newest = _node(conn, ns, "Alice lives in Porto")
    _supersede(conn, ns, seed.home, newest)  # move -> home -> newest
    with pytest.raises(psycopg.Error) as exc:
        _supersede(conn, ns, seed.move, seed.tea)
    assert exc.value.sqlstate == SQLSTATE_SUPERSESSION
    assert f"current version is node {newest}" in str(exc.value)


def test_a_supersession_cannot_close_a_cycle(conn, seed):
    ns = seed.namespace_id
    with pytest.raises(psycopg.Error) as exc:
        _supersede(conn, ns, seed.home, seed.move)  # seed already has move -> home
    assert exc.value.sqlstate == SQLSTATE_SUPERSESSION
    assert "cycle" in str(exc.value)


def test_a_node_cannot_supersede_itself(conn, seed):
    with pytest.raises(psycopg.Error) as exc:
        _supersede(conn, seed.namespace_id, seed.tea, seed.tea)
    assert exc.value.sqlstate == SQLSTATE_SUPERSESSION


def test_supersession_rules_are_per_namespace(conn, seed):
    other = conn.execute(
        "INSERT INTO memstore.namespaces (name) VALUES (%s) RETURNING id",
        (f"other-{seed.namespace_id}",),
    ).fetchone()[0]
    a, b = _node(conn, other, "a"), _node(conn, other, "b")
    _supersede(conn, other, a, b)  # node ids differ, but the rule must not leak either way
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        _supersede(conn, other, seed.home, b)  # a node of another namespace


def test_a_target_is_tombstoned_at_most_once(conn, seed):
    with pytest.raises(psycopg.Error) as exc:
        conn.execute(
            "INSERT INTO memstore.tombstones (namespace_id, target_kind, node_id, reason)"
            " VALUES (%s, 'node', %s, 'again')",
            (seed.namespace_id, seed.tea),
        )
    assert exc.value.sqlstate == SQLSTATE_TOMBSTONE
    conn.execute(
        "INSERT INTO memstore.tombstones (namespace_id, target_kind, edge_id, reason)"
        " VALUES (%s, 'edge', %s, 'wrong link')",
        (seed.namespace_id, seed.edge),
    )
    with pytest.raises(psycopg.Error) as exc:
        conn.execute(
            "INSERT INTO memstore.tombstones (namespace_id, target_kind, edge_id, reason)"
            " VALUES (%s, 'edge', %s, 'again')",
            (seed.namespace_id, seed.edge),
        )
    assert exc.value.sqlstate == SQLSTATE_TOMBSTONE


def test_a_tombstone_names_exactly_one_target(conn, seed):
    with pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "INSERT INTO memstore.tombstones (namespace_id, target_kind, node_id, edge_id, reason)"
            " VALUES (%s, 'node', %s, %s, 'both')",
            (seed.namespace_id, seed.home, seed.edge),
        )


def _decide(conn, seed, status, **extra):
    sets = sql.SQL(", ").join(
        sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(column))
        for column in ["status", *extra]
    )
    statement = sql.SQL(
        "UPDATE memstore.proposals SET {} WHERE namespace_id = %(ns)s AND id = %(id)s"
    ).format(sets)
    return conn.execute(
        statement, {"status": status, "ns": seed.namespace_id, "id": seed.proposal, **extra}
    )


def test_a_pending_proposal_is_decided_once(conn, seed):
    assert _decide(conn, seed, "accepted", decided_by="reviewer").rowcount == 1
    row = conn.execute(
        "SELECT status, decided_by, decided_at IS NOT NULL FROM memstore.proposals"
        " WHERE namespace_id = %s AND id = %s",
        (seed.namespace_id, seed.proposal),
    ).fetchone()
    assert row == ("accepted", "reviewer", True)
    for status in ("rejected", "pending", "accepted"):
        with pytest.raises(psycopg.Error) as exc:
            _decide(conn, seed, status)
        assert exc.value.sqlstate == SQLSTATE_PROPOSAL


def test_a_proposal_may_not_go_back_to_pending_or_change_its_operation(conn, seed):
    with pytest.raises(psycopg.Error) as exc:
        _decide(conn, seed, "pending")
    assert exc.value.sqlstate == SQLSTATE_PROPOSAL
    with pytest.raises(psycopg.Error) as exc:
        _decide(conn, seed, "rejected", rationale="quietly rewritten")
    assert exc.value.sqlstate == SQLSTATE_PROPOSAL
    with pytest.raises(psycopg.Error, match="names its reviewer") as exc:
        _decide(conn, seed, "rejected", decision_reason="not durable")
    assert exc.value.sqlstate == SQLSTATE_PROPOSAL
    decided = _decide(conn, seed, "rejected", decided_by="reviewer", decision_reason="not durable")
    assert decided.rowcount == 1
