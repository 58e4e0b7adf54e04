"""memstore.redact_node: the one audited way content leaves, and only through its role."""

from __future__ import annotations

import hashlib
import hmac
import uuid

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

from memstore import MemoryStore
from memstore.errors import (
    SQLSTATE_IMMUTABLE,
    SQLSTATE_REDACTION,
    ImmutableRecordError,
    RedactionError,
)
from tests.conftest import declare_namespace, with_database


@pytest.fixture(autouse=True)
def _declared(request):
    """redact_node runs as memstore_redactor, which row-level security confines to
    the declared namespace: declare the seed's, as the service does per transaction."""
    if "seed" in request.fixturenames and "conn" in request.fixturenames:
        declare_namespace(
            request.getfixturevalue("conn"), request.getfixturevalue("seed").namespace_id
        )


def _node(conn, ns, node_id):
    return conn.execute(
        "SELECT content, label, data, content_hash, search::text, kind, importance"
        " FROM memstore.nodes WHERE namespace_id = %s AND id = %s",
        (ns, node_id),
    ).fetchone()


def test_redaction_blanks_content_and_keeps_identity_edges_and_lineage(conn, seed):
    ns = seed.namespace_id
    before = _node(conn, ns, seed.home)
    redaction_id = conn.execute(
        "SELECT memstore.redact_node(%s, %s, %s, %s)", (ns, seed.home, "GDPR art. 17", "dpo@acme")
    ).fetchone()[0]

    content, label, data, content_hash, search, kind, importance = _node(conn, ns, seed.home)
    assert (content, label, data, content_hash, search) == ("", None, {}, None, "")
    assert (kind, importance) == (before[5], before[6])  # nothing else changed

    record = conn.execute(
        "SELECT id, node_id, reason, actor, content_hash, redacted_at IS NOT NULL"
        " FROM memstore.redactions WHERE namespace_id = %s AND node_id = %s",
        (ns, seed.home),
    ).fetchone()
    # A keyed hash (HMAC-SHA256 under the namespace's erasure key), never the
    # plain sha256 of the content, which would let anyone confirm a guess.
    assert record[4] != hashlib.sha256(b"Alice lives in Lisbon").digest()
    assert record == (redaction_id, seed.home, "GDPR art. 17", "dpo@acme", record[4], True)
    inner, outer = conn.execute(
        "SELECT inner_pad, outer_pad FROM memstore.erasure_keys WHERE namespace_id = %s", (ns,)
    ).fetchone()
    key = bytes(b ^ 0x36 for b in inner)
    assert bytes(b ^ 0x5C for b in key) == outer  # the pads of one 64-byte key
    assert record[4] == hmac.new(key, b"Alice lives in Lisbon", hashlib.sha256).digest()

    embeddings = conn.execute(
        "SELECT count(*) FROM memstore.embeddings WHERE namespace_id = %s AND node_id = %s",
        (ns, seed.home),
    ).fetchone()
    assert embeddings == (0,)
    # Edges in and out, the supersession that led here, the access log: all kept.
    kept = conn.execute(
        """SELECT (SELECT count(*) FROM memstore.edges
                   WHERE namespace_id = %(ns)s AND (src = %(n)s OR dst = %(n)s)),
                  (SELECT count(*) FROM memstore.supersessions
                   WHERE namespace_id = %(ns)s AND new_id = %(n)s),
                  (SELECT count(*) FROM memstore.activations
                   WHERE namespace_id = %(ns)s AND node_id = %(n)s)""",
        {"ns": ns, "n": seed.home},
    ).fetchone()
    assert kept == (2, 1, 1)


def test_redacted_content_is_no_longer_found_by_full_text(conn, seed):
    found = conn.execute(
        "SELECT count(*) FROM memstore.nodes WHERE namespace_id = %s"
        " AND search @@ plainto_tsquery('english', 'phone number')",
        (seed.namespace_id,),
    ).fetchone()
    assert found == (0,)  # the seed redacted the phone-number node


@pytest.mark.parametrize(
    ("node", "reason", "actor", "message"),
    [
        ("phone", "again", "dpo", "already redacted"),
        (None, "gone", "dpo", "does not exist"),
        ("home", "", "dpo", "needs a reason"),
        ("home", "why", " ", "needs a reason and an actor"),
    ],
)
def test_bad_redactions_are_refused_and_change_nothing(conn, seed, node, reason, actor, message):
    node_id = getattr(seed, node) if node else 10**12
    before = _node(conn, seed.namespace_id, seed.home)
    with pytest.raises(psycopg.Error) as exc:
        conn.execute(
            "SELECT memstore.redact_node(%s, %s, %s, %s)",
            (seed.namespace_id, node_id, reason, actor),
        )
    assert exc.value.sqlstate == SQLSTATE_REDACTION
    assert message in str(exc.value)
    assert _node(conn, seed.namespace_id, seed.home) == before


def test_redaction_is_confined_to_its_namespace(conn, seed):
    other = conn.execute(
        "INSERT INTO memstore.namespaces (name) VALUES (%s) RETURNING id", (f"o-{uuid.uuid4()}",)
    ).fetchone()[0]
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("SELECT memstore.redact_node(%s, %s, 'x', 'y')", (other, seed.home))
    assert exc.value.sqlstate == SQLSTATE_REDACTION
    assert _node(conn, seed.namespace_id, seed.home)[0] == "Alice lives in Lisbon"


@pytest.fixture
def ordinary_role(conn, database_url):
    """A non-superuser login role with every table privilege an app could have."""
    role = f"memstore_t_{uuid.uuid4().hex[:8]}"
    ident = sql.Identifier(role)
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'pw'").format(ident))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA memstore TO {}").format(ident))
    conn.execute(sql.SQL("GRANT ALL ON ALL TABLES IN SCHEMA memstore TO {}").format(ident))
    conn.execute(
        sql.SQL(
            "GRANT EXECUTE ON FUNCTION memstore.redact_node(bigint, bigint, text, text) TO {}"
        ).format(ident)
    )
    url = sa.engine.make_url(with_database(database_url, conn.info.dbname))
    url = url.set(username=role, password="pw")
    yield url.render_as_string(hide_password=False)
    conn.execute(sql.SQL("DROP OWNED BY {}").format(ident))
    conn.execute(sql.SQL("DROP ROLE {}").format(ident))


def test_an_ordinary_role_cannot_update_even_with_settings_nor_become_the_redactor(
    seed, ordinary_role
):
    with psycopg.connect(ordinary_role, autocommit=True) as app:
        declare_namespace(app, seed.namespace_id)
        app.execute("SET memstore.redactor = 'on'")
        app.execute("SET application_name = 'memstore_redactor'")
        with pytest.raises(psycopg.Error) as exc:
            app.execute(
                "UPDATE memstore.nodes SET content = '', label = NULL, data = '{}',"
                " content_hash = NULL WHERE namespace_id = %s AND id = %s",
                (seed.namespace_id, seed.home),
            )
        assert exc.value.sqlstate == SQLSTATE_IMMUTABLE
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("SET ROLE memstore_redactor")
        # ...while the sanctioned door works for it.
        app.execute(
            "SELECT memstore.redact_node(%s, %s, 'erasure request', 'app')",
            (seed.namespace_id, seed.home),
        )
        assert _node(app, seed.namespace_id, seed.home)[0] == ""


def test_the_redactor_may_blank_content_but_not_change_anything_else(conn, seed):
    conn.execute("SET ROLE memstore_redactor")  # the test connection is a superuser
    try:
        with pytest.raises(psycopg.Error) as exc:
            conn.execute(
                "UPDATE memstore.nodes SET content = '', label = NULL, data = '{}',"
                " content_hash = NULL, importance = 1 WHERE namespace_id = %s AND id = %s",
                (seed.namespace_id, seed.home),
            )
        assert exc.value.sqlstate == SQLSTATE_IMMUTABLE
        with pytest.raises(psycopg.Error) as exc:
            conn.execute(
                "UPDATE memstore.nodes SET content = 'rewritten'"
                " WHERE namespace_id = %s AND id = %s",
                (seed.namespace_id, seed.home),
            )
        assert exc.value.sqlstate == SQLSTATE_IMMUTABLE
    finally:
        conn.execute("RESET ROLE")


def test_the_store_translates_refusals_into_named_errors(database_url, seed):
    with MemoryStore.open(database_url) as store:
        with pytest.raises(ImmutableRecordError) as exc, store.transaction() as tx:
            tx.execute(
                sa.text("DELETE FROM memstore.nodes WHERE namespace_id = :ns"),
                {"ns": seed.namespace_id},
            )
        assert exc.value.table == "nodes"
        assert "revise creates a new version" in str(exc.value)
        with pytest.raises(RedactionError, match="already redacted"), store.transaction() as tx:
            tx.exec_driver_sql(f"SET LOCAL memstore.namespace_id = '{seed.namespace_id:d}'")
            tx.exec_driver_sql("SET LOCAL memstore.privacy_ceiling = '3'")
            tx.execute(
                sa.text("SELECT memstore.redact_node(:ns, :n, 'again', 'test')"),
                {"ns": seed.namespace_id, "n": seed.phone},
            )
