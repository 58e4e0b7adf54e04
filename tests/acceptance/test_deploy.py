"""The documented deploy (docs/operations.md, "A first deploy"), step by step, as documented.

An administrator creates the roles and the extension; ``memstore_owner`` — not
a superuser, with only the rights docs/security.md lists — migrates the whole
chain to head; the administrator grants the service its privileges; ``db
check`` is green; and ``memstore_app`` does the everyday work. Every step runs
the installed CLI where the docs use the CLI, so a migration that needs more
than the owner has (any revision, later ones included) fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

from memstore import MemoryStore
from memstore.db import migrate

MEMSTORE = str(Path(sys.executable).with_name("memstore"))
PASSWORD = "memstore-test"


def run(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    environment.update(MEMSTORE_DATABASE_URL=url, MEMSTORE_EMBEDDER="hashing", COLUMNS="200")
    return subprocess.run(
        [MEMSTORE, *args], capture_output=True, text=True, env=environment, timeout=600
    )


def ok(*args: str, url: str) -> str:
    done = run(*args, url=url)
    assert done.returncode == 0, f"memstore {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    return done.stdout


def as_role(url: str, role: str) -> str:
    return (
        sa.engine.make_url(url)
        .set(drivername="postgresql", username=role, password=PASSWORD)
        .render_as_string(hide_password=False)
    )


@pytest.fixture(scope="module")
def deployed(make_database):
    """A fresh database taken through the documented steps; returns (admin, owner, app) URLs."""
    admin = make_database(migrated=False)

    # 1. administrator: roles, the vector extension, the owner's right to migrate.
    first = ok("db", "roles", "--apply", url=admin)
    assert "no table privileges granted yet" in first
    with psycopg.connect(admin, autocommit=True) as conn:
        for role in ("memstore_owner", "memstore_app"):
            conn.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(PASSWORD)
                )
            )
    owner, app = as_role(admin, "memstore_owner"), as_role(admin, "memstore_app")

    # 2. memstore_owner: the whole chain, to head.
    assert f"at revision {migrate.head_revision()}" in ok("db", "upgrade", url=owner)

    # 3. administrator again: the service's and the reader's privileges.
    assert "privileges of memstore_app and memstore_reader granted" in ok(
        "db", "roles", "--apply", url=admin
    )
    return admin, owner, app


def test_the_owner_has_only_the_documented_rights(deployed):
    admin, _, _ = deployed
    with psycopg.connect(admin) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls,"
            " pg_has_role('memstore_owner', 'memstore_redactor', 'MEMBER'),"
            " has_database_privilege('memstore_owner', current_database(), 'CREATE'),"
            " (SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'memstore')"
            " FROM pg_roles WHERE rolname = 'memstore_owner'"
        ).fetchone()
        tables = conn.execute(
            "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'memstore'"
        ).fetchall()
    assert row == (False, False, False, False, True, True, "memstore_owner")
    assert tables == [("memstore_owner",)]


def test_db_check_is_green_after_the_documented_steps(deployed):
    _, owner, _ = deployed
    out = ok("db", "check", url=owner)
    assert "all match sql/, the metadata and roles.py" in out


def test_the_app_role_does_the_everyday_work(deployed, tmp_path):
    _, owner, app = deployed
    name = f"deploy-{uuid.uuid4().hex[:6]}"

    def cli(*args: str) -> str:
        return ok(*args, "--namespace", name, url=app)

    first = json.loads(cli("remember", "The staging database lives in Frankfurt", "--json"))
    hits = json.loads(cli("recall", "staging database", "--json"))
    assert [h["node"]["id"] for h in hits][:1] == [first["id"]]
    revised = json.loads(
        cli("revise", str(first["id"]), "The staging database moved to Dublin",
            "--reason", "migration", "--json")
    )  # fmt: skip
    scratch = json.loads(cli("remember", "A temporary note", "--json"))
    forgotten = json.loads(cli("forget", str(scratch["id"]), "--reason", "noise", "--json"))
    assert forgotten["tombstone"] > 0

    anatomy = {
        "target": "deploys",
        "claim_or_question": "The owner migrates, the service runs",
        "tension": "one role did both",
        "action_implication": "split the roles",
        "anchors": ["deploy-doc"],
    }
    batch = tmp_path / "ops.json"
    batch.write_text(json.dumps([{"op": "record_short_term", "anatomy": anatomy}]))
    receipt = json.loads(cli("apply", str(batch), "--phase", "rumination", "--json"))
    assert receipt["applied"] and receipt["results"][0]["operation_id"] > 0

    # Erasure (now also `memstore redact`); as the service role, through the
    # library.
    with MemoryStore.open(app) as store:
        ns = store.namespace(name)
        ns.redact(revised["id"], reason="test erasure", actor="dpo")
        assert ns.get(revised["id"]).content == ""

    with psycopg.connect(owner) as conn:
        ns_id = conn.execute(
            "SELECT id FROM memstore.namespaces WHERE name = %s", (name,)
        ).fetchone()
        assert ns_id is not None
        operations = conn.execute(
            "SELECT op, outcome FROM memstore.operations WHERE namespace_id = %s", ns_id
        ).fetchall()
        redactions = conn.execute(
            "SELECT count(*) FROM memstore.redactions WHERE namespace_id = %s", ns_id
        ).fetchone()
    assert operations == [("record_short_term", "accepted")]
    assert redactions == (2,)  # the memory's two versions, each erased and recorded


def test_the_owner_creates_keys_the_service_checks(deployed):
    """docs/server.md, "Deploying": keys by the owner, `memstore serve` as memstore_app."""
    from memstore.server.auth import authenticate

    _, owner, app = deployed
    created = json.loads(ok("keys", "create", "--namespace", "deployed", "--json", url=owner))
    assert run("keys", "list", url=app).returncode == 1  # the service may not read keys
    with MemoryStore.open(app) as store:
        principal = authenticate(store, f"Bearer {created['key']}")
        assert principal.allows("deployed") and principal.has("write")
    ok("keys", "revoke", str(created["id"]), url=owner)
    with MemoryStore.open(app) as store, pytest.raises(Exception, match="revoked"):
        authenticate(store, f"Bearer {created['key']}")
