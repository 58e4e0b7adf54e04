"""Tamper evidence: the database's guards are the ones sql/ defines, and they are on.

A superuser (or the tables' owner) can disable a trigger, replace a trigger
function, add a permissive policy or switch row-level security off. None of
that is prevented; :func:`problems` notices it. It compares the live catalog
with the definitions in sql/:

- every trigger sql/ creates exists, is enabled, and its definition matches;
  no other trigger sits on a memstore table; ``session_replication_role``
  (which silences ordinary triggers) is not set to ``replica`` for the
  database or any role, nor in this session;
- every function sql/ creates has exactly the body sql/ gives it, and is
  SECURITY DEFINER exactly when sql/ says so;
- every table of schema memstore has row-level security enabled; its policies
  are exactly those sql/ creates, with the same command, roles and
  expressions (compared as the server deparses them: each expected policy is
  created on a scratch copy of its table in a rolled-back savepoint);
- every view sql/ creates exists and is still ``security_invoker``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from psycopg import sql
from sqlalchemy.engine import Connection

from memstore.db.sqlfiles import mask_quoted, split_statements, sql_files

_TRIGGER = re.compile(r"CREATE\s+OR\s+REPLACE\s+TRIGGER\s+(\w+)\s.*?\sON\s+memstore\.(\w+)\s", re.S)
_FUNCTION = re.compile(r"CREATE\s+OR\s+REPLACE\s+FUNCTION\s+memstore\.(\w+)\s*\(", re.S)
_POLICY = re.compile(r"CREATE\s+POLICY\s+(\w+)\s+ON\s+memstore\.(\w+)\s", re.S)
_RLS = re.compile(r"ALTER\s+TABLE\s+memstore\.(\w+)\s+ENABLE\s+ROW\s+LEVEL\s+SECURITY", re.S)
_VIEW = re.compile(r"CREATE\s+OR\s+REPLACE\s+VIEW\s+memstore\.(\w+)\s", re.S)


@dataclass
class Definitions:
    """What sql/ says the guards are."""

    triggers: dict[tuple[str, str], str] = field(default_factory=dict)
    """(table, trigger) → the CREATE TRIGGER statement."""
    functions: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """function name → (body, security definer)."""
    policies: dict[tuple[str, str], str] = field(default_factory=dict)
    """(table, policy) → the CREATE POLICY statement."""
    row_security: set[str] = field(default_factory=set)
    views: set[str] = field(default_factory=set)


def normalised_trigger(statement: str) -> str:
    """A trigger definition with its layout removed, as comparable text.

    >>> normalised_trigger("CREATE OR REPLACE TRIGGER t BEFORE DELETE ON memstore.x\\n"
    ...                    "    FOR EACH ROW EXECUTE FUNCTION memstore.f(\\n  'a')")
    "CREATE TRIGGER t BEFORE DELETE ON memstore.x FOR EACH ROW EXECUTE FUNCTION memstore.f('a')"
    """
    text = re.sub(r"\s+", " ", statement.strip())
    text = re.sub(r"^CREATE OR REPLACE TRIGGER", "CREATE TRIGGER", text)
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))


def _dollar_body(statement: str) -> str:
    start = statement.index("$$") + 2
    return statement[start : statement.index("$$", start)]


def definitions() -> Definitions:
    """Parse the guards out of every file in sql/."""
    found = Definitions()
    for path in sql_files():
        for statement in split_statements(path.read_text()):
            bare = mask_quoted(statement)
            if m := _TRIGGER.match(bare):
                found.triggers[(m.group(2), m.group(1))] = statement
            elif m := _FUNCTION.match(bare):
                definer = "SECURITY DEFINER" in bare[: bare.index("$$")]
                found.functions[m.group(1)] = (_dollar_body(statement), definer)
            elif m := _POLICY.match(bare):
                found.policies[(m.group(2), m.group(1))] = statement
            elif m := _RLS.match(bare):
                found.row_security.add(m.group(1))
            elif m := _VIEW.match(bare):
                found.views.add(m.group(1))
    return found


def _rows(conn: Connection, query: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in conn.execute(sa.text(query))]


def _trigger_problems(conn: Connection, expected: Definitions) -> list[str]:
    problems = []
    live = {
        (str(table), str(name)): (str(definition), str(enabled))
        for table, name, definition, enabled in _rows(
            conn,
            "SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid), t.tgenabled"
            " FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE NOT t.tgisinternal AND c.relnamespace = 'memstore'::regnamespace",
        )
    }
    for key, statement in sorted(expected.triggers.items()):
        name = f"trigger {key[1]} on memstore.{key[0]}"
        if key not in live:
            problems.append(f"{name} is missing")
            continue
        definition, enabled = live[key]
        if enabled not in ("O", "A"):
            how = {"D": "disabled", "R": "set to fire only for replicas"}.get(enabled, enabled)
            problems.append(f"{name} is {how}")
        if normalised_trigger(definition) != normalised_trigger(statement):
            problems.append(f"{name} differs from sql/: {definition}")
    for table, trigger in sorted(set(live) - set(expected.triggers)):
        problems.append(f"trigger {trigger} on memstore.{table} is not defined in sql/")
    replica = _rows(
        conn,
        "SELECT coalesce(d.datname, '(all databases)'), coalesce(r.rolname, '(all roles)')"
        " FROM pg_db_role_setting s"
        " LEFT JOIN pg_database d ON d.oid = s.setdatabase"
        " LEFT JOIN pg_roles r ON r.oid = s.setrole"
        " WHERE (s.setdatabase = 0 OR d.datname = current_database())"
        "   AND EXISTS (SELECT 1 FROM unnest(s.setconfig) AS c(setting)"
        "               WHERE c.setting ILIKE 'session_replication_role=%'"
        "                 AND c.setting NOT ILIKE '%=origin')",
    )
    for database, role in replica:
        problems.append(
            f"session_replication_role is set for database {database}, role {role}:"
            " it silences the append-only triggers"
        )
    session = conn.execute(sa.text("SELECT current_setting('session_replication_role')"))
    if (value := session.scalar_one()) != "origin":
        problems.append(f"this session runs with session_replication_role = {value}")
    return problems


def _function_problems(conn: Connection, expected: Definitions) -> list[str]:
    problems = []
    live: dict[str, list[tuple[str, bool, str]]] = {}
    for name, body, definer, signature in _rows(
        conn,
        "SELECT p.proname, p.prosrc, p.prosecdef, p.oid::regprocedure::text FROM pg_proc p"
        " WHERE p.pronamespace = 'memstore'::regnamespace",
    ):
        live.setdefault(str(name), []).append((str(body), bool(definer), str(signature)))
    for name, (body, definer) in sorted(expected.functions.items()):
        if name not in live:
            problems.append(f"function memstore.{name} is missing")
        for live_body, live_definer, signature in live.get(name, []):
            if live_body != body:
                problems.append(f"function {signature} has a body that differs from sql/")
            if live_definer != definer:
                problems.append(
                    f"function {signature} is{'' if live_definer else ' not'} SECURITY DEFINER"
                )
    return problems


def _policy_problems(conn: Connection, expected: Definitions) -> list[str]:
    problems = []
    tables = [
        (str(name), bool(enabled))
        for name, enabled in _rows(
            conn,
            "SELECT relname, relrowsecurity FROM pg_class"
            " WHERE relnamespace = 'memstore'::regnamespace AND relkind = 'r'"
            " AND relname <> 'alembic_version' ORDER BY 1",
        )
    ]
    for table, enabled in tables:
        if not enabled:
            problems.append(f"row-level security is disabled on memstore.{table}")
        elif table not in expected.row_security:
            problems.append(f"memstore.{table} has row-level security that sql/ does not enable")
    live = {
        (str(t), str(p)): tuple(str(v) for v in rest)
        for t, p, *rest in _rows(
            conn,
            "SELECT tablename, policyname, permissive, roles::text, cmd, qual, with_check"
            " FROM pg_policies WHERE schemaname = 'memstore'",
        )
    }
    reference = _deparsed(conn, expected)
    for key in sorted(expected.policies):
        name = f"policy {key[1]} on memstore.{key[0]}"
        if key not in live:
            problems.append(f"{name} is missing")
        elif live[key] != reference[key]:
            problems.append(f"{name} differs from sql/: {live[key]}")
    for table, policy in sorted(set(live) - set(expected.policies)):
        problems.append(f"policy {policy} on memstore.{table} is not defined in sql/")
    return problems


def _deparsed(conn: Connection, expected: Definitions) -> dict[tuple[str, str], tuple[str, ...]]:
    """Each expected policy as the server deparses it, from scratch tables rolled back."""
    raw = conn.connection.driver_connection
    assert raw is not None
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    savepoint = conn.begin_nested()
    try:
        for (table, policy), statement in expected.policies.items():
            scratch = f"memstore_check_{table}"
            raw.execute(
                sql.SQL("CREATE TEMP TABLE IF NOT EXISTS {} (LIKE memstore.{})").format(
                    sql.Identifier(scratch), sql.Identifier(table)
                )
            )
            head = _POLICY.match(mask_quoted(statement))
            assert head is not None
            rest = statement[head.end() :]  # the policy's clauses, verbatim from sql/
            raw.execute(
                sql.SQL("CREATE POLICY {} ON pg_temp.{} ").format(
                    sql.Identifier(policy), sql.Identifier(scratch)
                )
                + sql.SQL(rest)  # our own file from sql/, never input
            )
            row = raw.execute(
                "SELECT permissive, roles::text, cmd, qual, with_check FROM pg_policies"
                " WHERE tablename = %s AND policyname = %s",
                (scratch, policy),
            ).fetchone()
            assert row is not None
            out[(table, policy)] = tuple(str(v) for v in row)
    finally:
        savepoint.rollback()
    return out


def _view_problems(conn: Connection, expected: Definitions) -> list[str]:
    live = {
        str(name): list(options or [])
        for name, options in _rows(
            conn,
            "SELECT relname, reloptions FROM pg_class"
            " WHERE relnamespace = 'memstore'::regnamespace AND relkind = 'v'",
        )
    }
    problems = []
    for view in sorted(expected.views):
        if view not in live:
            problems.append(f"view memstore.{view} is missing")
        elif "security_invoker=true" not in live[view]:
            problems.append(
                f"view memstore.{view} is not security_invoker: it would read past"
                " row-level security with its owner's rights"
            )
    return problems


def problems(conn: Connection) -> list[str]:
    """Every way the live guards differ from sql/ (empty when all is well)."""
    expected = definitions()
    return [
        *_trigger_problems(conn, expected),
        *_function_problems(conn, expected),
        *_policy_problems(conn, expected),
        *_view_problems(conn, expected),
    ]


__all__ = ["Definitions", "definitions", "normalised_trigger", "problems"]
