"""Time belongs to the database (sql/09_transaction_time.sql), tried as memstore_app.

A back-dated INSERT gets the transaction's time; a proposal enters pending and
moves only pending -> accepted/rejected with a reviewer, dated by the server;
the audit log is written only through memstore.record_operations. The
library's own paths keep working as the service role.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from psycopg import sql

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from memstore.errors import ProposalTransitionError, translate_db_error
from tests.conftest import Seed, declare_namespace

LONG_AGO = "2001-01-01T00:00:00Z"
NAME = f"time-{uuid.uuid4().hex[:6]}"

Connection = psycopg.Connection[tuple[object, ...]]


@pytest.fixture(scope="module")
def seeded(database_url: str) -> Seed:
    with psycopg.connect(database_url, autocommit=True) as admin:
        return Seed(admin, NAME)


@pytest.fixture
def app(app_url: str) -> Iterator[Connection]:
    with psycopg.connect(app_url) as connection:
        yield connection


@pytest.fixture
def owner(database_url: str) -> Iterator[Connection]:
    with psycopg.connect(database_url) as connection:
        yield connection


def _stamped(conn: Connection, ns: int, statement: str, **ids: object) -> tuple[object, object]:
    """Run ``statement`` (… RETURNING <time column>) in a rolled-back transaction.

    Returns (the stored time, the transaction's now()).
    """
    try:
        declare_namespace(conn, ns)
        stored = conn.execute(statement, {"ns": ns, "then": LONG_AGO, **ids}).fetchone()
        now = conn.execute("SELECT now()").fetchone()
        assert stored is not None and now is not None
        return stored[0], now[0]
    finally:
        conn.rollback()


# What the service role may write, each back-dated.
APP_WRITES = {
    "nodes": "INSERT INTO memstore.nodes (namespace_id, kind, content, recorded_at)"
    " VALUES (%(ns)s, 'semantic', 'back-dated', %(then)s) RETURNING recorded_at",
    "edges": "INSERT INTO memstore.edges (namespace_id, src, dst, recorded_at)"
    " VALUES (%(ns)s, %(home)s, %(tea)s, %(then)s) RETURNING recorded_at",
    "tombstones": "INSERT INTO memstore.tombstones (namespace_id, target_kind, edge_id, reason,"
    " at) VALUES (%(ns)s, 'edge', %(edge)s, 'r', %(then)s) RETURNING at",
    "supersessions": "INSERT INTO memstore.supersessions (namespace_id, old_id, new_id, reason,"
    " at) VALUES (%(ns)s, %(home)s, %(tea)s, 'r', %(then)s) RETURNING at",
    "activations": "INSERT INTO memstore.activations (namespace_id, node_id, strength, at)"
    " VALUES (%(ns)s, %(home)s, 0.5, %(then)s) RETURNING at",
    "proposals": "INSERT INTO memstore.proposals (namespace_id, operation, proposed_at)"
    ' VALUES (%(ns)s, \'{"op": "distill"}\', %(then)s) RETURNING proposed_at',
    "node_state": "INSERT INTO memstore.node_state (namespace_id, node_id, updated_at)"
    " VALUES (%(ns)s, %(tea)s, %(then)s) RETURNING updated_at",
    "node_state (update)": "UPDATE memstore.node_state SET updated_at = %(then)s"
    " WHERE namespace_id = %(ns)s AND node_id = %(home)s RETURNING updated_at",
    "embeddings": "INSERT INTO memstore.embeddings (namespace_id, node_id, model, dims,"
    " embedding, source_hash, created_at) VALUES (%(ns)s, %(move)s, 'test-3d', 3,"
    " '[1, 2, 3]', '\\x00', %(then)s) RETURNING created_at",
    "embeddings (update)": "UPDATE memstore.embeddings SET created_at = %(then)s"
    " WHERE namespace_id = %(ns)s AND node_id = %(home)s RETURNING created_at",
}


@pytest.mark.parametrize("write", APP_WRITES)
def test_a_back_dated_write_by_the_service_gets_the_transaction_time(app, seeded, write):
    s = seeded
    ids = {"home": s.home, "tea": s.tea, "move": s.move, "edge": s.edge_to_phone}
    stored, now = _stamped(app, s.namespace_id, APP_WRITES[write], **ids)
    assert stored == now


# What only the owner writes directly: the triggers hold for it too.
OWNER_WRITES = {
    "namespaces": "INSERT INTO memstore.namespaces (name, created_at)"
    " VALUES ('back-dated-' || %(ns)s, %(then)s) RETURNING created_at",
    "operations": "INSERT INTO memstore.operations (namespace_id, op, outcome, recorded_at)"
    " VALUES (%(ns)s, 'x', 'accepted', %(then)s) RETURNING recorded_at",
    "redactions": "INSERT INTO memstore.redactions (namespace_id, node_id, reason, actor,"
    " redacted_at) VALUES (%(ns)s, %(move)s, 'r', 'a', %(then)s) RETURNING redacted_at",
}


@pytest.mark.parametrize("write", OWNER_WRITES)
def test_a_back_dated_write_by_the_owner_gets_the_transaction_time(owner, seeded, write):
    stored, now = _stamped(owner, seeded.namespace_id, OWNER_WRITES[write], move=seeded.move)
    assert stored == now


def test_as_of_does_not_see_a_memory_back_dated_by_the_service(app, app_url, seeded):
    with app.transaction():
        declare_namespace(app, seeded.namespace_id)
        app.execute(
            "INSERT INTO memstore.nodes (namespace_id, kind, content, recorded_at)"
            " VALUES (%s, 'semantic', 'Zanzibar quokka sighting', %s)",
            (seeded.namespace_id, LONG_AGO),
        )
    with MemoryStore.open(app_url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(NAME)
        then = datetime(2010, 1, 1, tzinfo=UTC)
        assert ns.recall("Zanzibar quokka", mode="lexical", as_of=then) == []
        assert [h.node.content for h in ns.recall("Zanzibar quokka", mode="lexical")] == [
            "Zanzibar quokka sighting"
        ]


def test_a_now_on_the_callers_search_path_does_not_stamp(app, database_url, seeded):
    # The stamp functions run with the caller's rights: a caller that may
    # create a function somewhere must not shadow now() for them.
    schema = f"shadow_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        admin.execute(
            sql.SQL(
                "CREATE FUNCTION {}.now() RETURNS timestamptz LANGUAGE sql"
                " AS $$ SELECT timestamptz '2001-01-01' $$"
            ).format(sql.Identifier(schema))
        )
        admin.execute(
            sql.SQL("GRANT USAGE ON SCHEMA {} TO memstore_app").format(sql.Identifier(schema))
        )
    app.execute(sql.SQL("SET search_path = {}, pg_catalog").format(sql.Identifier(schema)))
    assert app.execute("SELECT now()").fetchone() == (datetime(2001, 1, 1, tzinfo=UTC),)
    stored, _ = _stamped(
        app, seeded.namespace_id, APP_WRITES["nodes"], home=seeded.home, tea=seeded.tea
    )
    real = app.execute("SELECT pg_catalog.now()").fetchone()
    app.rollback()
    assert real is not None and isinstance(stored, datetime)
    assert stored.year > 2001 and stored <= real[0]


# --- proposals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "columns, values",
    [
        ("status, decided_by, decided_at", "'accepted', 'me', now()"),
        ("status, decided_by, decided_at", "'rejected', 'me', now()"),
        ("decided_by", "'me'"),
        ("decision_reason", "'pre-approved'"),
    ],
)
def test_a_proposal_enters_pending_and_undecided(app, seeded, columns, values):
    statement = sql.SQL(
        "INSERT INTO memstore.proposals (namespace_id, operation, {}) VALUES (%s, '{{}}', {})"
    ).format(sql.SQL(columns), sql.SQL(values))
    with pytest.raises(psycopg.Error) as caught:
        with app.transaction():
            declare_namespace(app, seeded.namespace_id)
            app.execute(statement, (seeded.namespace_id,))
    assert caught.value.sqlstate == "MS004"
    assert "enters pending" in str(caught.value)
    assert isinstance(translate_db_error(caught.value), ProposalTransitionError)


def _proposal(conn: Connection, ns: int) -> int:
    declare_namespace(conn, ns)
    row = conn.execute(
        "INSERT INTO memstore.proposals (namespace_id, operation) VALUES (%s, '{}') RETURNING id",
        (ns,),
    ).fetchone()
    assert row is not None and isinstance(row[0], int)
    return row[0]


def test_a_decision_names_its_reviewer_and_is_dated_by_the_server(app, seeded):
    ns = seeded.namespace_id
    with app.transaction():
        proposal = _proposal(app, ns)
    with pytest.raises(psycopg.Error, match="names its reviewer") as caught:
        with app.transaction():
            declare_namespace(app, ns)
            app.execute(
                "UPDATE memstore.proposals SET status = 'accepted' WHERE namespace_id = %s"
                " AND id = %s",
                (ns, proposal),
            )
    assert caught.value.sqlstate == "MS004"
    with app.transaction():
        declare_namespace(app, ns)
        decided = app.execute(
            "UPDATE memstore.proposals SET status = 'accepted', decided_by = 'alice',"
            " decided_at = %s WHERE namespace_id = %s AND id = %s RETURNING decided_at, now()",
            (LONG_AGO, ns, proposal),
        ).fetchone()
    assert decided is not None and decided[0] == decided[1]
    for change in ("status = 'pending', decided_by = 'x'", "status = 'rejected', decided_by = 'x'"):
        with pytest.raises(psycopg.Error) as again:
            with app.transaction():
                declare_namespace(app, ns)
                app.execute(
                    sql.SQL(
                        "UPDATE memstore.proposals SET {} WHERE namespace_id = %s AND id = %s"
                    ).format(sql.SQL(change)),
                    (ns, proposal),
                )
        assert again.value.sqlstate == "MS004"


# --- the audit log --------------------------------------------------------------------------


def test_the_service_cannot_insert_into_operations(app, seeded):
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
        with app.transaction():
            declare_namespace(app, seeded.namespace_id)
            app.execute(
                "INSERT INTO memstore.operations (namespace_id, op, outcome)"
                " VALUES (%s, 'forged', 'accepted')",
                (seeded.namespace_id,),
            )


def test_record_operations_writes_in_order_into_the_declared_namespace_only(
    app, database_url, seeded
):
    ns = seeded.namespace_id
    rows = '[{"op": "first", "outcome": "accepted", "actor": "me"},' \
        ' {"op": "second", "outcome": "rejected", "reason": "no"}]'  # fmt: skip
    with app.transaction():
        declare_namespace(app, ns)
        ids = [r[0] for r in app.execute(
            "SELECT memstore.record_operations(%s, %s::jsonb)", (ns, rows)
        ).fetchall()]  # fmt: skip
        now = app.execute("SELECT now()").fetchone()
    with psycopg.connect(database_url) as admin:
        written = admin.execute(
            "SELECT id, op, outcome, recorded_at FROM memstore.operations"
            " WHERE namespace_id = %s AND id = ANY(%s) ORDER BY id",
            (ns, ids),
        ).fetchall()
        other = admin.execute(
            "INSERT INTO memstore.namespaces (name) VALUES (%s) RETURNING id",
            (f"other-{uuid.uuid4().hex[:6]}",),
        ).fetchone()
        admin.commit()
    assert now is not None and other is not None
    assert [(w[0], w[1], w[2]) for w in written] == [
        (ids[0], "first", "accepted"),
        (ids[1], "second", "rejected"),
    ]
    assert {w[3] for w in written} == {now[0]}
    # Another namespace (not the declared one), or none declared: refused, nothing written.
    for declared in (ns, None):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="declared it"):
            with app.transaction():
                if declared is not None:
                    declare_namespace(app, declared)
                app.execute("SELECT memstore.record_operations(%s, %s::jsonb)", (other[0], rows))
    with psycopg.connect(database_url) as admin:
        count = admin.execute(
            "SELECT count(*) FROM memstore.operations WHERE namespace_id = %s", (other[0],)
        ).fetchone()
    assert count == (0,)


def test_the_reader_cannot_record_operations(app_url, seeded):
    reader = app_url.replace("memstore_app", "memstore_reader", 1)
    with psycopg.connect(reader) as conn:
        declare_namespace(conn, seeded.namespace_id)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT memstore.record_operations(%s, '[]')", (seeded.namespace_id,))


def test_the_library_writes_its_log_and_reviews_as_the_service(app_url, database_url):
    anatomy = {
        "target": "self",
        "claim_or_question": "I keep my promises",
        "tension": "deadlines",
        "action_implication": "say no early",
        "anchors": ["turn:1"],
    }
    crystallize = {"op": "crystallize_identity", "anatomy": anatomy, "content": "I keep promises"}
    with MemoryStore.open(app_url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(f"lib-{uuid.uuid4().hex[:6]}")
        proposed = ns.apply(
            [{"op": "propose", "operation": crystallize, "rationale": "r", "evidence": ["e"]}],
            phase="wake",
            actor="agent",
        )
        proposal_id = proposed.results[0].proposal_id
        assert proposed.applied and proposed.results[0].operation_id and proposal_id
        accepted = ns.review.accept(proposal_id, reviewer="alice")
        assert accepted.applied
        identity = accepted.results[0].nodes[0]
        cultivated = ns.cultivate(identity, "I keep promises I can keep", reason="r", actor="me")
        namespace_id = ns.id
    with psycopg.connect(database_url) as admin:
        log = admin.execute(
            "SELECT op, outcome FROM memstore.operations WHERE namespace_id = %s ORDER BY id",
            (namespace_id,),
        ).fetchall()
        decided = admin.execute(
            "SELECT status, decided_by FROM memstore.proposals WHERE namespace_id = %s",
            (namespace_id,),
        ).fetchall()
    assert log == [("propose", "accepted"), ("accept_proposal", "accepted"),
                   ("cultivate", "accepted")]  # fmt: skip
    assert decided == [("accepted", "alice")]
    assert cultivated.content == "I keep promises I can keep"
