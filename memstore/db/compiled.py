"""A long statement converted for the server once, not on every call.

psycopg turns a statement's ``%(name)s`` placeholders into the server's ``$n``
on every execution, and caches the result only for statements under 4 KiB.
Recall's statement is 7-12 KiB (recall.sql's fragments, composed), so every
recall paid for rendering the composed SQL and scanning it for placeholders
again: ~1 ms of client CPU a call (docs/benchmark-notes.md, stop 28).
:class:`Compiled` does both once; :func:`cursor_for` gives it psycopg's raw
cursor, which sends ``$n`` statements as they are, with :meth:`Compiled.values`
as the parameters. Anywhere else (``EXPLAIN`` + it, ``as_string``, a plain
cursor with the dict of parameters) it is the statement it was made from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

# psycopg's placeholders: %(name)s (named, any format), %% (a literal %).
_PLACEHOLDER = re.compile(rb"%(?:\((\w+)\)([sbt])|(%)|([sbt]))")


class Compiled(sql.Composed):
    """``statement`` with its named placeholders numbered, rendered once.

    >>> c = Compiled(sql.SQL("SELECT %(a)s, %(b)s, %(a)s, 5 %% 2"))
    >>> c.text, c.names
    (b'SELECT $1, $2, $1, 5 % 2', ('a', 'b'))
    >>> c.values({"a": 1, "b": "x", "unused": 0})
    [1, 'x']
    >>> Compiled(sql.SQL("SELECT %(a)b"))
    Traceback (most recent call last):
    ...
    ValueError: a compiled statement takes %(name)s placeholders only
    """

    def __init__(self, statement: sql.Composable, *, binary: bool = False):
        super().__init__([statement])
        # Its rows in binary: no text to parse for timestamps, arrays and numbers
        # (recall's ~120 rows: ~0.4 ms of client CPU a call, the same values).
        self.binary = binary
        source = statement.as_bytes(None)
        names: list[str] = []

        def number(match: re.Match[bytes]) -> bytes:
            if match.group(3):
                return b"%"
            if match.group(4) or match.group(2) != b"s":
                # The raw cursor adapts every parameter in psycopg's automatic format.
                raise ValueError("a compiled statement takes %(name)s placeholders only")
            name = match.group(1).decode()
            if name not in names:
                names.append(name)
            return b"$%d" % (names.index(name) + 1)

        self.text = _PLACEHOLDER.sub(number, source)
        self.names = tuple(names)

    def values(self, params: Mapping[str, Any]) -> list[Any]:
        """The parameters in placeholder order (a missing one raises KeyError, as psycopg would)."""
        return [params[name] for name in self.names]


def cursor_for(raw: psycopg.Connection[Any], query: object) -> psycopg.Cursor[Any]:
    """A dict-row cursor for ``query``: psycopg's raw cursor (``$n`` placeholders, sent as
    they are) for a :class:`Compiled` statement, else the connection's own."""
    if isinstance(query, Compiled):
        return psycopg.RawCursor(raw, row_factory=dict_row)
    return raw.cursor(row_factory=dict_row)


def bound(query: object, params: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(query, params)`` as the cursor of :func:`cursor_for` takes them."""
    if isinstance(query, Compiled):
        return query.text, query.values(params)
    return query, params


def binary_rows(query: object) -> bool:
    """Whether ``query``'s rows are asked for in binary (a :class:`Compiled` that says so)."""
    return isinstance(query, Compiled) and query.binary
