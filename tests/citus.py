"""The Citus-readiness rules of DESIGN.md §8, checked on SQL text.

Not a SQL parser: a careful walk over our own well-formed SQL. Every
reference to a memstore table (after FROM, JOIN, INTO or UPDATE) must carry a
``namespace_id`` condition *in its own query block* — the innermost
parenthesised block around it, with nested subqueries cut out, so a filter on
another table or in another subquery does not count:

- in a query or a function: an equality on the reference's ``namespace_id``
  (``alias.namespace_id = …`` or ``… = alias.namespace_id``; bare
  ``namespace_id = …`` when the table has no alias);
- an INSERT: ``namespace_id`` in its column list;
- in a view: the equality, or ``alias.namespace_id`` among the block's
  outputs (the caller's ``WHERE namespace_id = …`` then reaches the table).

``namespaces`` is exempt: it is the reference table (replicated to every
node), and looking a namespace up by its name is inherently global. So are the
API keys' tables (a key may serve a namespace prefix).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memstore.db.schema import KEY_TABLES, metadata
from memstore.db.sqlfiles import blank_comments, mask_quoted, split_statements, sql_files

TABLES = {table.name for table in metadata.sorted_tables}

# Tables whose references need no namespace filter, and why.
ALLOWED_UNFILTERED = {
    # The reference table: Citus replicates it to every worker, and a name is
    # looked up across namespaces by definition (memstore.open_namespace).
    "namespaces",
    # The API keys (sql/10_api_keys.sql): reference tables too, since a key may
    # serve a namespace prefix; read by lookup prefix or key id, never by tenant.
    *KEY_TABLES,
}

_REF = re.compile(r"\b(FROM|JOIN|INTO|UPDATE)\s+memstore\.(\w+)\b(?:\s+AS)?(?:\s+(\w+))?", re.I)
_NOT_ALIAS = {
    "where", "join", "left", "right", "inner", "full", "cross", "on", "set", "group", "order",
    "limit", "using", "values", "select", "union", "returning", "as", "natural", "lateral",
    "window", "having", "offset", "for", "default", "overriding",
}  # fmt: skip
_SUBQUERY = re.compile(r"\(\s*(SELECT|WITH)\b", re.I)


@dataclass(frozen=True)
class Violation:
    """One table reference without its namespace condition."""

    source: str
    table: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.source}: memstore.{self.table} without a namespace_id condition: " + (
            self.excerpt
        )


def _blocks(masked: str) -> list[tuple[int, int]]:
    """Every parenthesised block as (start, end) offsets, including the parentheses."""
    stack: list[int] = []
    found = []
    for i, c in enumerate(masked):
        if c == "(":
            stack.append(i)
        elif c == ")" and stack:
            found.append((stack.pop(), i + 1))
    return found


def _scope(masked: str, at: int) -> str:
    """The query block around offset ``at``, its nested subqueries blanked."""
    blocks = _blocks(masked)
    inner = [(s, e) for s, e in blocks if s < at < e]
    start, end = max(inner, default=(0, len(masked)))
    text = list(masked[start:end])
    for s, e in blocks:
        if start < s and e <= end and not (s < at < e) and _SUBQUERY.match(masked, s):
            for k in range(s - start, e - start):
                text[k] = " "
    return "".join(text)


def violations(text: str, source: str, *, view: bool = False) -> list[Violation]:
    """The table references in ``text`` that break the rules above."""
    masked = mask_quoted(blank_comments(text))
    found = []
    for m in _REF.finditer(masked):
        keyword, table, alias = m.group(1).upper(), m.group(2), m.group(3)
        if table not in TABLES or table in ALLOWED_UNFILTERED:
            continue
        if alias is not None and alias.lower() in _NOT_ALIAS:
            alias = None
        scope = _scope(masked, m.start())
        if keyword == "INTO":
            columns = masked[m.end(2) :]
            columns = columns[columns.index("(") : columns.index(")") + 1] if "(" in columns else ""
            ok = re.search(r"\bnamespace_id\b", columns) is not None
        else:
            names = [re.escape(alias)] if alias else [f"(?:memstore\\.)?{table}", ""]
            ok = False
            for name in names:
                column = (
                    rf"(?<![\w.]){name}\.namespace_id\b" if name else (r"(?<![\w.])namespace_id\b")
                )
                if re.search(column + r"\s*=", scope) or re.search(r"=\s*" + column, scope):
                    ok = True
                elif view and re.search(column, scope):
                    ok = True
        if not ok:
            excerpt = " ".join(text[m.start() : m.start() + 80].split())
            found.append(Violation(source, table, excerpt))
    return found


def _function_bodies(statement: str) -> Iterator[str]:
    masked = mask_quoted(statement)
    if re.match(r"CREATE\s+(OR\s+REPLACE\s+)?FUNCTION", masked, re.I) and "$$" in statement:
        start = statement.index("$$") + 2
        yield statement[start : statement.index("$$", start)]


@dataclass(frozen=True)
class Statement:
    """One piece of SQL memstore issues, and where it comes from."""

    source: str
    text: str
    view: bool = False


def sql_file_statements() -> Iterator[Statement]:
    """Views and function bodies of sql/ (DDL around them holds no queries)."""
    for path in sql_files():
        for i, statement in enumerate(split_statements(path.read_text())):
            masked = mask_quoted(statement)
            source = f"sql/{path.name} statement {i + 1}"
            if re.match(r"CREATE\s+(OR\s+REPLACE\s+)?VIEW", masked, re.I):
                yield Statement(source, statement, view=True)
            for body in _function_bodies(statement):
                yield Statement(source + " (function body)", body)
            if re.match(r"(SELECT|INSERT|UPDATE|DELETE|WITH)\b", masked, re.I):
                yield Statement(source, statement)


def named_query_statements(package: Path) -> Iterator[Statement]:
    """Every named query in the package's .sql files (memstore.db.queries format)."""
    from memstore.db.queries import named_queries

    for path in sorted(package.rglob("*.sql")):
        for name, text in named_queries(path.read_text()).items():
            yield Statement(f"{path.relative_to(package.parent)} -- {name} --", text)


def python_text_statements(package: Path) -> Iterator[Statement]:
    """Every ``sa.text("…")`` literal in the package's Python."""
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "text")
                    or (isinstance(node.func, ast.Name) and node.func.id == "text")
                )
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                where = f"{path.relative_to(package.parent)}:{node.lineno}"
                yield Statement(where, node.args[0].value)


__all__ = [
    "ALLOWED_UNFILTERED",
    "Statement",
    "Violation",
    "named_query_statements",
    "python_text_statements",
    "sql_file_statements",
    "violations",
]
