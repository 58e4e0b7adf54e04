"""The append-only law holds against anyone with a plain connection (psql-style)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from memstore.db.schema import APPEND_ONLY_TABLES, MUTABLE_STATE_TABLES
from memstore.errors import SQLSTATE_IMMUTABLE

# For each table: the row the seed wrote, and a column an UPDATE would change.
ROW_AND_COLUMN = {
    "namespaces": ("id", "namespace_id", "settings", "'{\"x\": 1}'::jsonb"),
    "nodes": ("id", "home", "importance", "0.9"),
    "edges": ("id", "edge", "weight", "0.1"),
    "tombstones": ("id", "tombstone", "reason", "'changed my mind'"),
    "supersessions": ("id", "supersession", "reason", "'rewritten'"),
    "operations": ("id", "operation", "outcome", "'rejected'"),
    "activations": ("id", "activation", "strength", "0.0"),
    "redactions": ("id", "redaction", "reason", "'never happened'"),
    "confirmations": ("id", "confirmation", "at", "now() - interval '1 day'"),
    "node_state": ("node_id", "home", "activation_count", "2"),
    "edge_state": ("edge_id", "edge", "hebbian_weight", "0.5"),
    "proposals": ("id", "proposal", "rationale", "'rewritten'"),
    "procedure_outcomes": ("id", "outcome", "success", "false"),
    "procedure_roles": ("node_id", "home", "role", "'admin'"),
    "maintenance_runs": ("id", "maintenance_run", "decay_steps", "0"),
    "activation_summaries": ("node_id", "home", "activations", "2"),
}


def _where(table: str, seed) -> tuple[sql.Composed, tuple[object, ...]]:
    key, attr, _, _ = ROW_AND_COLUMN[table]
    ns = seed.namespace_id
    if table == "namespaces":
        return sql.Composed([sql.SQL("id = %s")]), (ns,)
    value = getattr(seed, attr)
    return sql.SQL("namespace_id = %s AND {} = %s").format(sql.Identifier(key)), (ns, value)


def _run(conn, statement: sql.Composed, params: tuple[object, ...] = ()) -> int:
    return int(conn.execute(statement, params).rowcount)


def _count(conn, table: str) -> int:
    query = sql.SQL("SELECT count(*) FROM memstore.{}").format(sql.Identifier(table))
    row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def _refused(exc: pytest.ExceptionInfo[psycopg.Error], table: str) -> None:
    assert exc.value.sqlstate == SQLSTATE_IMMUTABLE
    message = exc.value.diag.message_primary or ""
    assert table in message
    # The message names the sanctioned alternative, not just "no".
    assert ":" in message.split("refused:", 1)[1]


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES)
def test_update_is_refused(conn, seed, table):
    where, params = _where(table, seed)
    _, _, column, value = ROW_AND_COLUMN[table]
    statement = sql.SQL("UPDATE memstore.{} SET {} = {} WHERE {}").format(
        sql.Identifier(table), sql.Identifier(column), sql.SQL(value), where
    )
    with pytest.raises(psycopg.Error) as exc:
        _run(conn, statement, params)
    _refused(exc, table)


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES + MUTABLE_STATE_TABLES + ("proposals",))
def test_delete_is_refused(conn, seed, table):
    where, params = _where(table, seed)
    before = _count(conn, table)
    statement = sql.SQL("DELETE FROM memstore.{} WHERE {}").format(sql.Identifier(table), where)
    with pytest.raises(psycopg.Error) as exc:
        _run(conn, statement, params)
    _refused(exc, table)
    assert _count(conn, table) == before


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES + MUTABLE_STATE_TABLES + ("proposals",))
def test_truncate_is_refused(conn, seed, table):
    before = _count(conn, table)
    assert before > 0
    with pytest.raises(psycopg.Error) as exc:
        conn.execute(sql.SQL("TRUNCATE memstore.{} CASCADE").format(sql.Identifier(table)))
    assert exc.value.sqlstate == SQLSTATE_IMMUTABLE
    assert _count(conn, table) == before


def test_delete_without_where_removes_nothing(conn, seed):
    before = _count(conn, "nodes")
    with pytest.raises(psycopg.Error):
        conn.execute("DELETE FROM memstore.nodes")
    assert _count(conn, "nodes") == before


@pytest.mark.parametrize("table", MUTABLE_STATE_TABLES)
def test_learned_state_accepts_update(conn, seed, table):
    where, params = _where(table, seed)
    _, _, column, value = ROW_AND_COLUMN[table]
    statement = sql.SQL("UPDATE memstore.{} SET {} = {} WHERE {}").format(
        sql.Identifier(table), sql.Identifier(column), sql.SQL(value), where
    )
    assert _run(conn, statement, params) == 1


def test_embeddings_are_a_cache_and_may_be_deleted(conn, seed):
    deleted = conn.execute(
        "DELETE FROM memstore.embeddings WHERE namespace_id = %s", (seed.namespace_id,)
    ).rowcount
    assert deleted == 1  # the redacted node's vector was already gone
    nodes = conn.execute(
        "SELECT count(*) FROM memstore.nodes WHERE namespace_id = %s", (seed.namespace_id,)
    ).fetchone()
    assert nodes == (4,)


def test_setting_a_session_variable_does_not_open_the_door(conn, seed):
    conn.execute("SET memstore.redactor = 'on'")
    with pytest.raises(psycopg.Error) as exc:
        conn.execute(
            "UPDATE memstore.nodes SET content = '', label = NULL, data = '{}', content_hash = NULL"
            " WHERE namespace_id = %s AND id = %s",
            (seed.namespace_id, seed.home),
        )
    assert exc.value.sqlstate == SQLSTATE_IMMUTABLE
