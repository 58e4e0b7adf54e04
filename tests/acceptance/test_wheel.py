"""A wheel built from the repository migrates a database from outside the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import psycopg
import pytest

from memstore.db import integrity, migrate

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (built,) = out.glob("memstore-*.whl")
    return built


def test_the_wheel_ships_migrations_and_sql(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "memstore/_resources/migrations/env.py" in names
    assert "memstore/_resources/migrations/versions/0002_append_only_law.py" in names
    assert "memstore/_resources/sql/03_redaction.sql" in names
    assert "memstore/_resources/sql/04_versions.sql" in names
    # Named queries live beside the code that runs them.
    assert "memstore/recall/recall.sql" in names
    assert "memstore/_resources/sql/05_neighbourhood.sql" in names
    assert "memstore/activation/learning.sql" in names
    # Type checkers read the package's annotations (PEP 561).
    assert "memstore/py.typed" in names


@pytest.mark.slow
def test_an_installed_wheel_migrates_a_fresh_database(wheel, make_database, tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    url = make_database(migrated=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # The wheel's memstore comes first on the path; its dependencies come from
    # this environment. The working directory is outside the source tree.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env["PYTHONPATH"] = str(site)
    env["MEMSTORE_DATABASE_URL"] = url
    code = (
        "import memstore, memstore.db.resources as r, memstore.cli as cli, sys;"
        "print(memstore.__file__); print(r.migrations_dir());"
        "sys.argv = ['memstore', 'db', 'upgrade']; cli.main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    package_file, migrations, *_ = done.stdout.splitlines()
    assert package_file.startswith(str(site))
    assert migrations.startswith(str(site)) and "_resources" in migrations
    with psycopg.connect(url) as conn:
        revision = conn.execute("SELECT version_num FROM memstore.alembic_version").fetchone()
        functions = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE pronamespace = 'memstore'::regnamespace"
        ).fetchone()
    assert revision == (migrate.head_revision(),)
    assert functions == (len(integrity.definitions().functions),)  # every function of sql/
