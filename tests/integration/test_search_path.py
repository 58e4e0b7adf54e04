"""A ``search_path`` that searches a schema before ``pg_catalog`` is a finding of
``memstore db check`` (found by the review of stop 28).

An owner (or superuser) who sets one for the database can plant a function there
that stands in for a built-in in the service's own statements: below, a
``current_setting`` that answers 3 for the privacy ceiling shows a privacy-3 memory
to a ceiling-0 ``get`` of a store connected as the owner (the embedded default).
The check used to see only its own copies of sql/ thrown off by the same path
(every policy "changed"), which sends the operator to the wrong place.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from memstore import MemoryStore
from memstore.db import integrity
from memstore.db.engine import create_engine
from memstore.db.integrity.roles import shadowing_schemas
from memstore.db.transaction import transaction
from memstore.embedding import HashingEmbedder
from memstore.errors import NodeNotFoundError

PLANT = """
CREATE SCHEMA IF NOT EXISTS planted;
CREATE OR REPLACE FUNCTION planted.current_setting(text, boolean) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE WHEN $1 = 'memstore.privacy_ceiling' THEN '3'
                ELSE pg_catalog.current_setting($1, $2) END
$$;
"""


@pytest.fixture(scope="module")
def planted(make_database) -> Iterator[tuple[str, int]]:
    url = make_database()
    with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
        secret = store.namespace("victim").remember("the secret plan", privacy=3)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(PLANT.encode())
    yield url, secret.id


def _findings(url: str) -> list[integrity.Finding]:
    engine = create_engine(url)
    try:
        with transaction(engine) as conn:
            return integrity.findings(conn)
    finally:
        engine.dispose()


def _set(url: str, target: str, value: str | None) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        who = {
            "database": sql.SQL("DATABASE {}").format(sql.Identifier(admin.info.dbname)),
            "owner": sql.SQL("ROLE CURRENT_USER IN DATABASE {}").format(
                sql.Identifier(admin.info.dbname)
            ),
            "every role": sql.SQL("ROLE ALL IN DATABASE {}").format(
                sql.Identifier(admin.info.dbname)
            ),
        }[target]
        if value is None:
            admin.execute(sql.SQL("ALTER {} RESET search_path").format(who))
        else:
            admin.execute(sql.SQL("ALTER {} SET search_path = {}").format(who, sql.SQL(value)))


@pytest.mark.parametrize("target", ["database", "owner", "every role"])
def test_a_schema_before_pg_catalog_is_a_finding_and_nothing_else_is(planted, target):
    url, secret = planted
    assert _findings(url) == []
    _set(url, target, "planted, pg_catalog, public")
    try:
        with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
            # What the finding is about: the service's own privacy filter, replaced.
            leaked = store.namespace("victim").get(secret, privacy_ceiling=0)
            assert leaked.content == "the secret plan"
        found = _findings(url)
        assert [f.code for f in found] == ["database-setting"], found
        assert "search_path = planted, pg_catalog, public" in found[0].message
        assert "planted is searched before pg_catalog" in found[0].message
    finally:
        _set(url, target, None)
    assert _findings(url) == []
    with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
        with pytest.raises(NodeNotFoundError):
            store.namespace("victim").get(secret, privacy_ceiling=0)


def test_a_path_that_keeps_pg_catalog_first_is_not_a_finding(planted):
    url, _ = planted
    _set(url, "database", '"$user", public, planted')
    try:
        assert _findings(url) == []
    finally:
        _set(url, "database", None)


@pytest.mark.parametrize(
    ("path", "before"),
    [
        ("planted, pg_catalog", ["planted"]),
        ('"$user", public', []),
        ("pg_catalog, public", []),
        ('public, "pg_catalog"', ["public"]),
        ("", []),
    ],
)
def test_shadowing_schemas(path, before):
    assert shadowing_schemas(path) == before
