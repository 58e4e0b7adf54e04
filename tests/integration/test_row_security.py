"""Row-level security: connected as memstore_app (or memstore_reader) with namespace A
declared, nothing returns or changes B's rows, whatever the SQL or the name."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from memstore import MemoryStore
from memstore.db.roles import APP_PRIVILEGES, READER_TABLES, VIEWS
from memstore.db.schema import (
    APPEND_ONLY_TABLES,
    KEY_TABLES,
    MUTABLE_STATE_TABLES,
    SECRET_TABLES,
    metadata,
)
from memstore.db.transaction import confined, scope_statement
from memstore.embedding import HashingEmbedder
from memstore.errors import InvalidInputError, RedactionError
from memstore.graph.nodes import may_copy_directly
from memstore.tx import NamespaceTransaction
from tests.conftest import Seed, declare_namespace

Connection = psycopg.Connection[tuple[object, ...]]


@pytest.fixture(scope="module")
def two(database_url: str) -> tuple[Seed, Seed]:
    """Namespaces A and B, one row in every table each, written by the owner."""
    with psycopg.connect(database_url, autocommit=True) as admin:
        return Seed(admin, f"A-{uuid.uuid4().hex[:6]}"), Seed(admin, f"B-{uuid.uuid4().hex[:6]}")


@pytest.fixture
def app(app_url: str) -> Iterator[Connection]:
    with psycopg.connect(app_url) as connection:
        yield connection


def _snapshot(url: str, namespace_id: int) -> dict[str, list[tuple[object, ...]]]:
    """Every row of one namespace, read by the owner."""
    with psycopg.connect(url) as admin:
        out = {}
        for table in metadata.sorted_tables:
            if table.name in KEY_TABLES:
                continue  # no namespace's rows (tests/server/test_keys.py)
            column = "id" if table.name == "namespaces" else "namespace_id"
            query = sql.SQL("SELECT t::text FROM memstore.{} t WHERE {} = %s ORDER BY 1").format(
                sql.Identifier(table.name), sql.Identifier(column)
            )
            out[table.name] = admin.execute(query, (namespace_id,)).fetchall()
    return out


def _snapshot_in(conn: Connection, namespace_id: int) -> dict[str, list[tuple[object, ...]]]:
    """What ``conn`` itself can see of one namespace."""
    out = {}
    for table in metadata.sorted_tables:
        if table.name in SECRET_TABLES:
            continue  # not readable by the app at all (test_the_erasure_keys_are_secret)
        column = "id" if table.name == "namespaces" else "namespace_id"
        query = sql.SQL("SELECT t::text FROM memstore.{} t WHERE {} = %s").format(
            sql.Identifier(table.name), sql.Identifier(column)
        )
        out[table.name] = conn.execute(query, (namespace_id,)).fetchall()
    return out


TABLES = [t.name for t in metadata.sorted_tables]
# What the app may read (the erasure keys are for memstore_redactor only).
READABLE = [t for t in TABLES if t not in SECRET_TABLES]


def test_every_table_has_row_security_and_a_policy(database_url):
    with psycopg.connect(database_url) as admin:
        rows = admin.execute(
            "SELECT c.relname, c.relrowsecurity,"
            " (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)"
            " FROM pg_class c WHERE c.relnamespace = 'memstore'::regnamespace"
            " AND c.relkind = 'r' AND c.relname <> 'alembic_version'"
        ).fetchall()
    found = {name: (enabled, policies) for name, enabled, policies in rows}
    # A table added to schema.py without a policy in sql/07 fails here.
    assert set(found) == set(TABLES)
    assert {name for name, (enabled, count) in found.items() if not enabled or count < 1} == set()


@pytest.mark.parametrize("table", READABLE)
def test_with_a_declared_it_reads_none_of_b(app, two, table):
    a, b = two
    column = "id" if table == "namespaces" else "namespace_id"
    with app.transaction():
        app.execute(scope_statement(a.namespace_id, 3))
        seen = app.execute(
            sql.SQL("SELECT DISTINCT {} FROM memstore.{}").format(
                sql.Identifier(column), sql.Identifier(table)
            )
        ).fetchall()
        asked = app.execute(
            sql.SQL("SELECT count(*) FROM memstore.{} WHERE {} = %s").format(
                sql.Identifier(table), sql.Identifier(column)
            ),
            (b.namespace_id,),
        ).fetchone()
    assert seen == [(a.namespace_id,)]
    assert asked == (0,)


def test_nothing_is_visible_until_a_namespace_is_declared(app, two):
    for table in READABLE:
        query = sql.SQL("SELECT count(*) FROM memstore.{}").format(sql.Identifier(table))
        assert app.execute(query).fetchone() == (0,), table
    app.rollback()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE memstore.node_state SET activation_count = 99 WHERE namespace_id = %(b)s",
        "UPDATE memstore.node_state SET activation_count = 99",
        "UPDATE memstore.edge_state SET hebbian_weight = 1 WHERE namespace_id = %(b)s",
        "UPDATE memstore.proposals SET status = 'accepted', decided_by = 'x'"
        " WHERE namespace_id = %(b)s",
        "DELETE FROM memstore.embeddings WHERE namespace_id = %(b)s",
        "DELETE FROM memstore.embeddings WHERE namespace_id <> %(a)s",
        "UPDATE memstore.embeddings SET model = 'moved' WHERE namespace_id = %(b)s",
    ],
)
def test_with_a_declared_it_changes_none_of_b(app, app_url, database_url, two, statement):
    a, b = two
    before = _snapshot(database_url, b.namespace_id)
    with app.transaction(force_rollback=True):
        app.execute(scope_statement(a.namespace_id, 3))
        changed = app.execute(statement, {"a": a.namespace_id, "b": b.namespace_id}).rowcount
        changed_b = _snapshot_in(app, b.namespace_id)
    if "%(b)s" in statement:
        assert changed == 0
    assert _snapshot(database_url, b.namespace_id) == before
    assert all(rows == [] for rows in changed_b.values())


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO memstore.nodes (namespace_id, kind, content) VALUES (%(b)s, 'semantic', 'x')",
        "INSERT INTO memstore.edges (namespace_id, src, dst) VALUES (%(b)s, %(b1)s, %(b2)s)",
        "INSERT INTO memstore.embeddings (namespace_id, node_id, model, dims, embedding,"
        " source_hash) VALUES (%(b)s, %(b1)s, 'm', 3, '[1,2,3]', '\\x00')",
        "UPDATE memstore.node_state SET namespace_id = %(b)s WHERE namespace_id = %(a)s",
    ],
)
def test_it_cannot_write_rows_into_b(app, database_url, two, statement):
    a, b = two
    before = _snapshot(database_url, b.namespace_id)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        with app.transaction():
            app.execute(scope_statement(a.namespace_id, 3))
            app.execute(
                statement, {"a": a.namespace_id, "b": b.namespace_id, "b1": b.home, "b2": b.tea}
            )
    assert _snapshot(database_url, b.namespace_id) == before


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES + MUTABLE_STATE_TABLES + ("proposals",))
def test_the_app_has_no_delete_truncate_or_ddl(app, two, table):
    for statement in (
        sql.SQL("DELETE FROM memstore.{}"),
        sql.SQL("TRUNCATE memstore.{}"),
        sql.SQL("ALTER TABLE memstore.{} DISABLE TRIGGER ALL"),
        sql.SQL("ALTER TABLE memstore.{} DISABLE ROW LEVEL SECURITY"),
        sql.SQL("CREATE INDEX ON memstore.{} (namespace_id)"),
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with app.transaction():
                app.execute(scope_statement(two[0].namespace_id, 3))
                app.execute(statement.format(sql.Identifier(table)))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app.execute("CREATE TABLE memstore.stray (id int)")
    app.rollback()


def test_privileges_are_exactly_the_documented_ones(roles_applied):
    with psycopg.connect(roles_applied) as admin:
        for table in TABLES:
            for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE"):
                for role, allowed in (
                    ("memstore_app", privilege in APP_PRIVILEGES[table]),
                    ("memstore_reader", privilege == "SELECT" and table in READER_TABLES),
                ):
                    has = admin.execute(
                        "SELECT has_table_privilege(%s, %s, %s)",
                        (role, f"memstore.{table}", privilege),
                    ).fetchone()
                    assert has == (allowed,), (role, table, privilege)
        for view in VIEWS:
            assert admin.execute(
                "SELECT has_table_privilege('memstore_reader', %s, 'SELECT'),"
                " has_table_privilege('memstore_reader', %s, 'INSERT')",
                (f"memstore.{view}", f"memstore.{view}"),
            ).fetchone() == (True, False)
        attributes = admin.execute(
            "SELECT rolname, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles"
            " WHERE rolname IN ('memstore_app', 'memstore_reader') ORDER BY 1"
        ).fetchall()
        assert attributes == [
            ("memstore_app", False, False, False, False),
            ("memstore_reader", False, False, False, False),
        ]


def test_the_erasure_keys_are_secret(app_url, reader_url, two):
    """Neither confined role reads a namespace's erasure key or computes with it: a
    keyed hash of an erased value must not let them confirm a guess of it."""
    a, _ = two
    for url in (app_url, reader_url):
        for statement in (
            "SELECT count(*) FROM memstore.erasure_keys",
            "SELECT memstore.erasure_digest(%(ns)s, '\\x00')",
            "SELECT memstore.erased_text(%(ns)s, 'a guess')",
            "SELECT memstore.erasure_of('nodes', '{}')",
        ):
            with psycopg.connect(url) as role, role.transaction():
                role.execute(scope_statement(a.namespace_id, 3))
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    role.execute(statement, {"ns": a.namespace_id})


def test_redaction_through_the_app_reaches_only_the_declared_namespace(app, database_url, two):
    a, b = two
    before = _snapshot(database_url, b.namespace_id)
    with pytest.raises(psycopg.Error) as exc, app.transaction():
        app.execute(scope_statement(a.namespace_id, 3))
        app.execute("SELECT memstore.redact_node(%s, %s, 'x', 'y')", (b.namespace_id, b.home))
    assert "does not exist" in str(exc.value)
    assert _snapshot(database_url, b.namespace_id) == before


def test_the_app_finds_a_namespace_only_by_its_exact_name(app, two):
    a, b = two
    name_b = _name_of(app, b)
    found = app.execute("SELECT memstore.open_namespace(%s, '{}'::jsonb)", (name_b,)).fetchone()
    assert found == (b.namespace_id,)
    # ...but it cannot list namespaces, nor match a pattern.
    assert app.execute("SELECT count(*) FROM memstore.namespaces").fetchone() == (0,)
    pattern = app.execute(
        "SELECT memstore.open_namespace(%s, '{}'::jsonb)", (name_b[:2] + "%",)
    ).fetchone()
    assert pattern is not None and pattern[0] not in (a.namespace_id, b.namespace_id)
    app.rollback()


def _name_of(app: Connection, seed: Seed) -> str:
    with app.transaction():
        app.execute(scope_statement(seed.namespace_id, 3))
        row = app.execute("SELECT name FROM memstore.namespaces").fetchone()
    assert row is not None
    return str(row[0])


def test_a_privacy_ceiling_hides_higher_nodes_in_sql(app, database_url, two):
    a, _ = two
    with psycopg.connect(database_url, autocommit=True) as admin:
        private = admin.execute(
            "INSERT INTO memstore.nodes (namespace_id, kind, content, privacy)"
            " SELECT %s, 'semantic', 'private ' || level, level FROM generate_series(0, 3) level"
            " RETURNING privacy",
            (a.namespace_id,),
        ).fetchall()
    assert len(private) == 4
    for ceiling in range(4):
        with app.transaction():
            app.execute(scope_statement(a.namespace_id, ceiling))
            levels = app.execute(
                "SELECT DISTINCT privacy FROM memstore.nodes ORDER BY 1"
            ).fetchall()
            hidden = app.execute(
                "SELECT count(*) FROM memstore.nodes WHERE privacy > %s", (ceiling,)
            ).fetchone()
            view = app.execute("SELECT max(privacy) FROM memstore.v_current_nodes").fetchone()
        assert [level for (level,) in levels] == list(range(ceiling + 1))
        assert hidden == (0,)
        assert view == (ceiling,)


def test_the_reader_sees_the_views_of_one_namespace_only(reader_url, database_url, two):
    a, _ = two
    with psycopg.connect(database_url) as admin:
        owner_count = admin.execute(
            "SELECT count(*) FROM memstore.nodes WHERE namespace_id = %s", (a.namespace_id,)
        ).fetchone()
    assert owner_count is not None
    with psycopg.connect(reader_url) as reader:
        with reader.transaction():
            reader.execute(scope_statement(a.namespace_id, 3))
            for view in VIEWS:
                rows = reader.execute(
                    sql.SQL("SELECT DISTINCT namespace_id FROM memstore.{}").format(
                        sql.Identifier(view)
                    )
                ).fetchall()
                assert set(rows) <= {(a.namespace_id,)}, view
            stats = reader.execute(
                "SELECT namespace_id, nodes FROM memstore.v_namespace_stats"
            ).fetchall()
            assert stats == [(a.namespace_id, owner_count[0])]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            reader.execute("SELECT count(*) FROM memstore.node_state")
        reader.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            reader.execute(
                "INSERT INTO memstore.operations (namespace_id, op, outcome)"
                " VALUES (%s, 'x', 'accepted')",
                (a.namespace_id,),
            )


ADVERSARIAL_NAMES = [
    "john_doe",
    "john-doe",
    "johnXdoe",
    "JOHN_DOE",
    "%",
    "_",
    "%%",
    "john%",
    "' OR '1'='1",
    "'; SET LOCAL memstore.namespace_id = '1'; --",
    'quote"d',
    "back\\slash",
    "back\\\\slash",
    "\\x00",
    "\uff4a\uff4f\uff48\uff4e\uff3f\uff44\uff4f\uff45",  # fullwidth john_doe
    "j\u043ehn_doe",  # Cyrillic o
    "e\u0301",  # e + combining acute
    "\u00e9",  # precomposed é
    "🧠",
    "x" * 2048,
    "x" * 2047,
]


@pytest.fixture(scope="module")
def app_store(app_url: str) -> Iterator[MemoryStore]:
    """The production configuration: the service connected as memstore_app."""
    with MemoryStore.open(app_url, embedder=HashingEmbedder()) as store:
        yield store


def test_adversarial_names_never_cross(app_store, app_url):
    spaces = {name: app_store.namespace(name) for name in ADVERSARIAL_NAMES}
    for i, ns in enumerate(spaces.values()):
        ns.remember(f"secret number {i} of its owner", kind="semantic")
    assert len({ns.id for ns in spaces.values()}) == len(ADVERSARIAL_NAMES)
    for i, (name, ns) in enumerate(spaces.items()):
        again = app_store.namespace(name)
        assert again.id == ns.id
        hits = again.recall("secret number of its owner", k=50, mode="lexical")
        assert [h.node.content for h in hits] == [f"secret number {i} of its owner"], name
        with psycopg.connect(app_url) as app, app.transaction():
            app.execute(scope_statement(ns.id, 3))
            rows = app.execute("SELECT namespace_id, content FROM memstore.nodes").fetchall()
        assert rows == [(ns.id, f"secret number {i} of its owner")]
    with pytest.raises(InvalidInputError, match="at most 2048 bytes"):
        app_store.namespace("x" * 10_240)
    with pytest.raises(InvalidInputError, match="NUL"):
        app_store.namespace("john\x00doe")
    # Names that only look like another (issue 17 §8) are refused, not stored.
    with pytest.raises(InvalidInputError, match="whitespace"):
        app_store.namespace("john_doe ")
    with pytest.raises(InvalidInputError, match="U\\+200B"):
        app_store.namespace("john\u200bdoe")


def test_the_service_round_trips_as_the_app_role(app_store, database_url):
    ns = app_store.namespace(f"app-{uuid.uuid4().hex[:8]}")
    home = ns.remember("Alice lives in Lisbon", kind="semantic", privacy=2)
    moved = ns.revise(home.id, "Alice lives in Porto", reason="she moved")
    note = ns.remember("Alice likes green tea")
    ns.link(moved.id, note.id, relation="related")
    ids = ns.remember_many([f"bulk memory {i}" for i in range(5)])
    assert [h.node.id for h in ns.recall("where does Alice live", k=1)] == [moved.id]
    low = ns.recall("where does Alice live", k=5, privacy_ceiling=1, mode="lexical")
    assert moved.id not in {h.node.id for h in low}
    assert [n.id for n in ns.lineage(moved.id)] == [home.id, moved.id]
    ns.activate("Alice", learn=True)
    ns.forget(ids[0], reason="not needed")
    ns.redact(note.id, reason="data-subject request", actor="dpo")
    summary = ns.summary()
    assert summary.by_status == {"current": 5, "superseded": 1, "tombstoned": 1, "redacted": 1}
    assert ns.embedding_status().missing == 0
    ns.scratchpad.pin("city", "Porto")
    pinned = ns.scratchpad.get("city")
    assert pinned is not None and pinned.content.endswith("Porto")
    with pytest.raises(RedactionError):
        ns.redact(note.id, reason="again", actor="dpo")
    with psycopg.connect(database_url) as admin:
        owner_sees = admin.execute(
            "SELECT count(*) FROM memstore.nodes WHERE namespace_id = %s", (ns.id,)
        ).fetchone()
    assert owner_sees == (9,)


def test_lexical_recall_as_the_app_matches_the_owner_and_keeps_its_index(
    app_store, store, database_url
):
    # The app's full-text match goes through sql/08's functions (the policy
    # would otherwise keep the GIN index from being used); same answers.
    name = f"lexical-{uuid.uuid4().hex[:8]}"
    mine = app_store.namespace(name)
    mine.remember_many([f"note {i} about the weather" for i in range(40)])
    mine.remember_many(["the budget meeting moved", "budget numbers for March"])
    mine.remember("the budget is secret", privacy=3)
    with app_store.transaction() as conn, store.transaction() as owner:
        assert confined(conn) and not confined(owner)
    as_owner = store.namespace(name)
    for query in ("budget meeting", "weather", "March budget numbers"):
        app_hits = [h.node.id for h in mine.recall(query, mode="lexical", k=5, privacy_ceiling=2)]
        owner_hits = [
            h.node.id for h in as_owner.recall(query, mode="lexical", k=5, privacy_ceiling=2)
        ]
        assert app_hits == owner_hits, query
    secret = mine.recall("secret budget", mode="lexical", k=5, privacy_ceiling=2)
    assert "the budget is secret" not in {h.node.content for h in secret}


def test_the_lifecycle_law_runs_as_the_app_role(app_store):
    # apply, sleep and review lock proposals (SELECT ... FOR UPDATE), write the
    # operations log and decide proposals: all within memstore_app's grants.
    from tests.integration.test_citus_runtime import lifecycle_workload

    ns = app_store.namespace(f"app-law-{uuid.uuid4().hex[:8]}")
    lifecycle_workload(ns)
    assert ns.review.pending() == []
    by_tier = ns.summary().by_tier
    assert by_tier["short_term"]["tombstoned"] == 2  # both accounted for by sleep
    assert by_tier["incubation"]["current"] == 1
    assert by_tier["identity"] == {"current": 1, "superseded": 1, "tombstoned": 0, "redacted": 0}


def test_declare_namespace_helper_matches_the_service(database_url, two):
    # The test helper and the service's statement set the same two settings.
    with psycopg.connect(database_url) as conn:
        declare_namespace(conn, two[0].namespace_id, 1)
        got = conn.execute(
            "SELECT current_setting('memstore.namespace_id'),"
            " current_setting('memstore.privacy_ceiling')"
        ).fetchone()
    assert got == (str(two[0].namespace_id), "1")
    with pytest.raises(TypeError):
        scope_statement("1; DROP TABLE x", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not negative"):
        scope_statement(-1, 3)
    # 0 is no namespace: what a read of a name nobody has written to declares.
    assert "namespace_id = '0'" in scope_statement(0, 3).as_string(None)


def test_bulk_import_writes_the_same_rows_for_the_owner_and_the_app(app_store, store, database_url):
    # The owner COPYs straight into the tables; the app (COPY FROM refuses a
    # table under a policy) goes through the staging table. Same rows, same
    # order of ids, same vectors; a batch holding a stored key falls back.
    items = [
        {"content": f"shared memory {i % 7}", "kind": "semantic" if i % 3 else "episodic"}
        for i in range(30)
    ] + [{"content": "with data", "data": {"a": [1, 2]}, "importance": 0.9, "privacy": 2}]
    loaded: dict[str, list[int]] = {}
    for who, opened in (("owner", store), ("app", app_store)):
        ns = opened.namespace(f"same-rows-{who}-{uuid.uuid4().hex[:6]}")
        with opened.transaction() as conn:
            assert may_copy_directly(conn) is (who == "owner")
        ns.remember("shared memory 3", kind="semantic")
        ids = ns.remember_many(items, batch_size=8)
        loaded[who] = [ns.id, *ids]
    columns = sql.SQL(", ").join(
        sql.Identifier("n", name)
        for name in ("kind", "node_type", "content", "data", "importance", "privacy")
    )
    seen = []
    with psycopg.connect(database_url) as admin:
        for namespace_id, *ids in loaded.values():
            rows = admin.execute(
                sql.SQL(
                    "SELECT {}, n.content_hash, e.model, e.dims, e.embedding::text, e.source_hash"
                    " FROM memstore.nodes n JOIN memstore.embeddings e"
                    " ON e.namespace_id = n.namespace_id AND e.node_id = n.id"
                    " WHERE n.namespace_id = %s ORDER BY n.id"
                ).format(columns),
                (namespace_id,),
            ).fetchall()
            order = {node_id: rank for rank, node_id in enumerate(sorted(set(ids)))}
            seen.append(([order[i] for i in ids], rows))
    assert seen[0] == seen[1]
    assert len(seen[0][1]) == 15  # 14 distinct (content, kind) keys, one stored before


def test_remembering_a_memory_above_the_ceiling_stores_its_own_instead_of_waiting(app_store):
    # The unique index sees the stored node; the policy hides it from this
    # transaction: no number of attempts would find it. An error would tell
    # the caller that it exists (issue 17 §1), so the memory becomes a node of
    # its own, under a key that names the ceiling.
    ns = app_store.namespace(f"ceiling-{uuid.uuid4().hex[:8]}")
    hidden = ns.remember("kept above the ceiling", privacy=3)
    with ns.connection(privacy_ceiling=1) as conn:
        mine = NamespaceTransaction(ns, conn, privacy_ceiling=1).remember("kept above the ceiling")
    assert mine.id != hidden.id and mine.privacy == 0
    assert ns.get(hidden.id).privacy == 3
