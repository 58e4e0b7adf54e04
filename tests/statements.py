"""Every statement the package sends during the test session, checked against the Citus rules.

The premise of docs/scale-out.md is that every statement memstore sends names one
namespace in every table reference (tests/citus.py). The static walk covers the SQL
the package holds in files and literals; this capture covers what it actually sends,
SQLAlchemy Core statements and composed ones included, across the whole suite.

How: psycopg's cursor methods (``execute``, ``executemany``, ``copy``, ``stream``, and
the server-side cursor's ``execute``) are wrapped for the session. Each statement is
attributed to the nearest caller outside the drivers (psycopg, SQLAlchemy, pgvector,
the standard library's ``contextlib``/``threading``):

- **the package sends it** when that caller is a module of ``memstore/`` other than the
  operator tools listed in :data:`OPERATOR_MODULES`;
- a test, a test helper, Alembic and the migrations under ``migrations/`` (the schema's
  DDL and data migrations) and the operator tools are not the package's runtime: their
  statements are not checked here (the static walk checks the SQL files and the views).

Operator tools: whole-store reads an operator runs across namespaces on purpose
(``store.status()``'s row counts, ``store.namespaces()``'s sizes: memstore/db/status.py),
the schema and role checks (memstore/db/integrity/, roles.py, migrate.py, engine.py)
and the embedded server. On Citus these are multi-shard queries, which it runs; they
are not on the path of a tenant's request.

Only this process's statements are captured: the CLI run as a subprocess by the
acceptance tests and servers started in subprocesses are not (they are shells over
the same verbs, which the in-process tests drive).

At the end of the session the distinct statements are checked with
:func:`tests.citus.violations`; a violation fails the session, naming the statement
and the module that sent it. ``MEMSTORE_TEST_STATEMENTS=off`` turns the capture off
(for profiling a test, never in CI). Under pytest-xdist each worker captures its own
statements and hands them to the controller (:meth:`Capture.export`, :meth:`Capture.merge`),
which checks the union once.

Recording is on the path of every statement, so it does no more than walk the stack
to the first frame outside the plumbing; which file is plumbing, the package's or
someone else's is decided once per file (:func:`_classify`) and remembered.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy

import memstore
from tests.citus import violations

PACKAGE = Path(memstore.__file__).resolve().parent
# Frames of these files are the drivers' and the standard library's plumbing: the
# statement belongs to whoever called them.
_PLUMBING = (
    str(Path(psycopg.__file__).resolve().parent),
    str(Path(sqlalchemy.__file__ or "sqlalchemy").resolve().parent),
    "/pgvector/",
    "contextlib.py",
    "threading.py",
    "concurrent/futures",
    __file__,
)
# Operator tools of the package (see the module docstring), as paths under memstore/.
OPERATOR_MODULES = (
    "db/status.py",
    "db/migrate.py",
    "db/roles.py",
    "db/engine.py",
    "db/embedded.py",
    "db/integrity/",
)


class Capture:
    """The distinct statements the package sent, each with the first module that sent it."""

    def __init__(self) -> None:
        self.sent: dict[str, str] = {}
        self.count = 0
        self._lock = threading.Lock()

    def note(self, query: Any, cursor: Any) -> None:
        where = self.sender()
        if where is None:
            return
        if isinstance(query, bytes):
            text = query.decode(errors="replace")
        elif isinstance(query, str):
            text = query
        else:  # a psycopg.sql.Composable
            try:
                text = query.as_string(cursor.connection)
            except Exception:
                return
        if "memstore." not in text:
            return
        self.count += 1
        if text not in self.sent:
            with self._lock:
                self.sent.setdefault(text, where)

    @staticmethod
    def sender() -> str | None:
        """``memstore/…:line`` of the package module that sent the statement, or None
        when a test, a migration or an operator tool sent it."""
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            try:
                owner = _OWNERS[filename]
            except KeyError:
                owner = _OWNERS[filename] = _classify(filename)
            if owner is not _PLUMBING_FILE:
                return None if owner is None else f"{owner}:{frame.f_lineno}"
            frame = frame.f_back  # type: ignore[assignment]
        return None

    def export(self) -> dict[str, Any]:
        """What a pytest-xdist worker hands to the controller at the end of its session."""
        return {"sent": dict(self.sent), "count": self.count}

    def merge(self, exported: dict[str, Any]) -> None:
        """Add a worker's :meth:`export` (on the controller)."""
        self.count += exported["count"]
        for text, where in exported["sent"].items():
            self.sent.setdefault(text, where)

    def violations(self) -> list[str]:
        """Each statement breaking the rules, with the module that sent it."""
        found: list[str] = []
        for text, where in sorted(self.sent.items(), key=lambda item: item[1]):
            found.extend(str(v) for v in violations(text, where))
        return found


# A file's owner: the plumbing, a package module (``memstore/…``) or None (anyone else).
_PLUMBING_FILE = "plumbing"
_OWNERS: dict[str, str | None] = {}


def _classify(filename: str) -> str | None:
    if any(part in filename for part in _PLUMBING):
        return _PLUMBING_FILE
    path = Path(filename)
    if not path.is_relative_to(PACKAGE):
        return None
    relative = path.relative_to(PACKAGE).as_posix()
    if relative.startswith(OPERATOR_MODULES):
        return None
    return f"memstore/{relative}"


CAPTURE = Capture()
_ORIGINALS: list[tuple[type, str, Callable[..., Any]]] = []


def _wrap(cls: type, name: str) -> None:
    original = cls.__dict__[name]

    @functools.wraps(original)
    def method(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        CAPTURE.note(query, self)
        return original(self, query, *args, **kwargs)

    _ORIGINALS.append((cls, name, original))
    setattr(cls, name, method)


def install() -> bool:
    """Wrap psycopg's cursors for the session (once); False when turned off."""
    if os.environ.get("MEMSTORE_TEST_STATEMENTS") == "off":
        return False
    if not _ORIGINALS:
        for name in ("execute", "executemany", "copy", "stream"):
            _wrap(psycopg.Cursor, name)
        _wrap(psycopg.ServerCursor, "execute")
    return True


def uninstall() -> None:
    while _ORIGINALS:
        cls, name, original = _ORIGINALS.pop()
        setattr(cls, name, original)
