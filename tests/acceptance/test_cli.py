"""The installed ``memstore`` command, run the way a deploy pipeline runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstore.db import migrate

MEMSTORE = str(Path(sys.executable).with_name("memstore"))


def run(*args: str, url: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    if url is not None:
        environment["MEMSTORE_DATABASE_URL"] = url
    environment.update(env)
    return subprocess.run(
        [MEMSTORE, *args], capture_output=True, text=True, env=environment, timeout=300
    )


def test_upgrade_current_check_on_a_fresh_database(make_database):
    url = make_database(migrated=False)
    head = migrate.head_revision()

    behind = run("db", "check", url=url)
    assert behind.returncode == 1
    assert "no memstore schema" in behind.stderr and head in behind.stderr

    assert run("db", "upgrade", "--revision", "0001", url=url).returncode == 0
    behind = run("db", "check", url=url)
    assert behind.returncode == 1
    assert f"revision 0001 but this memstore package needs revision {head}" in behind.stderr

    current = run("db", "current", url=url)
    assert current.returncode == 0
    assert "database revision: 0001" in current.stdout
    assert f"package revision:  {head}" in current.stdout

    upgraded = run("db", "upgrade", url=url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"at revision {head}" in upgraded.stdout
    assert run("db", "check", url=url).returncode == 0

    status = run("status", "--json", url=url)
    assert status.returncode == 0, status.stderr
    assert '"schema_revision": "' + head + '"' in status.stdout


def test_status_refuses_a_schema_that_is_behind(make_database):
    url = make_database(migrated=False)
    done = run("status", url=url)
    assert done.returncode == 1
    assert done.stderr.startswith("error: the database has no memstore schema")
    assert "Traceback" not in done.stderr


def test_db_sql_prints_the_upgrade_without_connecting():
    # An address nothing listens on: the command must not try it.
    done = run("db", "sql", url="postgresql://nobody@127.0.0.1:1/nowhere")
    assert done.returncode == 0, done.stderr
    assert "CREATE TABLE memstore.nodes" in done.stdout
    assert "CREATE OR REPLACE FUNCTION memstore.redact_node" in done.stdout
    later = run("db", "sql", "--from", "0001")
    assert "CREATE TABLE memstore.nodes" not in later.stdout


def test_an_unreachable_server_gets_one_line_not_a_traceback():
    done = run("db", "current", url="postgresql://nobody@127.0.0.1:1/nowhere?connect_timeout=2")
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot connect to postgresql://nobody@127.0.0.1:1")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["db"],
        ["db", "upgrade"],
        ["db", "downgrade"],
        ["db", "current"],
        ["db", "check"],
        ["db", "sql"],
        ["status"],
        ["demo"],
    ],
)
def test_every_command_has_help(command):
    done = run(*command, "--help")
    assert done.returncode == 0
    assert "Usage:" in done.stdout
    if not command:
        assert "MEMSTORE_DATABASE_URL" in done.stdout and "MEMSTORE_DATA_DIR" in done.stdout
