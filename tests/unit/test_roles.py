"""The roles' SQL: every table has a decided set of privileges, and none breaks the law."""

from __future__ import annotations

from memstore.db.roles import (
    APP_FUNCTIONS,
    APP_PRIVILEGES,
    READER_TABLES,
    ROLES,
    VIEWS,
    admin_sql,
    grants_sql,
    roles_sql,
)
from memstore.db.schema import APPEND_ONLY_TABLES, MUTABLE_STATE_TABLES, metadata
from memstore.db.sqlfiles import blank_comments, sql_files


def test_every_table_has_decided_privileges():
    # A new table must be given its privileges here (and a policy in sql/).
    assert set(APP_PRIVILEGES) == {table.name for table in metadata.sorted_tables}
    assert set(READER_TABLES) <= set(APP_PRIVILEGES)


def test_the_app_may_never_delete_or_truncate_truth():
    for table, privileges in APP_PRIVILEGES.items():
        assert "TRUNCATE" not in privileges
        if table in APPEND_ONLY_TABLES + MUTABLE_STATE_TABLES + ("proposals",):
            assert "DELETE" not in privileges, table
        if table in APPEND_ONLY_TABLES:
            assert "UPDATE" not in privileges, table


def test_the_views_are_exactly_those_sql_creates():
    text = "".join(path.read_text() for path in sql_files())
    created = {
        line.split()[4].removeprefix("memstore.")
        for line in text.splitlines()
        if line.startswith("CREATE OR REPLACE VIEW")
    }
    assert created == set(VIEWS)


def test_the_sql_names_every_role_and_grants_no_ddl():
    statement = roles_sql()
    for role in ROLES:
        assert f"CREATE ROLE {role}" in statement
    assert "BYPASSRLS" not in statement.replace("NOBYPASSRLS", "")
    grants = [line for line in statement.splitlines() if line.startswith("GRANT")]
    assert grants and not [g for g in grants if "TRUNCATE" in g or "GRANT ALL" in g]
    assert "CREATE ON SCHEMA" not in statement


def test_the_first_part_runs_before_any_migration():
    # Part 1 runs on a fresh database (docs/operations.md): it may not name
    # anything a migration creates; part 2 creates no roles.
    admin, grants = admin_sql(), grants_sql()
    statements = blank_comments(admin)
    assert "memstore." not in statements and "SCHEMA memstore" not in statements
    assert "CREATE EXTENSION IF NOT EXISTS vector" in admin
    assert "GRANT memstore_redactor TO memstore_owner" in admin
    assert "CREATE ROLE" not in grants and "ALTER ROLE" not in grants
    assert roles_sql() == admin + "\n" + grants


def test_the_app_writes_the_audit_log_only_through_record_operations():
    # Like namespaces (open_namespace) and redactions (redact_node): SECURITY
    # DEFINER functions write them, the service has no INSERT (sql/09).
    for table in ("operations", "namespaces", "redactions"):
        assert APP_PRIVILEGES[table] == ("SELECT",), table
    assert "memstore.record_operations(bigint, jsonb)" in APP_FUNCTIONS
