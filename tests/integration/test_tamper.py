"""Tamper evidence beyond the guards: privileges, roles, owners, structure and strangers.

Each case plants one change as a superuser (the test server's URL is one),
runs the check in the same transaction and rolls back, so the cases are
independent even when the change is cluster-wide (a role attribute, a
membership); the CLI cases commit into a database of their own. Every case
asserts the finding's code *and* that its message names the planted object.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

from memstore.db import integrity, roles
from memstore.db.engine import create_engine
from memstore.db.sqlfiles import sql_files
from memstore.embedding.cache import ensure_index

MEMSTORE = str(Path(sys.executable).with_name("memstore"))
REDACT = "memstore.redact_node(bigint, bigint, text, text)"


def _apply_roles(url: str) -> None:
    """What `memstore db roles --apply` runs, as the migrating superuser."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(roles.roles_sql().encode())


@pytest.fixture(scope="module")
def roles_url(make_database) -> str:
    """A migrated database with `memstore db roles --apply` run on it."""
    url: str = make_database()
    _apply_roles(url)
    return url


@pytest.fixture(scope="module")
def engine(roles_url) -> Iterator[sa.Engine]:
    engine = create_engine(roles_url)
    yield engine
    engine.dispose()


def _planted(engine: sa.Engine, tamper: str) -> list[integrity.Finding]:
    """The findings with ``tamper`` run first in the same transaction, rolled back after."""
    with engine.connect() as conn:
        try:
            raw = conn.connection.driver_connection
            assert raw is not None
            database = raw.info.dbname
            raw.execute(tamper.replace("{db}", database).encode())
            return integrity.findings(conn)
        finally:
            conn.rollback()


def _cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    return subprocess.run(
        [MEMSTORE, "db", "check", *args],
        env={**environment, "MEMSTORE_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _view_rewritten() -> str:
    """sql/'s own v_activation_daily with one more condition: the same columns, another query."""
    statement = integrity.definitions().view_statements["v_activation_daily"]
    assert "FROM memstore.activations a\n" in statement
    return statement.replace(
        "FROM memstore.activations a\n", "FROM memstore.activations a WHERE a.strength > 0.5\n"
    )


# (id, SQL to plant, the finding's code, text its message must contain)
PLANTS = [
    # privileges
    (
        "public-table",
        "GRANT SELECT ON memstore.nodes TO PUBLIC",
        "public-grant",
        "PUBLIC (every role) has SELECT on table memstore.nodes",
    ),
    (
        "public-function",
        f"GRANT EXECUTE ON FUNCTION {REDACT} TO PUBLIC",
        "public-grant",
        "EXECUTE on function memstore.redact_node(bigint,bigint,text,text)",
    ),
    (
        "public-schema",
        "GRANT CREATE ON SCHEMA memstore TO PUBLIC",
        "public-grant",
        "PUBLIC (every role) has CREATE on schema memstore",
    ),
    (
        "public-column",
        "GRANT SELECT (content) ON memstore.nodes TO PUBLIC",
        "public-grant",
        "SELECT on column memstore.nodes.content",
    ),
    (
        "public-view",
        "GRANT SELECT ON memstore.v_current_nodes TO PUBLIC",
        "public-grant",
        "SELECT on view memstore.v_current_nodes",
    ),
    (
        "app-delete",
        "GRANT DELETE ON memstore.nodes TO memstore_app",
        "role-privilege",
        "memstore_app has DELETE on table memstore.nodes",
    ),
    (
        "app-truncate",
        "GRANT TRUNCATE ON memstore.operations TO memstore_app",
        "role-privilege",
        "memstore_app has TRUNCATE on table memstore.operations",
    ),
    (
        "app-insert-namespaces",
        "GRANT INSERT ON memstore.namespaces TO memstore_app",
        "role-privilege",
        "memstore_app has INSERT on table memstore.namespaces",
    ),
    (
        "app-schema-create",
        "GRANT CREATE ON SCHEMA memstore TO memstore_app",
        "role-privilege",
        "memstore_app has CREATE on schema memstore",
    ),
    (
        "app-grant-option",
        "GRANT SELECT ON memstore.nodes TO memstore_app WITH GRANT OPTION",
        "role-privilege",
        "memstore_app has the grant option for SELECT on table memstore.nodes",
    ),
    (
        "app-redact-sequence",
        "GRANT UPDATE ON SEQUENCE memstore.nodes_id_seq TO memstore_app",
        "role-privilege",
        "memstore_app has UPDATE on sequence memstore.nodes_id_seq",
    ),
    (
        "reader-insert",
        "GRANT INSERT ON memstore.proposals TO memstore_reader",
        "role-privilege",
        "memstore_reader has INSERT on table memstore.proposals",
    ),
    (
        "reader-node-state",
        "GRANT SELECT ON memstore.node_state TO memstore_reader",
        "role-privilege",
        "memstore_reader has SELECT on table memstore.node_state",
    ),
    (
        "redactor-more",
        "GRANT DELETE ON memstore.nodes TO memstore_redactor",
        "role-privilege",
        "memstore_redactor has DELETE on table memstore.nodes, which sql/",
    ),
    (
        "stranger",
        "CREATE ROLE memstore_test_mallory; GRANT SELECT ON memstore.edges"
        " TO memstore_test_mallory",
        "stranger-privilege",
        "memstore_test_mallory has SELECT on table memstore.edges",
    ),
    (
        "app-revoked",
        "REVOKE INSERT ON memstore.nodes FROM memstore_app",
        "privilege-missing",
        "memstore_app lacks INSERT on table memstore.nodes",
    ),
    (
        "default-privileges",
        "ALTER DEFAULT PRIVILEGES IN SCHEMA memstore GRANT SELECT ON TABLES TO PUBLIC",
        "default-privilege",
        "in schema memstore give PUBLIC SELECT on new tables",
    ),
    # roles
    (
        "redactor-to-app",
        "GRANT memstore_redactor TO memstore_app",
        "redactor-member",
        "memstore_redactor is granted to memstore_app",
    ),
    (
        "redactor-to-stranger",
        "CREATE ROLE memstore_test_mallory LOGIN; GRANT memstore_redactor TO memstore_test_mallory",
        "redactor-member",
        "memstore_redactor is granted to memstore_test_mallory",
    ),
    (
        "app-member",
        "GRANT pg_read_all_data TO memstore_app",
        "role-membership",
        "memstore_app is a member of pg_read_all_data",
    ),
    (
        "reader-member",
        "GRANT memstore_app TO memstore_reader",
        "role-membership",
        "memstore_reader is a member of memstore_app",
    ),
    (
        "app-bypassrls",
        "ALTER ROLE memstore_app BYPASSRLS",
        "role-attribute",
        "role memstore_app has BYPASSRLS; roles.py gives it NOBYPASSRLS",
    ),
    (
        "reader-bypassrls",
        "ALTER ROLE memstore_reader BYPASSRLS",
        "role-attribute",
        "role memstore_reader has BYPASSRLS",
    ),
    (
        "app-superuser",
        "ALTER ROLE memstore_app SUPERUSER",
        "role-attribute",
        "role memstore_app has SUPERUSER",
    ),
    (
        "app-nologin",
        "ALTER ROLE memstore_app NOLOGIN",
        "role-attribute",
        "role memstore_app has NOLOGIN",
    ),
    (
        "redactor-login",
        "ALTER ROLE memstore_redactor LOGIN",
        "role-attribute",
        "role memstore_redactor has LOGIN",
    ),
    (
        "owner-bypassrls",
        "ALTER ROLE memstore_owner BYPASSRLS",
        "role-attribute",
        "role memstore_owner has BYPASSRLS",
    ),
    (
        "app-statement-timeout",
        "ALTER ROLE memstore_app SET statement_timeout = 1",
        "role-setting",
        "role memstore_app has statement_timeout = 1 in database (all databases)",
    ),
    (
        "reader-read-only",
        "ALTER ROLE memstore_reader IN DATABASE {db} SET default_transaction_read_only = on",
        "role-setting",
        "role memstore_reader has default_transaction_read_only = on in database",
    ),
    (
        "app-lock-timeout",
        "ALTER ROLE memstore_app IN DATABASE {db} SET lock_timeout = 1",
        "role-setting",
        "role memstore_app has lock_timeout = 1",
    ),
    (
        "app-idle-timeout",
        "ALTER ROLE memstore_app SET idle_in_transaction_session_timeout = 1",
        "role-setting",
        "role memstore_app has idle_in_transaction_session_timeout = 1",
    ),
    (
        "app-search-path",
        "ALTER ROLE memstore_app SET search_path = evil, public",
        "role-setting",
        "role memstore_app has search_path = evil, public",
    ),
    (
        "app-row-security",
        "ALTER ROLE memstore_app SET row_security = off",
        "role-setting",
        "role memstore_app has row_security = off",
    ),
    (
        "app-replica",
        "ALTER ROLE memstore_app SET session_replication_role = replica",
        "replication-role",
        "session_replication_role is set for database (all databases), role memstore_app",
    ),
    (
        "database-read-only",
        "ALTER DATABASE {db} SET default_transaction_read_only = on",
        "database-setting",
        "default_transaction_read_only = on is set for every role in database",
    ),
    # owners
    (
        "owner-table",
        "ALTER TABLE memstore.edges OWNER TO memstore_app",
        "owner-changed",
        "table memstore.edges is owned by memstore_app, not ",
    ),
    (
        "owner-view",
        "ALTER VIEW memstore.v_review_queue OWNER TO memstore_reader",
        "owner-changed",
        "view memstore.v_review_queue is owned by memstore_reader",
    ),
    (
        "owner-function",
        "ALTER FUNCTION memstore.open_namespace(text, jsonb) OWNER TO memstore_app",
        "owner-changed",
        "function memstore.open_namespace(text,jsonb) is owned by memstore_app",
    ),
    (
        "owner-redactor",
        f"ALTER FUNCTION {REDACT} OWNER TO memstore_owner",
        "owner-changed",
        "function memstore.redact_node(bigint,bigint,text,text) is owned by"
        " memstore_owner, not memstore_redactor",
    ),
    (
        "owner-schema",
        "ALTER SCHEMA memstore OWNER TO memstore_reader",
        "owner-changed",
        "schema memstore is owned by memstore_reader",
    ),
    (
        "owner-sequence",
        "ALTER TABLE memstore.tombstones OWNER TO memstore_owner",
        "owner-changed",
        "sequence memstore.tombstones_id_seq is owned by memstore_owner",
    ),
    # functions
    (
        "search-path-reset",
        "ALTER FUNCTION memstore.open_namespace(text, jsonb) RESET search_path",
        "function-config",
        "function memstore.open_namespace(text,jsonb) runs with SET (nothing)",
    ),
    (
        "search-path-changed",
        f"ALTER FUNCTION {REDACT} SET search_path = public, pg_temp",
        "function-config",
        "runs with SET search_path=public, pg_temp",
    ),
    (
        "definer-added",
        "ALTER FUNCTION memstore.node_rows(bigint, bigint[]) SECURITY DEFINER",
        "function-security",
        "function memstore.node_rows(bigint,bigint[]) is SECURITY DEFINER",
    ),
    (
        "leakproof",
        "ALTER FUNCTION memstore.current_version(bigint, bigint, timestamptz) LEAKPROOF",
        "function-changed",
        "leakproof True (sql/: False)",
    ),
    (
        "volatile",
        "ALTER FUNCTION memstore.current_version(bigint, bigint, timestamptz) VOLATILE",
        "function-changed",
        "function memstore.current_version(",
    ),
    # views
    (
        "view-rewritten",
        _view_rewritten(),
        "view-changed",
        "view memstore.v_activation_daily's query differs from sql/",
    ),
    # structure
    (
        "fk-dropped",
        "ALTER TABLE memstore.edges DROP CONSTRAINT fk_edges_src",
        "constraint-missing",
        "constraint fk_edges_src on memstore.edges is missing",
    ),
    (
        "check-dropped",
        "ALTER TABLE memstore.nodes DROP CONSTRAINT ck_nodes_privacy_range",
        "constraint-missing",
        "constraint ck_nodes_privacy_range on memstore.nodes is missing",
    ),
    (
        "unique-dropped",
        "ALTER TABLE memstore.namespaces DROP CONSTRAINT uq_namespaces_name",
        "constraint-missing",
        "constraint uq_namespaces_name on memstore.namespaces is missing",
    ),
    (
        "pk-dropped",
        "ALTER TABLE memstore.embeddings DROP CONSTRAINT pk_embeddings",
        "constraint-missing",
        "constraint pk_embeddings on memstore.embeddings is missing",
    ),
    (
        "check-loosened",
        "ALTER TABLE memstore.edges DROP CONSTRAINT ck_edges_no_self_loop,"
        " ADD CONSTRAINT ck_edges_no_self_loop CHECK (true)",
        "constraint-changed",
        "constraint ck_edges_no_self_loop on memstore.edges is CHECK (true)",
    ),
    (
        "fk-not-valid",
        "ALTER TABLE memstore.edges DROP CONSTRAINT fk_edges_dst,"
        " ADD CONSTRAINT fk_edges_dst FOREIGN KEY (namespace_id, dst)"
        " REFERENCES memstore.nodes (namespace_id, id) NOT VALID",
        "constraint-changed",
        "constraint fk_edges_dst on memstore.edges is NOT VALID",
    ),
    (
        "fk-disabled",
        "ALTER TABLE memstore.tombstones DISABLE TRIGGER ALL",
        "constraint-disabled",
        "constraint fk_tombstones_node_id on memstore.tombstones",
    ),
    (
        "not-null-dropped",
        "ALTER TABLE memstore.operations ALTER COLUMN outcome DROP NOT NULL",
        "not-null-dropped",
        "column memstore.operations.outcome accepts NULL",
    ),
    (
        "default-changed",
        "ALTER TABLE memstore.nodes ALTER COLUMN privacy SET DEFAULT 3",
        "column-changed",
        "column memstore.nodes.privacy differs: default '3'",
    ),
    (
        "identity-loosened",
        "ALTER TABLE memstore.nodes ALTER COLUMN id SET GENERATED BY DEFAULT",
        "column-changed",
        "column memstore.nodes.id differs: identity 'd' (metadata: 'a')",
    ),
    (
        "sequence-capped",
        "ALTER TABLE memstore.tombstones ALTER COLUMN id SET MAXVALUE 1000",
        "sequence-changed",
        "the identity sequence of memstore.tombstones.id differs: maximum 1000",
    ),
    (
        "column-added",
        "ALTER TABLE memstore.nodes ADD COLUMN copy text",
        "column-unknown",
        "column memstore.nodes.copy is not defined in the metadata",
    ),
    (
        "constraint-added",
        "ALTER TABLE memstore.nodes ADD CONSTRAINT lockout CHECK (false) NOT VALID",
        "constraint-unknown",
        "constraint lockout on memstore.nodes is not defined in the metadata",
    ),
    (
        "unique-index-dropped",
        "DROP INDEX memstore.uq_supersessions_old",
        "index-missing",
        "index memstore.uq_supersessions_old is missing",
    ),
    (
        "tombstone-index-dropped",
        "DROP INDEX memstore.uq_tombstones_node",
        "index-missing",
        "index memstore.uq_tombstones_node is missing",
    ),
    (
        "unique-index-weakened",
        "DROP INDEX memstore.uq_redactions_node;"
        " CREATE INDEX uq_redactions_node ON memstore.redactions (namespace_id, node_id)",
        "index-changed",
        "index memstore.uq_redactions_node is CREATE INDEX uq_redactions_node",
    ),
    (
        "index-added",
        "CREATE UNIQUE INDEX lockout ON memstore.edges (namespace_id)",
        "index-unknown",
        "index memstore.lockout is not defined in the metadata",
    ),
    (
        "unlogged",
        "ALTER TABLE memstore.activations SET UNLOGGED",
        "table-changed",
        "table memstore.activations is UNLOGGED",
    ),
    (
        "inherited",
        "CREATE TABLE public.memstore_test_more () INHERITS (memstore.nodes)",
        "table-changed",
        "memstore_test_more inherits from memstore.nodes",
    ),
    # strangers
    (
        "definer-dump",
        "CREATE FUNCTION memstore.dump_everything() RETURNS SETOF text"
        " LANGUAGE sql SECURITY DEFINER AS $$ SELECT content FROM memstore.nodes $$",
        "function-unknown",
        "function memstore.dump_everything() is not defined in sql/ (SECURITY DEFINER",
    ),
    (
        "overload",
        "CREATE FUNCTION memstore.redact_node(bigint) RETURNS bigint LANGUAGE sql"
        " AS $$ SELECT 1::bigint $$",
        "function-unknown",
        "function memstore.redact_node(bigint) is not defined in sql/",
    ),
    (
        "procedure",
        "CREATE PROCEDURE memstore.wipe() LANGUAGE sql AS $$ SELECT 1 $$",
        "function-unknown",
        "function memstore.wipe() is not defined in sql/",
    ),
    (
        "aggregate",
        "CREATE AGGREGATE memstore.gather(text) (SFUNC = textcat, STYPE = text)",
        "function-unknown",
        "function memstore.gather(text) is not defined in sql/",
    ),
    (
        "table",
        "CREATE TABLE memstore.stash (content text)",
        "object-unknown",
        "table memstore.stash is not defined in sql/ or the metadata",
    ),
    (
        "view",
        "CREATE VIEW memstore.v_everything AS SELECT content FROM memstore.nodes",
        "object-unknown",
        "view memstore.v_everything is not defined in sql/ or the metadata",
    ),
    (
        "materialized-view",
        "CREATE MATERIALIZED VIEW memstore.m_copy AS SELECT 1 AS x",
        "object-unknown",
        "materialized view memstore.m_copy is not defined",
    ),
    (
        "sequence",
        "CREATE SEQUENCE memstore.extra_seq",
        "object-unknown",
        "sequence memstore.extra_seq is not defined",
    ),
    (
        "enum",
        "CREATE TYPE memstore.mood AS ENUM ('calm')",
        "object-unknown",
        "type memstore.mood is not defined",
    ),
    (
        "composite",
        "CREATE TYPE memstore.pair AS (a int, b int)",
        "object-unknown",
        "type memstore.pair is not defined",
    ),
    (
        "domain",
        "CREATE DOMAIN memstore.short_text AS text",
        "object-unknown",
        "type memstore.short_text is not defined",
    ),
    (
        "operator",
        "CREATE OPERATOR memstore.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = int4eq)",
        "object-unknown",
        "operator memstore.===(integer,integer) is not defined",
    ),
    (
        "statistics",
        "CREATE STATISTICS memstore.kinds ON kind, tier FROM memstore.nodes",
        "object-unknown",
        "statistics memstore.kinds is not defined",
    ),
    (
        "text-search",
        "CREATE TEXT SEARCH CONFIGURATION memstore.plain (COPY = simple)",
        "object-unknown",
        "text search configuration memstore.plain is not defined",
    ),
    (
        "rule",
        "CREATE RULE swallow AS ON INSERT TO memstore.operations DO INSTEAD NOTHING",
        "rule-unknown",
        "rule swallow on memstore.operations is not defined in sql/",
    ),
    (
        "trigger",
        "CREATE TRIGGER sneaky BEFORE INSERT ON memstore.nodes"
        " FOR EACH ROW EXECUTE FUNCTION memstore.check_tombstone()",
        "trigger-unknown",
        "trigger sneaky on memstore.nodes is not defined in sql/",
    ),
    (
        "policy",
        "CREATE POLICY everything ON memstore.edges USING (true)",
        "policy-unknown",
        "policy everything on memstore.edges is not defined in sql/",
    ),
    # the check itself must survive what it looks for
    (
        "table-dropped",
        "DROP TABLE memstore.activations CASCADE",
        "table-missing",
        "table memstore.activations is missing",
    ),
    (
        "extension-member",
        "CREATE FUNCTION memstore.hidden() RETURNS bigint LANGUAGE sql SECURITY DEFINER"
        " AS 'SELECT count(*) FROM memstore.nodes';"
        " ALTER EXTENSION vector ADD FUNCTION memstore.hidden()",
        "extension-member",
        "function memstore.hidden() is a member of extension vector",
    ),
    (
        "sequence-owned-by-table",
        "CREATE SEQUENCE memstore.planted_seq OWNED BY memstore.nodes.id",
        "object-unknown",
        "sequence memstore.planted_seq is not defined",
    ),
]


@pytest.mark.parametrize(
    ("tamper", "code", "text"),
    [pytest.param(tamper, code, text, id=name) for name, tamper, code, text in PLANTS],
)
def test_each_tampering_is_a_named_finding(engine, tamper, code, text):
    found = _planted(engine, tamper)
    named = [f for f in found if f.code == code]
    assert any(text in f.message for f in named), found
    assert code in integrity.CODES


@pytest.mark.parametrize(
    "tamper",
    [
        "ALTER ROLE memstore_app SET session_replication_role = local",
        "ALTER DATABASE {db} SET session_replication_role = local",
        "SET LOCAL session_replication_role = local",
    ],
    ids=["role", "database", "session"],
)
def test_replication_role_local_is_not_a_finding(engine, tamper):
    """``local`` fires every trigger ``origin`` does (ENABLE REPLICA ones are trigger-disabled)."""
    assert _planted(engine, tamper) == []


def test_a_migrated_database_with_roles_applied_is_clean(engine, roles_url):
    with engine.connect() as conn:
        assert integrity.findings(conn) == []
    done = _cli(roles_url)
    assert done.returncode == 0, done.stderr


def test_a_migrated_database_without_roles_is_clean(make_database):
    # Roles are cluster-wide: other databases of this server may have created
    # them. The check is clean either way — with the roles existing but never
    # applied here, and (renamed away inside the transaction) with none.
    url = make_database()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            assert integrity.findings(conn) == []
            raw = conn.connection.driver_connection
            assert raw is not None
            # A server where `db roles` never ran: no memstore_owner, so no membership.
            raw.execute(
                "DO $$ BEGIN IF pg_has_role('memstore_owner', 'memstore_redactor', 'MEMBER')"
                " THEN REVOKE memstore_redactor FROM memstore_owner; END IF;"
                " EXCEPTION WHEN undefined_object THEN NULL; END $$"
            )
            for role in roles.ROLES:
                if raw.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                    raw.execute(
                        sql.SQL("ALTER ROLE {} RENAME TO {}").format(
                            sql.Identifier(role), sql.Identifier(f"{role}_gone")
                        )
                    )
            assert not raw.execute(
                "SELECT 1 FROM pg_roles WHERE rolname = ANY(%s)", (list(roles.ROLES),)
            ).fetchone()
            assert integrity.findings(conn) == []
            conn.rollback()
    finally:
        engine.dispose()
    done = _cli(url)
    assert done.returncode == 0, done.stderr


def test_an_embedding_models_index_is_expected(roles_url, engine):
    assert ensure_index(engine, "tamper-test-model", 8)
    with engine.connect() as conn:
        assert integrity.findings(conn) == []


def test_the_cli_names_each_finding_and_exits_1(make_database):
    url = make_database()
    _apply_roles(url)
    with psycopg.connect(url, autocommit=True) as admin:
        database = admin.info.dbname
        admin.execute(
            "CREATE FUNCTION memstore.dump_everything() RETURNS SETOF text LANGUAGE sql"
            " SECURITY DEFINER AS $$ SELECT content FROM memstore.nodes $$"
        )
        admin.execute("GRANT SELECT ON memstore.nodes TO PUBLIC")
        admin.execute(
            sql.SQL("ALTER ROLE memstore_app IN DATABASE {} SET statement_timeout = 1").format(
                sql.Identifier(database)
            )
        )
    done = _cli(url)
    assert done.returncode == 1
    assert (
        "error: [function-unknown] function memstore.dump_everything() is not defined in sql/"
        in done.stderr
    )
    assert "error: [public-grant] PUBLIC (every role) has SELECT on table memstore.nodes" in (
        done.stderr
    )
    assert "error: [role-setting] role memstore_app has statement_timeout = 1" in done.stderr
    as_json = _cli(url, "--json")
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["ok"] is False
    assert {f["code"] for f in report["findings"]} == {
        "function-unknown",
        "public-grant",
        "role-setting",
    }
    assert any("memstore.dump_everything()" in f["message"] for f in report["findings"])


def test_grants_come_from_roles_py_not_a_copy(engine, monkeypatch):
    planted = "GRANT DELETE ON memstore.embeddings TO memstore_reader"
    assert any(f.code == "role-privilege" for f in _planted(engine, planted))
    original = roles.roles_sql
    monkeypatch.setattr(roles, "roles_sql", lambda: original() + planted + ";\n")
    assert _planted(engine, planted) == []
    # ... and a grant roles.py stops making is an extra privilege where it was applied.
    monkeypatch.setattr(
        roles,
        "roles_sql",
        lambda: original().replace(
            "GRANT SELECT ON memstore.v_review_queue TO memstore_app, memstore_reader;", ""
        ),
    )
    found = _planted(engine, "SELECT 1")
    assert sorted(str(f) for f in found) == [
        f"[role-privilege] {role} has SELECT on view memstore.v_review_queue, which roles.py"
        " does not grant"
        for role in ("memstore_app", "memstore_reader")
    ]


def test_objects_sql_defines_are_picked_up_from_sql(engine, monkeypatch, tmp_path):
    # A later sql/ file that adds a SECURITY DEFINER function and grants it to
    # the app: once the database has it, the check expects it, with no list to edit.
    extra = tmp_path / "99_extra.sql"
    function = (
        "CREATE OR REPLACE FUNCTION memstore.tamper_test_added(p bigint) RETURNS bigint\n"
        "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp\n"
        "AS $$ SELECT p $$"
    )
    grants = (
        "REVOKE ALL ON FUNCTION memstore.tamper_test_added(bigint) FROM PUBLIC;\n"
        "GRANT EXECUTE ON FUNCTION memstore.tamper_test_added(bigint) TO CURRENT_USER"
    )
    extra.write_text(f"{function};\n{grants};\n")
    plant = f"{function}; {grants}"
    found = _planted(engine, plant)
    assert any(f.code == "function-unknown" for f in found)
    monkeypatch.setattr("memstore.db.integrity.sql_files", lambda: [*sql_files(), extra])
    assert _planted(engine, plant) == []
    # Still compared: the same function granted to PUBLIC is noticed.
    found = _planted(
        engine, f"{plant}; GRANT EXECUTE ON FUNCTION memstore.tamper_test_added(bigint) TO PUBLIC"
    )
    assert [f.code for f in found] == ["public-grant"]


def test_every_code_is_documented():
    text = (Path(__file__).parents[2] / "docs" / "security.md").read_text()
    for code in integrity.CODES:
        assert f"`{code}`" in text, code


def test_grants_replay_in_order_like_the_server(engine, monkeypatch):
    # roles.py's statements are replayed as PostgreSQL runs them: a schema-wide
    # grant, then a narrower REVOKE, then a REVOKE of the grant option only.
    added = (
        "GRANT SELECT ON ALL TABLES IN SCHEMA memstore TO memstore_reader;\n"
        "REVOKE SELECT ON memstore.node_state FROM memstore_reader;\n"
        "GRANT INSERT ON memstore.activations TO memstore_reader WITH GRANT OPTION;\n"
        "REVOKE GRANT OPTION FOR INSERT ON memstore.activations FROM memstore_reader;\n"
    )
    original = roles.roles_sql
    monkeypatch.setattr(roles, "roles_sql", lambda: original() + added)
    assert _planted(engine, added) == []
    found = _planted(engine, added + "GRANT SELECT ON memstore.node_state TO memstore_reader")
    assert [str(f) for f in found] == [
        "[role-privilege] memstore_reader has SELECT on table memstore.node_state, which"
        " roles.py does not grant"
    ]
    found = _planted(
        engine, added + "GRANT INSERT ON memstore.activations TO memstore_reader WITH GRANT OPTION"
    )
    assert [str(f) for f in found] == [
        "[role-privilege] memstore_reader has the grant option for INSERT on table"
        " memstore.activations, which roles.py does not grant"
    ]
