"""Reading our own SQL files: statements, with comments and quoted text told apart.

A small tokenizer, not a SQL parser: it knows single-quoted strings (``''``
escapes), double-quoted identifiers, dollar-quoted bodies (``$$`` and
``$tag$``) and both comment styles — enough to split the well-formed files in
sql/ into statements and to find keywords outside strings.
"""

from __future__ import annotations

import re
from pathlib import Path

from memstore.db.resources import sql_dir

_DOLLAR = re.compile(r"\$[A-Za-z_]*\$")


def _skip_quoted(text: str, i: int) -> int:
    """The index just past the quoted token or comment starting at ``i`` (``i`` if none)."""
    c = text[i]
    if c in "'\"":
        j = i + 1
        while j < len(text):
            if text[j] == c:
                if j + 1 < len(text) and text[j + 1] == c:
                    j += 2
                    continue
                return j + 1
            j += 1
        return len(text)
    if text.startswith("--", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end + 1
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    if c == "$" and (m := _DOLLAR.match(text, i)):
        end = text.find(m.group(), m.end())
        return len(text) if end < 0 else end + len(m.group())
    return i


def blank_comments(text: str) -> str:
    """``text`` with every comment replaced by one space (strings kept)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        j = _skip_quoted(text, i)
        if j == i:
            out.append(text[i])
            i += 1
        elif text.startswith(("--", "/*"), i):
            out.append(" ")
            i = j
        else:
            out.append(text[i:j])
            i = j
    return "".join(out)


def split_statements(text: str) -> list[str]:
    """The statements of a SQL script, comments removed, without their ``;``."""
    text = blank_comments(text)
    statements: list[str] = []
    start = i = 0
    while i < len(text):
        j = _skip_quoted(text, i)
        if j != i:
            i = j
        elif text[i] == ";":
            statements.append(text[start:i])
            start = i = i + 1
        else:
            i += 1
    statements.append(text[start:])
    return [s.strip() for s in statements if s.strip()]


def mask_quoted(text: str) -> str:
    """``text`` with the inside of every string, identifier and dollar body blanked.

    Offsets stay the same, so a keyword found in the result is a keyword in
    ``text``, never a word inside a string.
    """
    out = list(text)
    i = 0
    while i < len(text):
        j = _skip_quoted(text, i)
        if j == i:
            i += 1
            continue
        m = _DOLLAR.match(text, i) if text[i] == "$" else None
        edge = len(m.group()) if m else 1  # keep the quotes, blank what they enclose
        for k in range(i + edge, j - edge):
            out[k] = " "
        i = j
    return "".join(out)


def sql_files() -> list[Path]:
    """The files of sql/, in the order they apply."""
    return sorted(sql_dir().glob("*.sql"))


__all__ = ["blank_comments", "mask_quoted", "split_statements", "sql_files"]
