"""Revision 0017 completes the erasures made before it and clears their plain hashes."""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from memstore.db import migrate
from tests.migrations.test_migrations import engine_for

__all__ = ["engine_for"]  # a fixture, used by name

TOKEN = "zqxjv-old-erasure"


def _one(conn: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def test_upgrading_completes_older_erasures(make_database, engine_for):
    url = make_database(migrated=False)
    migrate.upgrade(engine_for(url), "0016")
    with psycopg.connect(url, autocommit=True) as admin:
        ns = _one(admin, "INSERT INTO memstore.namespaces (name) VALUES ('old') RETURNING id")
        erased, kept = (
            _one(
                admin,
                "INSERT INTO memstore.nodes (namespace_id, kind, content, subject, source)"
                " VALUES (%s, 'semantic', %s, %s, %s) RETURNING id",
                (ns, content, f"subject {TOKEN}", f"source {TOKEN}"),
            )
            for content in (f"erased {TOKEN}", "kept")
        )
        admin.execute(
            "INSERT INTO memstore.edges (namespace_id, src, dst, relation, actor)"
            " VALUES (%s, %s, %s, %s, %s)",
            (ns, kept, erased, f"rel-{TOKEN}", f"actor {TOKEN}"),
        )
        with admin.transaction():
            admin.execute(f"SET LOCAL memstore.namespace_id = '{ns:d}'")
            admin.execute("SET LOCAL memstore.privacy_ceiling = '3'")
            admin.execute("SELECT memstore.redact_node(%s, %s, 'old request', 'dpo')", (ns, erased))
        plain = hashlib.sha256(f"erased {TOKEN}".encode()).digest()
        assert admin.execute("SELECT content_hash FROM memstore.redactions").fetchone() == (plain,)
        # Revision 0016 left the rest of the memory's words in place.
        assert admin.execute(
            "SELECT subject FROM memstore.nodes WHERE id = %s", (erased,)
        ).fetchone() == (f"subject {TOKEN}",)

    migrate.upgrade(engine_for(url))

    with psycopg.connect(url) as admin:
        assert admin.execute(
            "SELECT content_hash, reason, actor FROM memstore.redactions"
        ).fetchall() == [(None, "old request", "dpo")]
        node = admin.execute(
            "SELECT content, subject, source FROM memstore.nodes WHERE id = %s", (erased,)
        ).fetchone()
        assert node is not None and node[:2] == ("", None) and node[2].startswith("erased:")
        assert admin.execute("SELECT relation FROM memstore.edges").fetchone() == ("redacted",)
        left = admin.execute(
            "SELECT count(*) FROM memstore.nodes n, memstore.edges e"
            " WHERE n::text LIKE %(t)s OR e::text LIKE %(t)s",
            {"t": f"%{TOKEN}%"},
        ).fetchone()
        # Only the node that was never redacted keeps its words.
        assert left == (1,)
        assert admin.execute(
            "SELECT content FROM memstore.nodes WHERE id = %s", (kept,)
        ).fetchone() == ("kept",)
