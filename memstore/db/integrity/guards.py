"""Guards from sql/: the append-only triggers, row-level security and its policies, the views.

- every trigger sql/ creates exists, is enabled and has that definition, and
  no other trigger sits on a memstore table; ``session_replication_role =
  replica`` (which silences ordinary triggers; ``local`` does not) is not set
  for the database, any role, or this session;
- every table has row-level security with exactly sql/'s policies; every view
  is exactly sql/'s and ``security_invoker``.

Policies and views are compared *as the server deparses them*: the expected
object is created from sql/'s own statement in a rolled-back savepoint (a
policy on a temporary copy of its table, a view in ``pg_temp``) and its
catalog entry compared with the live one. Functions are checked the same way,
in :mod:`memstore.db.integrity.functions`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import sqlalchemy as sa
from psycopg import sql
from sqlalchemy.engine import Connection

from memstore.db.integrity.catalog import attempt, rows, scratch
from memstore.db.integrity.codes import Finding
from memstore.db.integrity.definitions import POLICY_HEAD, VIEW_HEAD, Definitions
from memstore.db.sqlfiles import mask_quoted


def normalised_trigger(statement: str) -> str:
    """A trigger definition with its layout removed, as comparable text.

    >>> normalised_trigger("CREATE OR REPLACE TRIGGER t BEFORE DELETE ON memstore.x\\n"
    ...                    "    FOR EACH ROW EXECUTE FUNCTION memstore.f(\\n  'a')")
    "CREATE TRIGGER t BEFORE DELETE ON memstore.x FOR EACH ROW EXECUTE FUNCTION memstore.f('a')"
    """
    text = re.sub(r"\s+", " ", statement.strip())
    text = re.sub(r"^CREATE (?:OR REPLACE )?TRIGGER", "CREATE TRIGGER", text)
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))


# --------------------------------------------------------------------------- triggers


def trigger_problems(conn: Connection, expected: Definitions) -> list[Finding]:
    """Triggers missing, disabled, changed or unknown; triggers silenced by replication role."""
    problems = []
    live = {
        (str(table), str(name)): (str(definition), str(enabled))
        for table, name, definition, enabled in rows(
            conn,
            "SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid), t.tgenabled"
            " FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE NOT t.tgisinternal AND c.relnamespace = 'memstore'::regnamespace",
        )
    }
    for key, statement in sorted(expected.triggers.items()):
        name = f"trigger {key[1]} on memstore.{key[0]}"
        if key not in live:
            problems.append(Finding("trigger-missing", f"{name} is missing"))
            continue
        definition, enabled = live[key]
        if enabled not in ("O", "A"):
            how = {"D": "disabled", "R": "set to fire only for replicas"}.get(enabled, enabled)
            problems.append(Finding("trigger-disabled", f"{name} is {how}"))
        if normalised_trigger(definition) != normalised_trigger(statement):
            problems.append(Finding("trigger-changed", f"{name} differs from sql/: {definition}"))
    for table, trigger in sorted(set(live) - set(expected.triggers)):
        problems.append(
            Finding(
                "trigger-unknown", f"trigger {trigger} on memstore.{table} is not defined in sql/"
            )
        )
    return problems + _replication_problems(conn)


def _replication_problems(conn: Connection) -> list[Finding]:
    """``session_replication_role = replica`` set anywhere: it silences the triggers.

    Only ``replica`` does: under it ordinary (``ENABLE``) triggers and rules do
    not fire, the append-only guards among them, nor the internal triggers
    that enforce foreign keys. ``local`` fires the same triggers as
    ``origin`` — all but those set to ``ENABLE REPLICA``, which are reported
    as ``trigger-disabled`` anyway — so it is not a finding.
    """
    problems = []
    replica = rows(
        conn,
        "SELECT coalesce(d.datname, '(all databases)'), coalesce(r.rolname, '(all roles)')"
        " FROM pg_db_role_setting s"
        " LEFT JOIN pg_database d ON d.oid = s.setdatabase"
        " LEFT JOIN pg_roles r ON r.oid = s.setrole"
        " WHERE (s.setdatabase = 0 OR d.datname = current_database())"
        "   AND EXISTS (SELECT 1 FROM unnest(s.setconfig) AS c(setting)"
        "               WHERE c.setting ILIKE 'session_replication_role=%'"
        "                 AND lower(btrim(split_part(c.setting, '=', 2), ' \"')) = 'replica')",
    )
    for database, role in replica:
        problems.append(
            Finding(
                "replication-role",
                f"session_replication_role is set for database {database}, role {role}:"
                " it silences the append-only triggers",
            )
        )
    session = conn.execute(sa.text("SELECT current_setting('session_replication_role')"))
    if (value := session.scalar_one()) == "replica":
        problems.append(
            Finding(
                "session-replication-role",
                f"this session runs with session_replication_role = {value}",
            )
        )
    return problems


# --------------------------------------------------------------------------- policies


def policy_problems(conn: Connection, expected: Definitions) -> list[Finding]:
    """Row-level security off or unexpected; policies missing, changed or unknown."""
    problems = []
    tables = [
        (str(name), bool(enabled))
        for name, enabled in rows(
            conn,
            "SELECT relname, relrowsecurity FROM pg_class"
            " WHERE relnamespace = 'memstore'::regnamespace AND relkind IN ('r', 'p')"
            " AND relname <> 'alembic_version' ORDER BY 1",
        )
    ]
    for table, enabled in tables:
        if not enabled:
            problems.append(
                Finding("rls-disabled", f"row-level security is disabled on memstore.{table}")
            )
        elif table not in expected.row_security:
            problems.append(
                Finding(
                    "rls-unexpected",
                    f"memstore.{table} has row-level security that sql/ does not enable",
                )
            )
    live = {
        (str(t), str(p)): tuple(str(v) for v in rest)
        for t, p, *rest in rows(
            conn,
            "SELECT tablename, policyname, permissive, roles::text, cmd, qual, with_check"
            " FROM pg_policies WHERE schemaname = 'memstore'",
        )
    }
    reference = _deparsed_policies(conn, expected)
    for key in sorted(expected.policies):
        name = f"policy {key[1]} on memstore.{key[0]}"
        if key not in live:
            problems.append(Finding("policy-missing", f"{name} is missing"))
        elif isinstance(reference[key], str):
            problems.append(
                Finding(
                    "policy-changed",
                    f"{name} cannot be compared: sql/'s policy cannot be built ({reference[key]})",
                )
            )
        elif live[key] != reference[key]:
            problems.append(Finding("policy-changed", f"{name} differs from sql/: {live[key]}"))
    for table, policy in sorted(set(live) - set(expected.policies)):
        problems.append(
            Finding("policy-unknown", f"policy {policy} on memstore.{table} is not defined in sql/")
        )
    return problems


def _deparsed_policies(
    conn: Connection, expected: Definitions
) -> dict[tuple[str, str], tuple[str, ...] | str]:
    """Each expected policy as the server deparses it, from scratch tables rolled back.

    A policy that cannot be built (its table or a table its expressions read
    is gone) maps to the server's reason instead.
    """
    out: dict[tuple[str, str], tuple[str, ...] | str] = {}
    with scratch(conn) as raw:
        for (table, policy), statement in expected.policies.items():
            copy = f"memstore_check_{table}"
            head = POLICY_HEAD.match(mask_quoted(statement))
            assert head is not None
            rest = statement[head.end() :]  # the policy's clauses, verbatim from sql/
            reason = attempt(
                raw,
                sql.SQL("CREATE TEMP TABLE IF NOT EXISTS {} (LIKE memstore.{})").format(
                    sql.Identifier(copy), sql.Identifier(table)
                ),
            ) or attempt(
                raw,
                sql.SQL("CREATE POLICY {} ON pg_temp.{} ").format(
                    sql.Identifier(policy), sql.Identifier(copy)
                )
                + sql.SQL(rest),  # our own file from sql/, never input
            )
            if reason is not None:
                out[(table, policy)] = reason
                continue
            row = raw.execute(
                "SELECT permissive, roles::text, cmd, qual, with_check FROM pg_policies"
                " WHERE tablename = %s AND policyname = %s",
                (copy, policy),
            ).fetchone()
            assert row is not None
            out[(table, policy)] = tuple(str(v) for v in row)
    return out


# --------------------------------------------------------------------------- views


def view_problems(conn: Connection, expected: Definitions) -> list[Finding]:
    """Views missing, no longer security_invoker, or with another query than sql/'s."""
    live = {
        str(name): list(options or [])
        for name, options in rows(
            conn,
            "SELECT relname, reloptions FROM pg_class"
            " WHERE relnamespace = 'memstore'::regnamespace AND relkind = 'v'",
        )
    }
    problems = []
    bodies = _view_bodies(conn, expected, [v for v in expected.views if v in live])
    for view in sorted(expected.views):
        if view not in live:
            problems.append(Finding("view-missing", f"view memstore.{view} is missing"))
            continue
        if "security_invoker=true" not in live[view]:
            problems.append(
                Finding(
                    "view-invoker",
                    f"view memstore.{view} is not security_invoker: it would read past"
                    " row-level security with its owner's rights",
                )
            )
        have, want = bodies[view]
        if not have:
            problems.append(Finding("view-changed", f"view memstore.{view}: {want}"))
        elif have != want:
            problems.append(
                Finding("view-changed", f"view memstore.{view}'s query differs from sql/")
            )
    return problems


def _view_bodies(
    conn: Connection, expected: Definitions, views: Iterable[str]
) -> dict[str, tuple[str, str]]:
    """(live, expected) deparsed query of each view; the expected one built in pg_temp.

    A view sql/ defines that cannot be built (a table it reads is gone) has the
    server's reason as its expected query: it then differs from the live one.
    """
    out: dict[str, tuple[str, str]] = {}
    unbuilt: dict[str, str] = {}
    with scratch(conn) as raw:
        for view, statement in expected.view_statements.items():
            head = VIEW_HEAD.match(mask_quoted(statement))
            assert head is not None
            reason = attempt(
                raw,
                sql.SQL("CREATE VIEW pg_temp.{} ").format(sql.Identifier(view))
                + sql.SQL(statement[head.end() :]),  # our own file from sql/, never input
            )
            if reason is not None:
                unbuilt[view] = f"sql/'s view cannot be built: {reason}"
        for view in views:
            if view in unbuilt:
                out[view] = ("", unbuilt[view])
                continue
            row = raw.execute(
                "SELECT pg_get_viewdef(format('memstore.%%I', %s::text)::regclass),"
                " pg_get_viewdef(format('pg_temp.%%I', %s::text)::regclass)",
                (view, view),
            ).fetchone()
            assert row is not None
            out[view] = (str(row[0]), str(row[1]))
    return out


__all__ = ["normalised_trigger", "policy_problems", "trigger_problems", "view_problems"]
