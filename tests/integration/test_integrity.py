"""Tamper evidence: `memstore db check` names a disabled trigger, a replaced guard, a new policy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from memstore.db import integrity
from memstore.db.engine import create_engine
from memstore.db.schema import APPEND_ONLY_TABLES, MUTABLE_STATE_TABLES
from memstore.db.transaction import transaction


@pytest.fixture
def check(database_url):
    engine = create_engine(database_url)

    def run() -> list[str]:
        engine.dispose()  # a fresh session: database settings apply at connect
        with transaction(engine) as conn:
            return integrity.problems(conn)

    yield run
    engine.dispose()


def _cli_check(url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMSTORE_DATABASE_URL": url}
    return subprocess.run(
        [str(Path(sys.executable).with_name("memstore")), "db", "check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_sql_defines_every_guard_the_law_needs():
    found = integrity.definitions()
    for table in APPEND_ONLY_TABLES:
        assert {(table, "no_update"), (table, "no_delete"), (table, "no_truncate")} <= set(
            found.triggers
        )
    for table in MUTABLE_STATE_TABLES:
        assert {(table, "no_delete"), (table, "no_truncate")} <= set(found.triggers)
    assert {"refuse_change", "guard_node_update", "redact_node"} <= set(found.functions)
    assert found.functions["redact_node"][1] and not found.functions["refuse_change"][1]


def test_a_migrated_database_passes(check, database_url):
    assert check() == []
    done = _cli_check(database_url)
    assert done.returncode == 0, done.stderr
    assert "all match sql/, the metadata and roles.py" in done.stdout


def test_a_disabled_trigger_fails_the_check_by_name(check, conn, database_url):
    conn.execute("ALTER TABLE memstore.nodes DISABLE TRIGGER no_delete")
    try:
        assert check() == ["trigger no_delete on memstore.nodes is disabled"]
        done = _cli_check(database_url)
        assert done.returncode == 1
        assert "trigger no_delete on memstore.nodes is disabled" in done.stderr
    finally:
        conn.execute("ALTER TABLE memstore.nodes ENABLE TRIGGER no_delete")
    assert check() == []


@pytest.mark.parametrize(
    ("tamper", "undo", "expected"),
    [
        (
            "DROP TRIGGER no_truncate ON memstore.edges",
            "CREATE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.edges FOR EACH STATEMENT"
            " EXECUTE FUNCTION memstore.refuse_change('edges are append-only: link a new edge;"
            " forget writes a tombstone; learned weights live in edge_state')",
            "trigger no_truncate on memstore.edges is missing",
        ),
        (
            "ALTER TABLE memstore.tombstones ENABLE REPLICA TRIGGER no_update",
            "ALTER TABLE memstore.tombstones ENABLE TRIGGER no_update",
            "trigger no_update on memstore.tombstones is set to fire only for replicas",
        ),
        (
            "CREATE TRIGGER sneaky BEFORE INSERT ON memstore.nodes"
            " FOR EACH ROW EXECUTE FUNCTION memstore.check_tombstone()",
            "DROP TRIGGER sneaky ON memstore.nodes",
            "trigger sneaky on memstore.nodes is not defined in sql/",
        ),
        (
            "ALTER FUNCTION memstore.refuse_change() RENAME TO refuse_change_orig;"
            " CREATE FUNCTION memstore.refuse_change() RETURNS trigger LANGUAGE plpgsql"
            " AS $$ BEGIN RETURN NULL; END $$",
            "DROP FUNCTION memstore.refuse_change() CASCADE;"
            " ALTER FUNCTION memstore.refuse_change_orig() RENAME TO refuse_change",
            "function memstore.refuse_change() has a body that differs from sql/",
        ),
        (
            "CREATE POLICY everything ON memstore.edges USING (true)",
            "DROP POLICY everything ON memstore.edges",
            "policy everything on memstore.edges is not defined in sql/",
        ),
        (
            "ALTER TABLE memstore.embeddings DISABLE ROW LEVEL SECURITY",
            "ALTER TABLE memstore.embeddings ENABLE ROW LEVEL SECURITY",
            "row-level security is disabled on memstore.embeddings",
        ),
        (
            "ALTER VIEW memstore.v_current_nodes SET (security_invoker = false)",
            "ALTER VIEW memstore.v_current_nodes SET (security_invoker = true)",
            "view memstore.v_current_nodes is not security_invoker: it would read past"
            " row-level security with its owner's rights",
        ),
        (
            "ALTER DATABASE {db} SET session_replication_role = replica",
            "ALTER DATABASE {db} RESET session_replication_role",
            "session_replication_role is set for database {db}, role (all roles):"
            " it silences the append-only triggers",
        ),
    ],
    ids=[
        "dropped-trigger",
        "replica-trigger",
        "extra-trigger",
        "replaced-function",
        "extra-policy",
        "rls-off",
        "view-owner-rights",
        "replica-role",
    ],
)
def test_tampering_is_named(check, conn, tamper, undo, expected):
    db = conn.info.dbname
    conn.execute(tamper.format(db=db))
    try:
        assert expected.format(db=db) in check()
    finally:
        conn.execute(undo.format(db=db))
    assert check() == []


def test_a_loosened_policy_is_noticed(check, conn):
    conn.execute(
        "ALTER POLICY namespace_only ON memstore.nodes"
        " USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint)"
    )
    try:
        (problem,) = check()
        assert problem.startswith("policy namespace_only on memstore.nodes differs from sql/")
    finally:
        conn.execute(
            "ALTER POLICY namespace_only ON memstore.nodes USING ("
            "namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint"
            " AND privacy <= nullif(current_setting('memstore.privacy_ceiling', true),"
            " '')::smallint)"
        )
    assert check() == []


def test_the_session_setting_is_noticed(database_url):
    engine = create_engine(database_url)
    try:
        with transaction(engine) as conn:
            conn.exec_driver_sql("SET LOCAL session_replication_role = replica")
            assert "this session runs with session_replication_role = replica" in (
                integrity.problems(conn)
            )
    finally:
        engine.dispose()


def test_the_comparison_is_with_sql_files_not_a_copy(conn, check):
    # The live trigger text, reproduced by hand, compares equal to sql/'s layout.
    definition = conn.execute(
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = 'no_update'"
        " AND tgrelid = 'memstore.nodes'::regclass"
    ).fetchone()[0]
    expected = integrity.definitions().triggers[("nodes", "no_update")]
    assert integrity.normalised_trigger(definition) == integrity.normalised_trigger(expected)
    assert psycopg  # the module's connections are psycopg's
