"""Named queries: SQL files of ``-- name --`` headed fragments, kept readable."""

from __future__ import annotations


def named_queries(text: str) -> dict[str, str]:
    """Split a file of ``-- name --`` headed queries into a dict."""
    queries: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("-- ") and stripped.endswith(" --") and len(stripped) > 6:
            name = stripped[3:-3].strip()
            queries[name] = ""
        elif name is not None:
            queries[name] += line + "\n"
    return queries
