"""MemoryStore.open: the schema version is a contract; the embedded server is shared."""

from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest
import sqlalchemy as sa

from memstore import MemoryStore
from memstore.config import Settings
from memstore.db import migrate
from memstore.db.engine import create_engine
from memstore.errors import (
    ConfigurationError,
    DatabaseUnavailableError,
    SchemaVersionError,
    StoreClosedError,
)


def _migrate_to(url: str, revision: str) -> None:
    engine = create_engine(url)
    try:
        migrate.upgrade(engine, revision)
    finally:
        engine.dispose()


def test_open_refuses_a_database_that_was_never_migrated(make_database):
    url = make_database(migrated=False)
    with pytest.raises(SchemaVersionError) as exc:
        MemoryStore.open(url)
    assert exc.value.database_revision is None
    assert exc.value.package_revision == migrate.head_revision()
    assert "memstore db upgrade" in str(exc.value)
    with psycopg.connect(url) as conn:  # and it migrated nothing behind our back
        assert conn.execute("SELECT to_regclass('memstore.nodes')").fetchone() == (None,)


def test_open_refuses_a_schema_that_is_behind_naming_both_revisions(make_database):
    url = make_database(migrated=False)
    _migrate_to(url, "0001")
    with pytest.raises(SchemaVersionError) as exc:
        MemoryStore.open(url)
    head = migrate.head_revision()
    assert (exc.value.database_revision, exc.value.package_revision) == ("0001", head)
    assert "0001" in str(exc.value) and head in str(exc.value)


def test_open_refuses_a_schema_newer_than_the_package(make_database):
    url = make_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE memstore.alembic_version SET version_num = 'f00d'")
    with pytest.raises(SchemaVersionError, match="does not know: upgrade the package"):
        MemoryStore.open(url)


def test_auto_upgrade_never_touches_a_schema_newer_than_the_package(make_database):
    # What a newer memstore left behind is not this package's to migrate: the
    # answer is the named error, not Alembic's "can't locate revision".
    url = make_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE memstore.alembic_version SET version_num = 'f00d'")
    with pytest.raises(SchemaVersionError, match="does not know: upgrade the package"):
        MemoryStore.open(url, auto_upgrade=True)
    engine = create_engine(url)
    try:
        with pytest.raises(SchemaVersionError, match="f00d"):
            migrate.upgrade(engine)
    finally:
        engine.dispose()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version_num FROM memstore.alembic_version").fetchone() == (
            "f00d",
        )


@pytest.mark.parametrize("url", ["", "  "])
def test_an_empty_url_is_refused_not_taken_for_the_embedded_default(url):
    with pytest.raises(ConfigurationError, match="URL is empty"):
        MemoryStore.open(url)


def test_auto_upgrade_is_an_explicit_opt_in_for_a_server_url(make_database):
    url = make_database(migrated=False)
    with MemoryStore.open(url, auto_upgrade=True) as store:
        assert store.status().schema_revision == migrate.head_revision()


def test_status_counts_rows_of_every_table(database_url, seed):
    with MemoryStore.open(database_url) as store:
        status = store.status()
    assert status.embedded is False
    assert status.schema_revision == status.package_revision
    assert status.pgvector_version >= "0.8"
    counts = status.row_counts
    assert set(counts) == {
        "namespaces",
        "nodes",
        "edges",
        "tombstones",
        "supersessions",
        "operations",
        "proposals",
        "activations",
        "node_state",
        "edge_state",
        "embeddings",
        "redactions",
        "confirmations",
        "procedure_outcomes",
        "procedure_roles",
        "activation_summaries",
        "maintenance_runs",
    }
    assert counts["nodes"] >= 4 and counts["redactions"] >= 1
    assert "***" in status.database_url or "@" not in status.database_url.split("?")[0]
    assert status.model_dump_json()  # serialisable


def test_a_closed_store_says_so(database_url):
    store = MemoryStore.open(database_url)
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        store.status()


def test_an_unreachable_server_is_a_clear_error():
    url = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
    with pytest.raises(DatabaseUnavailableError, match="cannot connect to postgresql"):
        MemoryStore.open(url)


def _postmaster_running(data_dir):
    pid_file = data_dir / "pg" / "postmaster.pid"
    return pid_file.exists()


def test_embedded_server_starts_migrates_is_shared_and_stops(tmp_path):
    settings = Settings(data_dir=tmp_path, database_url=None)
    first = MemoryStore.open(settings=settings)
    assert first.status().embedded is True
    assert first.status().schema_revision == migrate.head_revision()
    second = MemoryStore.open(settings=settings)  # same process, same server
    assert second.status().database_url == first.status().database_url

    # Another process joins the running server, and leaving does not stop it.
    code = (
        "from memstore import MemoryStore; from memstore.config import Settings;"
        f"s = MemoryStore.open(settings=Settings(data_dir={str(tmp_path)!r}));"
        "print(s.status().row_counts['nodes']); s.close()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"

    first.close()
    with second.engine.connect() as conn:  # still served after the first store closed
        assert conn.execute(sa.text("SELECT 1")).scalar_one() == 1
    assert _postmaster_running(tmp_path)
    second.close()
    assert not _postmaster_running(tmp_path)

    # Reopening finds the data again.
    with MemoryStore.open(settings=settings) as again:
        assert again.status().schema_revision == migrate.head_revision()


def test_every_database_error_leaves_as_a_memstore_error(database_url, seed):
    from memstore.errors import DatabaseError, MemstoreError

    with MemoryStore.open(database_url) as store:
        with pytest.raises(DatabaseError) as exc, store.transaction() as tx:
            tx.execute(
                sa.text(
                    "INSERT INTO memstore.nodes (namespace_id, kind, content, importance)"
                    " VALUES (:ns, 'episodic', 'too important', 2)"
                ),
                {"ns": seed.namespace_id},
            )
        assert isinstance(exc.value, MemstoreError)
        assert (exc.value.sqlstate, exc.value.constraint) == ("23514", "ck_nodes_importance_range")
        assert isinstance(exc.value.__cause__, sa.exc.DBAPIError)  # the driver error is kept
        # ...and the failed transaction wrote nothing.
        with store.transaction() as tx:
            count = tx.execute(
                sa.text("SELECT count(*) FROM memstore.nodes WHERE content = 'too important'")
            ).scalar_one()
        assert count == 0


def test_a_namespace_is_opened_once_and_kept(database_url, monkeypatch):
    import memstore.store as store_module

    monkeypatch.setattr(store_module, "NAMESPACES_KEPT", 2)
    store = MemoryStore.open(database_url)
    first = store.namespace("kept-a")
    assert store.namespace("kept-a") is first  # no second round trip, same cached statistics
    second = store.namespace("kept-b")
    store.namespace("kept-a")  # used most recently: kept when a third arrives
    store.namespace("kept-c")
    assert store.namespace("kept-a") is first
    reopened = store.namespace("kept-b")  # evicted: opened again, the same namespace
    assert reopened is not second and reopened.id == second.id
    store.close()
    with pytest.raises(StoreClosedError):
        store.namespace("kept-a")


def test_a_semantic_recall_never_samples_the_namespaces_terms(database_url):
    store = MemoryStore.open(database_url)
    ns = store.namespace("semantic only")
    ns.remember_many([f"harbour note {i}" for i in range(5)])
    ns.recall("harbour", mode="semantic")
    assert ns._recall.term_counts.documents is None  # the sample is for BM25 only
    ns.recall("harbour", mode="lexical")
    assert ns._recall.term_counts.documents == 5
    store.close()
