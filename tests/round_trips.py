"""Count the round trips a call makes to the server: each time the client sends and
then waits for the server's answer before it can go on.

psycopg's own steps are wrapped while :func:`counting` is active:

- outside pipeline mode every message that expects an answer is one round trip: a
  command (``BEGIN``, ``COMMIT``, ``SET LOCAL …``, a server-side cursor's ``FETCH``:
  ``_exec_command``), a statement sent by a cursor (``_execute_send``), the prepare
  and the execution of a prepared statement, a server-side cursor's describe;
- in pipeline mode statements are only queued; the round trip is the wait that
  follows: a sync (``Pipeline.sync``, the end of the pipeline block) or a cursor's
  fetch that flushes the pipeline. Everything queued since the last wait rides with
  it.

Each round trip is recorded with the statements it carried (shortened), so a budget
that fails says what the extra trip was. Counting is a model of the protocol, not a
packet capture: deterministic, whatever the machine's load.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from psycopg import _connection_base, _cursor_base, _pipeline_base, _server_cursor_base, cursor
from psycopg.sql import Composable

# Statements every namespace transaction carries around its work.
FIXED = re.compile(r"^(BEGIN|COMMIT|ROLLBACK|SET LOCAL [a-z_.]+ = '[^']*')$")


def _text(query: Any, conn: Any) -> str:
    if isinstance(query, Composable):
        query = query.as_string(conn)
    if isinstance(query, bytes):
        query = query.decode(errors="replace")
    return " ".join(str(query).split())


class Trips:
    """The round trips counted while a :func:`counting` block is open."""

    def __init__(self) -> None:
        self.trips: list[list[str]] = []
        self._queued: dict[int, list[str]] = {}
        self._lock = threading.Lock()

    def send(self, conn: Any, text: str) -> None:
        with self._lock:
            if conn._pipeline:
                self._queued.setdefault(id(conn), []).append(text)
            else:
                self.trips.append([text])

    def wait(self, conn: Any) -> None:
        with self._lock:
            queued = self._queued.pop(id(conn), [])
            if queued:
                self.trips.append(queued)

    def __len__(self) -> int:
        return len(self.trips)

    def statements(self) -> list[str]:
        """Every statement sent, in order (BEGIN, SET LOCAL and COMMIT included)."""
        return [text for trip in self.trips for text in trip]

    def work(self) -> list[str]:
        """The statements other than a transaction's fixed ones (BEGIN, the scope's
        ``SET LOCAL``s, COMMIT)."""
        return [
            text
            for text in self.statements()
            if not all(FIXED.match(part.strip()) for part in text.split(";") if part.strip())
        ]

    def describe(self) -> str:
        return "\n".join(
            f"  trip {n}: " + " | ".join(text[:90] for text in trip)
            for n, trip in enumerate(self.trips, 1)
        )


_ACTIVE: list[Trips] = []
_ORIGINALS: list[tuple[type, str, Any]] = []


def _note_send(conn: Any, text: str) -> None:
    for trips in _ACTIVE:
        trips.send(conn, text)


def _note_wait(conn: Any) -> None:
    for trips in _ACTIVE:
        trips.wait(conn)


def _patch(cls: type, name: str, make: Callable[[Any], Any]) -> None:
    original = cls.__dict__[name]
    _ORIGINALS.append((cls, name, original))
    setattr(cls, name, functools.wraps(original)(make(original)))


def _install() -> None:
    if _ORIGINALS:
        return

    def exec_command(original: Any) -> Any:
        def wrapped(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
            if _ACTIVE:
                _note_send(self, _text(command, self))
            return original(self, command, *args, **kwargs)

        return wrapped

    def cursor_send(original: Any) -> Any:
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            if _ACTIVE:
                pgq = next(a for a in args if hasattr(a, "query"))
                _note_send(self._conn, _text(pgq.query, self._conn))
            return original(self, *args, **kwargs)

        return wrapped

    def describe(original: Any) -> Any:
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            if _ACTIVE:
                _note_send(self._conn, f"(describe portal {self._name})")
            return original(self, *args, **kwargs)

        return wrapped

    def pipeline_wait(original: Any) -> Any:
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            if _ACTIVE:
                _note_wait(self._conn)
            return original(self, *args, **kwargs)

        return wrapped

    def fetch_pipeline(original: Any) -> Any:
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            if _ACTIVE and self._conn._pipeline and not self.pgresult:
                _note_wait(self._conn)
            return original(self, *args, **kwargs)

        return wrapped

    _patch(_connection_base.BaseConnection, "_exec_command", exec_command)
    _patch(_cursor_base.BaseCursor, "_execute_send", cursor_send)
    _patch(_cursor_base.BaseCursor, "_send_prepare", cursor_send)
    _patch(_cursor_base.BaseCursor, "_send_query_prepared", cursor_send)
    _patch(_server_cursor_base.ServerCursorMixin, "_describe_gen", describe)
    _patch(_pipeline_base.BasePipeline, "_sync_gen", pipeline_wait)
    _patch(_pipeline_base.BasePipeline, "_exit_gen", pipeline_wait)
    _patch(cursor.Cursor, "_fetch_pipeline", fetch_pipeline)


@contextmanager
def counting() -> Iterator[Trips]:
    """Count the round trips of the block (every connection of this process)."""
    _install()
    trips = Trips()
    _ACTIVE.append(trips)
    try:
        yield trips
    finally:
        _ACTIVE.remove(trips)
