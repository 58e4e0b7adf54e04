"""Read replicas: which server a read goes to, and read-your-writes.

A :class:`ReadRouter` holds the primary's engine and one engine per streaming
replica. Reads ask it for an engine (:meth:`ReadRouter.reading`,
:meth:`ReadRouter.run`); writes never do, they use the primary's engine.

Read-your-writes: when a connection that may have written goes back to the
primary's pool, the router notes it; the next read then asks the primary for
its WAL position (``pg_current_wal_lsn()``, one round trip, only after a
write) and uses a replica only once that replica has replayed up to it
(``pg_last_wal_replay_lsn()``). Until then reads go to the primary. With
``stale_ok`` the router skips both checks and reads from any replica whose lag
is within ``max_lag``. The guarantee covers this process's writes; another
process's writes reach its readers as replication delivers them.

A replica that cannot be reached, is no longer in recovery, or lags more than
``max_lag`` seconds is skipped with a warning and checked again later; a
read whose replica fails on connecting (or is cancelled by a recovery
conflict) runs again on the primary. Reads never fail because a replica is
gone.
"""

from __future__ import annotations

import itertools
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from memstore.db.engine import create_engine
from memstore.db.urls import mask
from memstore.errors import ConfigurationError, DatabaseUnavailableError, MemstoreError

T = TypeVar("T")

# How long a replica's health is trusted before it is checked again, and how long a
# replica that failed is left alone before the next try.
RECHECK_S = 1.0
RETRY_DOWN_S = 5.0
CONNECT_TIMEOUT_S = 2

# The replica's replay position and its lag in seconds: 0 while it streams and has
# replayed all it received; otherwise the age of the last transaction it replayed
# (a replica cut off from its primary ages, even when the primary is idle).
_REPLICA_STATE = """
SELECT pg_is_in_recovery(),
       pg_last_wal_replay_lsn()::text,
       CASE WHEN EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming')
                 AND pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0.0
            ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0.0)
       END::float8
"""
_PRIMARY_LSN = "SELECT pg_current_wal_lsn()::text"


def parse_lsn(text: str) -> int:
    """A WAL position ``'16/B374D848'`` as one comparable number.

    >>> parse_lsn("0/10") < parse_lsn("1/0")
    True
    """
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


def read_urls(value: str | Sequence[str] | None) -> list[str]:
    """Replica URLs from a comma-separated text (``MEMSTORE_READ_DATABASE_URL``) or a list.

    >>> read_urls("postgresql://r1/db, postgresql://r2/db")
    ['postgresql://r1/db', 'postgresql://r2/db']
    >>> read_urls(["postgresql://r1/db", ""])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    memstore.errors.ConfigurationError: read_url must be a URL, URLs separated by commas, or ...
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, Sequence) or not all(
        isinstance(part, str) and part.strip() for part in value
    ):
        raise ConfigurationError(
            "read_url must be a URL, URLs separated by commas, or a list of URLs"
        )
    return [part.strip() for part in value]


@dataclass
class Replica:
    """One streaming replica and what the router last learnt about it."""

    url: str
    engine: Engine
    checked_at: float = -1e9
    down_until: float = 0.0
    replayed: int = -1
    lag: float = 0.0
    usable: bool = False
    warned: str | None = None
    reads: int = 0  # reads it served (a counter for tests and operators)
    lock: threading.Lock = field(default_factory=threading.Lock)


_CONNECT_ERRORS = (sa.exc.OperationalError, sa.exc.InterfaceError, psycopg.OperationalError)


def failed_to_reach(exc: BaseException) -> bool:
    """Whether ``exc`` says the server is gone (or the read was cancelled by recovery),
    so the same read may run on the primary instead."""
    if isinstance(exc, (DatabaseUnavailableError, *_CONNECT_ERRORS)):
        return True
    if isinstance(exc, MemstoreError):
        cause = exc.__cause__
        sqlstate = getattr(cause, "sqlstate", None) or getattr(
            getattr(cause, "orig", None), "sqlstate", None
        )
        # 40001: "canceling statement due to conflict with recovery" on a hot standby.
        return isinstance(cause, _CONNECT_ERRORS) or sqlstate == "40001"
    return False


class ReadRouter:
    """Sends reads to healthy, caught-up replicas and everything else to the primary."""

    def __init__(
        self,
        primary: Engine,
        replica_urls: Sequence[str],
        *,
        max_lag: float,
        stale_ok: bool = False,
    ) -> None:
        self.primary = primary
        self.max_lag = max_lag
        self.stale_ok = stale_ok
        self.replicas = [
            Replica(
                mask(url),
                create_engine(url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S}),
            )
            for url in replica_urls
        ]
        self.primary_reads = 0  # reads the primary served (no replica would do)
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self._wrote = False  # a primary connection came back since the last LSN read
        self._target = 0  # the WAL position a replica must have replayed for this store
        self._local = threading.local()  # set while this thread reads on the primary
        event.listen(primary, "checkin", self._checked_in)

    # --- what the primary tells us ----------------------------------------------

    def _checked_in(self, _dbapi_connection: Any, _record: Any) -> None:
        if not getattr(self._local, "reading", False):
            self._wrote = True  # may have written: the next read asks for the position

    def target(self) -> int:
        """The WAL position this store's reads must see (asks the primary after a write)."""
        if self._wrote:
            with self._lock:
                if self._wrote:
                    self._wrote = False
                    with self.read_on_primary(), self.primary.connect() as conn:
                        lsn = conn.exec_driver_sql(_PRIMARY_LSN).scalar_one()
                        conn.rollback()
                    self._target = max(self._target, parse_lsn(lsn))
        return self._target

    @contextmanager
    def read_on_primary(self) -> Iterator[None]:
        """Mark this thread's use of the primary in the block as a read: a connection it
        returns to the pool does not count as a possible write (read-your-writes)."""
        previous = getattr(self._local, "reading", False)
        self._local.reading = True
        try:
            yield
        finally:
            self._local.reading = previous

    # --- what the replicas tell us ----------------------------------------------

    def _check(self, replica: Replica, now: float) -> None:
        try:
            with replica.engine.connect() as conn:
                in_recovery, lsn, lag = conn.exec_driver_sql(_REPLICA_STATE).one()
                conn.rollback()
        except Exception as exc:  # any failure to ask means: not usable now
            replica.usable = False
            replica.down_until = now + RETRY_DOWN_S
            self._warn(replica, f"cannot be reached ({type(exc).__name__}: {exc})")
            return
        replica.checked_at = now
        if not in_recovery or lsn is None:
            replica.usable = False
            replica.down_until = now + RETRY_DOWN_S
            self._warn(replica, "is not a streaming replica (not in recovery)")
            return
        replica.replayed, replica.lag = parse_lsn(lsn), float(lag)
        replica.usable = replica.lag <= self.max_lag
        if not replica.usable:
            self._warn(replica, f"lags {replica.lag:.1f} s (max_replica_lag {self.max_lag} s)")
        elif replica.warned is not None:
            replica.warned = None
            warnings.warn(f"replica {replica.url} is usable again", RuntimeWarning, stacklevel=4)

    def _warn(self, replica: Replica, why: str) -> None:
        if replica.warned != why.split(" (")[0]:  # once per kind of trouble, not per read
            replica.warned = why.split(" (")[0]
            warnings.warn(
                f"replica {replica.url} {why}: reading from the primary",
                RuntimeWarning,
                stacklevel=5,
            )

    def _mark_down(self, replica: Replica, exc: BaseException) -> None:
        with replica.lock:
            replica.usable = False
            replica.down_until = time.monotonic() + RETRY_DOWN_S
            self._warn(replica, f"failed a read ({type(exc).__name__}: {exc})")

    def choose(self) -> Replica | None:
        """A replica to read from now, or None for the primary."""
        if not self.replicas:
            return None
        target = 0 if self.stale_ok else self.target()
        start = next(self._turn)
        for i in range(len(self.replicas)):
            replica = self.replicas[(start + i) % len(self.replicas)]
            with replica.lock:
                now = time.monotonic()
                if now < replica.down_until:
                    continue
                if now - replica.checked_at > RECHECK_S or replica.replayed < target:
                    self._check(replica, now)
                if replica.usable and replica.replayed >= target:
                    return replica
        return None

    # --- reads ------------------------------------------------------------------

    @contextmanager
    def reading(self, open_on: Callable[[Engine], AbstractContextManager[T]]) -> Iterator[T]:
        """``open_on(engine)`` entered on a replica, or on the primary when none will do
        (or the chosen one fails while it opens)."""
        replica = self.choose()
        with ExitStack() as stack:
            if replica is not None:
                try:
                    value = stack.enter_context(open_on(replica.engine))
                except Exception as exc:
                    if not failed_to_reach(exc):
                        raise
                    self._mark_down(replica, exc)
                else:
                    replica.reads += 1
                    yield value
                    return
            stack.enter_context(self.read_on_primary())
            self.primary_reads += 1
            yield stack.enter_context(open_on(self.primary))

    def run(self, read: Callable[[Engine], T]) -> T:
        """``read(engine)`` on a replica, again on the primary if the replica fails."""
        replica = self.choose()
        if replica is not None:
            try:
                answer = read(replica.engine)
                replica.reads += 1
                return answer
            except Exception as exc:
                if not failed_to_reach(exc):
                    raise
                self._mark_down(replica, exc)
        with self.read_on_primary():
            self.primary_reads += 1
            return read(self.primary)

    def dispose(self) -> None:
        """Close the replicas' connections (the primary's engine belongs to the store)."""
        event.remove(self.primary, "checkin", self._checked_in)
        for replica in self.replicas:
            replica.engine.dispose()
