"""Tamper evidence: the database is what sql/, the metadata and roles.py say, and nothing more.

A superuser (or the tables' owner) can disable a trigger, replace a function,
grant a table to PUBLIC, give the service role BYPASSRLS or plant a SECURITY
DEFINER function that reads every tenant. None of that is prevented;
:func:`findings` notices it. Each finding has a stable short code (``CODES``;
docs/security.md says what each means and what to do) and a message naming
the object. What is expected always comes from one source, never from a copy:

- **guards** from sql/ — every trigger sql/ creates exists, is enabled and has
  that definition, and no other trigger sits on a memstore table;
  ``session_replication_role`` (which silences ordinary triggers) is not set
  for the database, any role, or this session; every table has row-level
  security with exactly sql/'s policies; every function and view is exactly
  sql/'s. Policies, functions and views are compared *as the server deparses
  them*: the expected object is created from sql/'s own statement in a
  rolled-back savepoint (a policy on a temporary copy of its table, a function
  or view in ``pg_temp``) and its catalog entry compared with the live one —
  body, SECURITY DEFINER, ``SET`` options (a reset ``search_path``),
  arguments, volatility, LEAKPROOF, a view's query;
- **structure** from the metadata (memstore/db/schema.py): the tables are
  built in ``pg_temp`` in a rolled-back savepoint and their columns (type,
  NOT NULL, default, identity), constraints (primary keys, foreign keys,
  checks, unique, validated, deferrable) and indexes compared with the live
  ones, and the identity sequences' bounds; the triggers that enforce foreign
  keys are enabled; tables are logged and take part in no inheritance;
- **strangers**: every object in schema ``memstore`` — tables, views,
  sequences, functions, procedures, aggregates, types, operators, operator
  classes, collations, text-search objects, statistics, extensions — and
  every rule on its tables is one sql/ or the metadata defines (the HNSW
  indexes memstore builds per embedding model at run time are expected);
- **owners**: everything is owned by the role that ran the migrations (the
  owner of ``memstore.alembic_version``), except what sql/ hands to another
  role with ``ALTER … OWNER TO`` (``redact_node`` → ``memstore_redactor``);
  the migrating role is not one of the confined roles;
- **privileges** from sql/ and roles.py: the grants sql/ makes, then the SQL
  :func:`memstore.db.roles.roles_sql` runs, replayed (statement by statement,
  REVOKE included) over the live objects give every privilege a role other
  than the owner may hold; PUBLIC keeps only the EXECUTE PostgreSQL gives on
  functions sql/ does not revoke; anything more — for PUBLIC, the memstore
  roles or any other role, column privileges and grant options included — is
  a finding, and so is a privilege roles.py grants that ``memstore_app`` or
  ``memstore_reader`` lacks, once roles were applied to this database; no
  ``ALTER DEFAULT PRIVILEGES`` (in schema memstore, or of the migrating role)
  hands the next migration's objects to others;
- **roles** from roles.py: the attributes it sets (``NOSUPERUSER``,
  ``NOBYPASSRLS``, ``NOLOGIN`` for ``memstore_redactor`` …), the memberships
  it grants (``memstore_redactor`` only to ``memstore_owner``; the confined
  roles members of nothing), no per-role settings on the confined roles
  (``statement_timeout``, ``default_transaction_read_only``, ``search_path``
  …) and no database-wide setting that locks the service out.

Roles that do not exist are not checked: a deployment that never ran
``memstore db roles`` (the embedded default, a superuser deploy) has no
``memstore_app`` to misconfigure, and no privilege can name a missing role.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from psycopg import sql
from sqlalchemy.engine import Connection

from memstore.db import roles
from memstore.db.schema import SCHEMA, metadata
from memstore.db.sqlfiles import mask_quoted, split_statements, sql_files

_TRIGGER = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+(\w+)\s.*?\sON\s+memstore\.(\w+)\s", re.S
)
_FUNCTION = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)\s+memstore\.(\w+)\s*\(", re.S | re.I
)
_POLICY = re.compile(r"CREATE\s+POLICY\s+(\w+)\s+ON\s+memstore\.(\w+)\s", re.S)
_RLS = re.compile(r"ALTER\s+TABLE\s+memstore\.(\w+)\s+ENABLE\s+ROW\s+LEVEL\s+SECURITY", re.S)
_VIEW = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+memstore\.(\w+)\s", re.S | re.I)
_OWNER = re.compile(
    r"ALTER\s+(FUNCTION|PROCEDURE|ROUTINE|TABLE|VIEW|MATERIALIZED\s+VIEW|SEQUENCE|TYPE|DOMAIN|SCHEMA)"
    r"\s+(.+?)\s+OWNER\s+TO\s+(\w+)\s*$",
    re.S | re.I,
)
# Other objects a later sql/ file may create in schema memstore: expected by name.
_OBJECT = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(TYPE|DOMAIN|SEQUENCE|TABLE|MATERIALIZED\s+VIEW|AGGREGATE"
    r"|OPERATOR\s+CLASS|OPERATOR\s+FAMILY|COLLATION|CONVERSION|STATISTICS|TEXT\s+SEARCH\s+\w+)"
    r"\s+(?:IF\s+NOT\s+EXISTS\s+)?memstore\.(\w+)",
    re.S | re.I,
)
_RULE = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?RULE\s+(\w+)\s+AS\s+ON\s+\w+\s+TO\s+memstore\.(\w+)", re.S | re.I
)
_ACL = re.compile(r"(GRANT|REVOKE)\s", re.I)
_ALTER_ROLE = re.compile(r"ALTER\s+ROLE\s+(\w+)\s+(.*)$", re.S | re.I)

REDACTOR = "memstore_redactor"
"""The NOLOGIN owner of ``memstore.redact_node`` (sql/03_redaction.sql)."""
CONFINED = (roles.APP, roles.READER)
"""The roles row-level security confines; they hold only what roles.py grants."""

CODES: dict[str, str] = {
    "trigger-missing": "a trigger sql/ creates is gone",
    "trigger-disabled": "a trigger sql/ creates is disabled or fires only for replicas",
    "trigger-changed": "a trigger's definition differs from sql/",
    "trigger-unknown": "a trigger sql/ does not define sits on a memstore table",
    "replication-role": "session_replication_role (which silences triggers) is set for the"
    " database or a role",
    "session-replication-role": "the checking session itself runs with session_replication_role",
    "function-missing": "a function sql/ defines is gone (or has other argument types)",
    "function-body": "a function's body differs from sql/",
    "function-security": "a function is SECURITY DEFINER when sql/ says invoker, or the reverse",
    "function-config": "a function's SET options differ from sql/ (e.g. its search_path was reset)",
    "function-changed": "a function's arguments, result, language, volatility, strictness,"
    " LEAKPROOF, parallel safety or cost differ from sql/",
    "function-unknown": "a function, procedure or aggregate sql/ does not define is in schema"
    " memstore",
    "rls-disabled": "row-level security is off on a memstore table",
    "rls-unexpected": "a table has row-level security that sql/ does not enable",
    "policy-missing": "a policy sql/ creates is gone",
    "policy-changed": "a policy's command, roles or expressions differ from sql/",
    "policy-unknown": "a policy sql/ does not create is on a memstore table",
    "view-missing": "a view sql/ creates is gone",
    "view-invoker": "a view is no longer security_invoker",
    "view-changed": "a view's query differs from sql/",
    "table-missing": "a table of the metadata is gone",
    "table-changed": "a table is UNLOGGED, or inherits or is inherited from",
    "column-missing": "a column of the metadata is gone",
    "column-unknown": "a table has a column the metadata does not define",
    "column-changed": "a column's type, default, identity or generation differs from the metadata",
    "not-null-dropped": "a column the metadata declares NOT NULL accepts NULL",
    "constraint-missing": "a primary key, foreign key, unique or check constraint is gone",
    "constraint-changed": "a constraint differs from the metadata (definition, NOT VALID,"
    " deferrable)",
    "constraint-unknown": "a table has a constraint the metadata does not define",
    "constraint-disabled": "the triggers that enforce a foreign key are disabled",
    "sequence-changed": "an identity sequence's increment, bounds, cycling or type differ from"
    " the metadata",
    "index-missing": "an index of the metadata is gone",
    "index-changed": "an index differs from the metadata, or is invalid",
    "index-unknown": "an index neither the metadata nor an embedding model's HNSW index",
    "object-unknown": "a table, view, sequence, type, operator or other object sql/ and the"
    " metadata do not define is in schema memstore",
    "rule-unknown": "a rule (which can rewrite or swallow statements) is on a memstore table",
    "owner-changed": "an object is owned by another role than the one sql/ and the migrations"
    " give it",
    "public-grant": "PUBLIC holds a privilege on a memstore object",
    "role-privilege": "memstore_app, memstore_reader or memstore_redactor holds a privilege"
    " roles.py (or sql/) does not grant",
    "stranger-privilege": "a role other than memstore's holds a privilege on a memstore object",
    "privilege-missing": "memstore_app or memstore_reader lacks a privilege roles.py grants",
    "default-privilege": "ALTER DEFAULT PRIVILEGES (in schema memstore, or of the migrating role)"
    " would grant the next migration's objects to others",
    "role-attribute": "a memstore role has an attribute roles.py does not give it (SUPERUSER,"
    " BYPASSRLS, LOGIN …)",
    "role-membership": "memstore_app or memstore_reader is a member of another role",
    "redactor-member": "memstore_redactor is granted to a role other than memstore_owner",
    "role-setting": "a per-role setting on memstore_app or memstore_reader",
    "database-setting": "a setting for the whole database (or every role) locks the service out",
}


@dataclass(frozen=True)
class Finding:
    """One way the live database differs from what memstore defines."""

    code: str
    """A stable short name from :data:`CODES`."""
    message: str
    """A sentence naming the object."""

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass
class Definitions:
    """What sql/ says the guards are."""

    triggers: dict[tuple[str, str], str] = field(default_factory=dict)
    """(table, trigger) → the CREATE TRIGGER statement."""
    functions: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """function name → (body, security definer)."""
    routines: list[str] = field(default_factory=list)
    """Every CREATE FUNCTION / PROCEDURE statement, in order."""
    policies: dict[tuple[str, str], str] = field(default_factory=dict)
    """(table, policy) → the CREATE POLICY statement."""
    row_security: set[str] = field(default_factory=set)
    views: set[str] = field(default_factory=set)
    view_statements: dict[str, str] = field(default_factory=dict)
    """view → the CREATE VIEW statement."""
    grants: list[str] = field(default_factory=list)
    """GRANT and REVOKE statements, in order."""
    owners: list[tuple[str, str, str]] = field(default_factory=list)
    """(object kind, object, role) for each ``ALTER … OWNER TO``."""
    objects: set[tuple[str, str]] = field(default_factory=set)
    """(kind, name) of other objects sql/ creates in schema memstore (types, sequences …)."""
    rules: set[tuple[str, str]] = field(default_factory=set)
    """(table, rule)."""


def normalised_trigger(statement: str) -> str:
    """A trigger definition with its layout removed, as comparable text.

    >>> normalised_trigger("CREATE OR REPLACE TRIGGER t BEFORE DELETE ON memstore.x\\n"
    ...                    "    FOR EACH ROW EXECUTE FUNCTION memstore.f(\\n  'a')")
    "CREATE TRIGGER t BEFORE DELETE ON memstore.x FOR EACH ROW EXECUTE FUNCTION memstore.f('a')"
    """
    text = re.sub(r"\s+", " ", statement.strip())
    text = re.sub(r"^CREATE (?:OR REPLACE )?TRIGGER", "CREATE TRIGGER", text)
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))


_DOLLAR = re.compile(r"\$[A-Za-z_]*\$")


def _dollar_body(statement: str) -> str:
    """The first dollar-quoted body of a statement ('' for a BEGIN ATOMIC body)."""
    if (m := _DOLLAR.search(statement)) is None:
        return ""
    start = m.end()
    return statement[start : statement.index(m.group(), start)]


def _words(statement: str) -> str:
    return re.sub(r"\s+", " ", statement).strip()


def definitions() -> Definitions:
    """Parse the guards out of every file in sql/."""
    found = Definitions()
    for path in sql_files():
        for statement in split_statements(path.read_text()):
            bare = mask_quoted(statement)
            if m := _TRIGGER.match(bare):
                found.triggers[(m.group(2), m.group(1))] = statement
            elif m := _FUNCTION.match(bare):
                header = bare[: m2.start()] if (m2 := _DOLLAR.search(bare)) else bare
                definer = "SECURITY DEFINER" in header
                found.functions[m.group(2)] = (_dollar_body(statement), definer)
                found.routines.append(statement)
            elif m := _POLICY.match(bare):
                found.policies[(m.group(2), m.group(1))] = statement
            elif m := _RLS.match(bare):
                found.row_security.add(m.group(1))
            elif m := _VIEW.match(bare):
                found.views.add(m.group(1))
                found.view_statements[m.group(1)] = statement
            elif _ACL.match(bare):
                found.grants.append(_words(statement))
            elif m := _OWNER.match(bare):
                kind = _words(m.group(1)).upper()
                found.owners.append((kind, _words(m.group(2)), m.group(3)))
            elif m := _RULE.match(bare):
                found.rules.add((m.group(2), m.group(1)))
            elif m := _OBJECT.match(bare):
                kind = _words(m.group(1)).upper()
                found.objects.add(("TYPE" if kind == "DOMAIN" else kind, m.group(2)))
    return found


@dataclass
class RoleDefinitions:
    """What roles.py says about the roles, read from the SQL it produces."""

    grants: list[str] = field(default_factory=list)
    """GRANT and REVOKE statements on objects, in order."""
    attributes: dict[str, dict[str, bool]] = field(default_factory=dict)
    """role → pg_roles column (``rolsuper`` …) → value."""
    memberships: set[tuple[str, str]] = field(default_factory=set)
    """(role, member) for each ``GRANT role TO member``."""
    settings: dict[str, set[str]] = field(default_factory=dict)
    """role → settings roles.py gives it with ``ALTER ROLE … SET``."""


_ATTRIBUTES = {
    "SUPERUSER": "rolsuper",
    "BYPASSRLS": "rolbypassrls",
    "CREATEDB": "rolcreatedb",
    "CREATEROLE": "rolcreaterole",
    "REPLICATION": "rolreplication",
    "LOGIN": "rolcanlogin",
    "INHERIT": "rolinherit",
}
_MEMBERSHIP = re.compile(r"GRANT\s+(\w+(?:\s*,\s*\w+)*)\s+TO\s+(.+?)(?:\s+WITH\s+.*)?$", re.I)


def role_definitions(statement_sql: str | None = None) -> RoleDefinitions:
    """Parse :func:`memstore.db.roles.roles_sql` (the one source of the grants)."""
    found = RoleDefinitions()
    for statement in split_statements(statement_sql or roles.roles_sql()):
        text = _words(statement)
        bare = _words(mask_quoted(statement))
        if m := _ALTER_ROLE.match(bare):
            role, rest = m.group(1), m.group(2)
            if setting := re.match(r"(?:IN\s+DATABASE\s+\S+\s+)?SET\s+([\w.]+)", rest, re.I):
                found.settings.setdefault(role, set()).add(setting.group(1).lower())
                continue
            for word in rest.upper().split():
                value = not word.startswith("NO")
                name = word[2:] if word.startswith("NO") and word[2:] in _ATTRIBUTES else word
                if name in _ATTRIBUTES:
                    found.attributes.setdefault(role, {})[_ATTRIBUTES[name]] = value
        elif re.match(r"(GRANT|REVOKE)\s.*\sON\s", bare, re.I):
            found.grants.append(text)
        elif m := _MEMBERSHIP.match(bare):
            for role in re.split(r"\s*,\s*", m.group(1)):
                for member in re.split(r"\s*,\s*", m.group(2)):
                    found.memberships.add((role, member))
    return found


def _rows(conn: Connection, query: str, **params: Any) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in conn.execute(sa.text(query), params)]


def _raw(conn: Connection) -> Any:
    raw = conn.connection.driver_connection
    assert raw is not None
    return raw


# --------------------------------------------------------------------------- triggers


def _trigger_problems(conn: Connection, expected: Definitions) -> list[Finding]:
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
            Finding(
                "replication-role",
                f"session_replication_role is set for database {database}, role {role}:"
                " it silences the append-only triggers",
            )
        )
    session = conn.execute(sa.text("SELECT current_setting('session_replication_role')"))
    if (value := session.scalar_one()) != "origin":
        problems.append(
            Finding(
                "session-replication-role",
                f"this session runs with session_replication_role = {value}",
            )
        )
    return problems


# --------------------------------------------------------------------------- functions

_FUNCTION_COLUMNS = (
    "p.proname, pg_get_function_identity_arguments(p.oid),"
    " regexp_replace(p.oid::regprocedure::text, '^[^(]*\\(', '('),"
    " p.prosrc, p.prosecdef, coalesce(array_to_string(p.proconfig, '; '), ''),"
    " pg_get_function_arguments(p.oid), coalesce(pg_get_function_result(p.oid), ''),"
    " p.prokind::text, l.lanname::text, p.provolatile::text, p.proisstrict, p.proleakproof,"
    " p.proparallel::text, p.procost, p.prorows"
)
_FUNCTION_DETAILS = (
    "arguments",
    "result",
    "kind",
    "language",
    "volatility",
    "strict",
    "leakproof",
    "parallel",
    "cost",
    "rows",
)
Signature = tuple[str, str]  # (name, identity arguments)


def _functions_in(conn: Connection, namespace: str) -> dict[Signature, tuple[Any, ...]]:
    rows = _rows(
        conn,
        (
            "SELECT {columns} FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
            " WHERE p.pronamespace = {ns} AND NOT EXISTS (SELECT 1 FROM pg_depend e"
            "   WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid AND e.deptype = 'e')"
        )
        .replace("{columns}", _FUNCTION_COLUMNS)
        .replace("{ns}", namespace),
    )
    return {(str(r[0]), str(r[1])): r[2:] for r in rows}


def _expected_functions(
    conn: Connection, expected: Definitions
) -> dict[Signature, tuple[Any, ...]]:
    """Each function of sql/ as the server stores it: created in pg_temp, rolled back."""
    raw = _raw(conn)
    savepoint = conn.begin_nested()
    try:
        for statement in expected.routines:
            head = _FUNCTION.match(mask_quoted(statement))
            assert head is not None
            kind, name = head.group(1).upper(), head.group(2)
            raw.execute(
                sql.SQL("CREATE OR REPLACE {} pg_temp.{}(").format(
                    sql.SQL(kind), sql.Identifier(name)
                )
                + sql.SQL(statement[head.end() :])  # our own file from sql/, never input
            )
        return _functions_in(conn, "pg_my_temp_schema()")
    finally:
        savepoint.rollback()


def _function_problems(
    conn: Connection, expected: Definitions, reference: dict[Signature, tuple[Any, ...]]
) -> list[Finding]:
    problems = []
    live = _functions_in(conn, "'memstore'::regnamespace")
    for key, want in sorted(reference.items()):
        name = f"function memstore.{key[0]}{want[0]}"
        have = live.get(key)
        if have is None:
            problems.append(Finding("function-missing", f"{name} is missing"))
            continue
        if have[1] != want[1]:
            problems.append(Finding("function-body", f"{name} has a body that differs from sql/"))
        if have[2] != want[2]:
            problems.append(
                Finding(
                    "function-security", f"{name} is{'' if have[2] else ' not'} SECURITY DEFINER"
                )
            )
        if have[3] != want[3]:
            problems.append(
                Finding(
                    "function-config",
                    f"{name} runs with SET {have[3] or '(nothing)'}; sql/ gives it"
                    f" SET {want[3] or '(nothing)'}",
                )
            )
        changed = [
            f"{label} {have[i]!s} (sql/: {want[i]!s})"
            for i, label in enumerate(_FUNCTION_DETAILS, start=4)
            if have[i] != want[i]
        ]
        if changed:
            problems.append(
                Finding("function-changed", f"{name} differs from sql/: {'; '.join(changed)}")
            )
    for key in sorted(set(live) - set(reference)):
        if ("AGGREGATE", key[0]) in expected.objects:
            continue
        have = live[key]
        definer = " (SECURITY DEFINER: it runs with its owner's rights)" if have[2] else ""
        problems.append(
            Finding(
                "function-unknown",
                f"function memstore.{key[0]}{have[0]} is not defined in sql/{definer}",
            )
        )
    return problems


# --------------------------------------------------------------------------- policies


def _policy_problems(conn: Connection, expected: Definitions) -> list[Finding]:
    problems = []
    tables = [
        (str(name), bool(enabled))
        for name, enabled in _rows(
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
            problems.append(Finding("policy-missing", f"{name} is missing"))
        elif live[key] != reference[key]:
            problems.append(Finding("policy-changed", f"{name} differs from sql/: {live[key]}"))
    for table, policy in sorted(set(live) - set(expected.policies)):
        problems.append(
            Finding("policy-unknown", f"policy {policy} on memstore.{table} is not defined in sql/")
        )
    return problems


def _deparsed(conn: Connection, expected: Definitions) -> dict[tuple[str, str], tuple[str, ...]]:
    """Each expected policy as the server deparses it, from scratch tables rolled back."""
    raw = _raw(conn)
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


# --------------------------------------------------------------------------- views


def _view_problems(conn: Connection, expected: Definitions) -> list[Finding]:
    live = {
        str(name): list(options or [])
        for name, options in _rows(
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
        if have != want:
            problems.append(
                Finding("view-changed", f"view memstore.{view}'s query differs from sql/")
            )
    return problems


def _view_bodies(
    conn: Connection, expected: Definitions, views: Iterable[str]
) -> dict[str, tuple[str, str]]:
    """(live, expected) deparsed query of each view; the expected one built in pg_temp."""
    raw = _raw(conn)
    out: dict[str, tuple[str, str]] = {}
    savepoint = conn.begin_nested()
    try:
        for view, statement in expected.view_statements.items():
            head = _VIEW.match(mask_quoted(statement))
            assert head is not None
            raw.execute(
                sql.SQL("CREATE VIEW pg_temp.{} ").format(sql.Identifier(view))
                + sql.SQL(statement[head.end() :])  # our own file from sql/, never input
            )
        for view in views:
            row = raw.execute(
                "SELECT pg_get_viewdef(format('memstore.%%I', %s::text)::regclass),"
                " pg_get_viewdef(format('pg_temp.%%I', %s::text)::regclass)",
                (view, view),
            ).fetchone()
            assert row is not None
            out[view] = (str(row[0]), str(row[1]))
    finally:
        savepoint.rollback()
    return out


# --------------------------------------------------------------------------- structure

_STRUCTURE = {
    "tables": "SELECT c.relname, c.relpersistence::text FROM pg_class c"
    " WHERE c.relnamespace = {ns} AND c.relkind IN ('r', 'p')",
    "columns": "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
    " coalesce(pg_get_expr(d.adbin, d.adrelid), ''), a.attidentity::text, a.attgenerated::text"
    " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
    " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
    " WHERE c.relnamespace = {ns} AND c.relkind IN ('r', 'p')"
    " AND a.attnum > 0 AND NOT a.attisdropped",
    # Foreign keys name their referenced table, qualified or not by search_path:
    # compare them without the schema. NOT NULL is compared on the columns.
    "constraints": "SELECT c.relname, k.conname, k.contype::text,"
    " regexp_replace(regexp_replace(pg_get_constraintdef(k.oid), 'REFERENCES (\\w+\\.)?',"
    "   'REFERENCES '), ' NOT VALID$', ''),"
    " k.convalidated, k.condeferrable, k.condeferred"
    " FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid"
    " WHERE c.relnamespace = {ns} AND k.contype <> 'n'",
    # The identity sequences behind the id columns: a MAXVALUE reached or CYCLE
    # locks inserts out or reuses ids.
    "sequences": "SELECT c.relname || '.' || a.attname, c.relname, s.seqincrement, s.seqmin,"
    " s.seqmax, s.seqcycle, s.seqtypid::regtype::text"
    " FROM pg_sequence s JOIN pg_depend d ON d.classid = 'pg_class'::regclass"
    "   AND d.objid = s.seqrelid AND d.deptype = 'i'"
    " JOIN pg_class c ON c.oid = d.refobjid"
    " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.refobjsubid"
    " WHERE c.relnamespace = {ns}",
    # Indexes that do not back a primary key or unique constraint (those are constraints).
    "indexes": "SELECT ic.relname, c.relname,"
    " regexp_replace(pg_get_indexdef(i.indexrelid), ' ON \\S+ USING ',"
    "   ' ON ' || c.relname || ' USING '),"
    " i.indisvalid AND i.indisready, i.indisunique, am.amname::text,"
    " pg_get_expr(i.indpred, i.indrelid) IS NOT NULL"
    " FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid"
    " JOIN pg_class c ON c.oid = i.indrelid JOIN pg_am am ON am.oid = ic.relam"
    " WHERE c.relnamespace = {ns} AND NOT EXISTS (SELECT 1 FROM pg_constraint k"
    "   WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid"
    "   AND k.contype IN ('p', 'u', 'x'))",
}


def _structure(conn: Connection, namespace: str) -> dict[str, list[tuple[Any, ...]]]:
    return {part: _rows(conn, q.replace("{ns}", namespace)) for part, q in _STRUCTURE.items()}


def _expected_structure(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """The metadata's tables as the server builds them: in pg_temp, rolled back."""
    savepoint = conn.begin_nested()
    try:
        conn.execution_options(schema_translate_map={SCHEMA: "pg_temp"})
        try:
            metadata.create_all(conn, checkfirst=False)
        finally:
            conn.execution_options(schema_translate_map=None)
        return _structure(conn, "pg_my_temp_schema()")
    finally:
        savepoint.rollback()


def _runtime_index(table: str, unique: bool, method: str, partial: bool) -> bool:
    """An embedding model's HNSW index, which memstore builds at run time (embedding/cache.py)."""
    return table == "embeddings" and method == "hnsw" and not unique and partial


def _structure_problems(conn: Connection) -> list[Finding]:
    problems: list[Finding] = []
    want = _expected_structure(conn)
    have = _structure(conn, "'memstore'::regnamespace")
    tables = {str(t) for t, _ in want["tables"]}
    live_tables = {str(t): str(p) for t, p in have["tables"]}
    for table in sorted(tables - set(live_tables)):
        problems.append(Finding("table-missing", f"table memstore.{table} is missing"))
    for table in sorted(tables & set(live_tables)):
        if live_tables[table] != "p":
            problems.append(
                Finding(
                    "table-changed",
                    f"table memstore.{table} is UNLOGGED: a crash empties it",
                )
            )

    def keyed(
        rows: list[tuple[Any, ...]], width: int, table_at: int = 0
    ) -> dict[tuple[str, ...], tuple[Any, ...]]:
        return {
            tuple(str(v) for v in r[:width]): r[width:] for r in rows if str(r[table_at]) in tables
        }

    want_columns, have_columns = keyed(want["columns"], 2), keyed(have["columns"], 2)
    labels = ("type", "not null", "default", "identity", "generated")
    for key in sorted(want_columns):
        name = f"column memstore.{key[0]}.{key[1]}"
        if key[0] not in live_tables:
            continue
        if key not in have_columns:
            problems.append(Finding("column-missing", f"{name} is missing"))
            continue
        w, h = want_columns[key], have_columns[key]
        if w[1] and not h[1]:
            problems.append(
                Finding("not-null-dropped", f"{name} accepts NULL: the metadata says NOT NULL")
            )
        changed = [
            f"{label} {h[i]!r} (metadata: {w[i]!r})"
            for i, label in enumerate(labels)
            if label != "not null" and h[i] != w[i]
        ]
        if not w[1] and h[1]:
            changed.append("NOT NULL (metadata: nullable)")
        if changed:
            problems.append(Finding("column-changed", f"{name} differs: {'; '.join(changed)}"))
    for key in sorted(set(have_columns) - set(want_columns)):
        problems.append(
            Finding(
                "column-unknown",
                f"column memstore.{key[0]}.{key[1]} is not defined in the metadata",
            )
        )

    want_constraints, have_constraints = (
        keyed(want["constraints"], 2),
        keyed(have["constraints"], 2),
    )
    for key in sorted(want_constraints):
        name = f"constraint {key[1]} on memstore.{key[0]}"
        if key[0] not in live_tables:
            continue
        if key not in have_constraints:
            problems.append(
                Finding("constraint-missing", f"{name} is missing ({want_constraints[key][1]})")
            )
            continue
        (wtype, wdef, wvalid, wdefer, wdeferred) = want_constraints[key]
        (htype, hdef, hvalid, hdefer, hdeferred) = have_constraints[key]
        if (htype, hdef) != (wtype, wdef):
            problems.append(
                Finding("constraint-changed", f"{name} is {hdef}; the metadata says {wdef}")
            )
        if not hvalid and wvalid:
            problems.append(
                Finding("constraint-changed", f"{name} is NOT VALID: existing rows went unchecked")
            )
        if (hdefer, hdeferred) != (wdefer, wdeferred):
            problems.append(
                Finding("constraint-changed", f"{name} is deferrable, unlike the metadata's")
            )
    for key in sorted(set(have_constraints) - set(want_constraints)):
        problems.append(
            Finding(
                "constraint-unknown",
                f"constraint {key[1]} on memstore.{key[0]} is not defined in the metadata:"
                f" {have_constraints[key][1]}",
            )
        )
    for table, constraint, enabled in _rows(
        conn,
        "SELECT c.relname, k.conname, t.tgenabled::text FROM pg_trigger t"
        " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_constraint k ON k.oid = t.tgconstraint"
        " WHERE t.tgisinternal AND c.relnamespace = 'memstore'::regnamespace"
        " AND t.tgenabled NOT IN ('O', 'A')"
        " GROUP BY 1, 2, 3 ORDER BY 1, 2",
    ):
        how = "disabled" if enabled == "D" else "set to fire only for replicas"
        problems.append(
            Finding(
                "constraint-disabled",
                f"the triggers enforcing constraint {constraint} on memstore.{table} are {how}",
            )
        )

    want_indexes, have_indexes = keyed(want["indexes"], 1, 1), keyed(have["indexes"], 1, 1)
    for (index,), (table, definition, *_) in sorted(want_indexes.items()):
        if table not in live_tables:
            continue
        if (index,) not in have_indexes:
            problems.append(
                Finding("index-missing", f"index memstore.{index} is missing ({definition})")
            )
            continue
        h_table, h_definition, h_valid, *_ = have_indexes[(index,)]
        if (h_table, h_definition) != (table, definition):
            problems.append(
                Finding(
                    "index-changed",
                    f"index memstore.{index} is {h_definition}; the metadata says {definition}",
                )
            )
        if not h_valid:
            problems.append(
                Finding("index-changed", f"index memstore.{index} is invalid: rebuild it")
            )
    for (index,), (table, definition, _, unique, method, partial) in sorted(have_indexes.items()):
        if (index,) in want_indexes or _runtime_index(str(table), unique, str(method), partial):
            continue
        problems.append(
            Finding(
                "index-unknown",
                f"index memstore.{index} is not defined in the metadata: {definition}",
            )
        )

    want_sequences, have_sequences = keyed(want["sequences"], 1, 1), keyed(have["sequences"], 1, 1)
    labels = ("increment", "minimum", "maximum", "cycle", "type")
    for (column,), wanted_sequence in sorted(want_sequences.items()):
        live_sequence = have_sequences.get((column,))
        if live_sequence is None:
            continue  # the column's own comparison names a lost identity
        changed = [
            f"{label} {live_sequence[i]!s} (metadata: {wanted_sequence[i]!s})"
            for i, label in enumerate(labels, start=1)
            if live_sequence[i] != wanted_sequence[i]
        ]
        if changed:
            problems.append(
                Finding(
                    "sequence-changed",
                    f"the identity sequence of memstore.{column} differs: {'; '.join(changed)}",
                )
            )

    for child, parent in _rows(
        conn,
        "SELECT i.inhrelid::regclass::text, i.inhparent::regclass::text FROM pg_inherits i"
        " JOIN pg_class a ON a.oid = i.inhrelid JOIN pg_class b ON b.oid = i.inhparent"
        " WHERE a.relnamespace = 'memstore'::regnamespace"
        "    OR b.relnamespace = 'memstore'::regnamespace ORDER BY 1, 2",
    ):
        problems.append(
            Finding(
                "table-changed",
                f"table {child} inherits from {parent}: reads of {parent} include {child}'s rows",
            )
        )
    return problems


# --------------------------------------------------------------------------- strangers

_OBJECTS = """
SELECT CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'TABLE' WHEN 'v' THEN 'VIEW'
                      WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'
                      WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TYPE' END,
       'memstore.' || c.relname,
       (SELECT t.relname::text FROM pg_depend d JOIN pg_class t ON t.oid = d.refobjid
        WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('i', 'a')
          AND d.refclassid = 'pg_class'::regclass AND t.relnamespace = c.relnamespace LIMIT 1)
FROM pg_class c
WHERE c.relnamespace = 'memstore'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e')
UNION ALL
SELECT 'TYPE', 'memstore.' || t.typname, NULL FROM pg_type t
WHERE t.typnamespace = 'memstore'::regnamespace AND t.typrelid = 0
  AND NOT EXISTS (SELECT 1 FROM pg_type a WHERE a.typarray = t.oid)
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = t.oid AND e.deptype = 'e')
UNION ALL
SELECT 'OPERATOR', o.oid::regoperator::text, NULL FROM pg_operator o
WHERE o.oprnamespace = 'memstore'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = o.oid AND e.deptype = 'e')
UNION ALL
SELECT 'OPERATOR CLASS', 'memstore.' || opcname, NULL FROM pg_opclass
WHERE opcnamespace = 'memstore'::regnamespace
UNION ALL
SELECT 'OPERATOR FAMILY', 'memstore.' || opfname, NULL FROM pg_opfamily
WHERE opfnamespace = 'memstore'::regnamespace
UNION ALL
SELECT 'COLLATION', 'memstore.' || collname, NULL FROM pg_collation
WHERE collnamespace = 'memstore'::regnamespace
UNION ALL
SELECT 'CONVERSION', 'memstore.' || conname, NULL FROM pg_conversion
WHERE connamespace = 'memstore'::regnamespace
UNION ALL
SELECT 'TEXT SEARCH CONFIGURATION', 'memstore.' || cfgname, NULL FROM pg_ts_config
WHERE cfgnamespace = 'memstore'::regnamespace
UNION ALL
SELECT 'TEXT SEARCH DICTIONARY', 'memstore.' || dictname, NULL FROM pg_ts_dict
WHERE dictnamespace = 'memstore'::regnamespace
UNION ALL
SELECT 'TEXT SEARCH PARSER', 'memstore.' || prsname, NULL FROM pg_ts_parser
WHERE prsnamespace = 'memstore'::regnamespace
UNION ALL
SELECT 'TEXT SEARCH TEMPLATE', 'memstore.' || tmplname, NULL FROM pg_ts_template
WHERE tmplnamespace = 'memstore'::regnamespace
UNION ALL
SELECT 'STATISTICS', 'memstore.' || stxname, NULL FROM pg_statistic_ext
WHERE stxnamespace = 'memstore'::regnamespace
UNION ALL
SELECT 'EXTENSION', extname::text, NULL FROM pg_extension
WHERE extnamespace = 'memstore'::regnamespace
"""


def _stranger_problems(conn: Connection, expected: Definitions) -> list[Finding]:
    tables = {t.name for t in metadata.sorted_tables} | {"alembic_version"}
    known = {("TABLE", f"memstore.{t}") for t in tables}
    known |= {("VIEW", f"memstore.{v}") for v in expected.views}
    known |= {(kind, f"memstore.{name}") for kind, name in expected.objects}
    # Migration 0001 creates pgvector wherever the migrating role's search_path
    # puts it (usually public): in schema memstore it is expected too.
    known.add(("EXTENSION", "vector"))
    problems = []
    for kind, name, owned_by in _rows(conn, _OBJECTS):
        if (kind, name) in known or (kind == "SEQUENCE" and owned_by in tables):
            continue  # an identity sequence of one of our tables
        problems.append(
            Finding(
                "object-unknown",
                f"{kind.lower()} {name} is not defined in sql/ or the metadata",
            )
        )
    for table, rule in _rows(
        conn,
        "SELECT c.relname, r.rulename FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class"
        " WHERE c.relnamespace = 'memstore'::regnamespace AND r.rulename <> '_RETURN'"
        " ORDER BY 1, 2",
    ):
        if (table, rule) not in expected.rules:
            problems.append(
                Finding(
                    "rule-unknown",
                    f"rule {rule} on memstore.{table} is not defined in sql/: it can rewrite"
                    " or swallow statements on the table",
                )
            )
    return problems


# --------------------------------------------------------------------------- owners

_OWNED = """
SELECT 'schema', 'memstore', pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'memstore'
UNION ALL
SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'S' THEN 'sequence'
                      WHEN 'm' THEN 'materialized view' WHEN 'c' THEN 'type' ELSE 'table' END,
       'memstore.' || c.relname, pg_get_userbyid(c.relowner)
FROM pg_class c WHERE c.relnamespace = 'memstore'::regnamespace
  AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_class'::regclass
                  AND e.objid = c.oid AND e.deptype = 'e')
UNION ALL
SELECT 'function', p.oid::regprocedure::text, pg_get_userbyid(p.proowner)
FROM pg_proc p WHERE p.pronamespace = 'memstore'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_proc'::regclass
                  AND e.objid = p.oid AND e.deptype = 'e')
UNION ALL
SELECT 'type', 'memstore.' || t.typname, pg_get_userbyid(t.typowner) FROM pg_type t
WHERE t.typnamespace = 'memstore'::regnamespace AND t.typrelid = 0
  AND NOT EXISTS (SELECT 1 FROM pg_type a WHERE a.typarray = t.oid)
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_type'::regclass
                  AND e.objid = t.oid AND e.deptype = 'e')
"""


def migrating_owner(conn: Connection) -> str | None:
    """The role that ran the migrations: the owner of memstore.alembic_version."""
    row = conn.execute(
        sa.text(
            "SELECT pg_get_userbyid(coalesce("
            " (SELECT relowner FROM pg_class WHERE oid = to_regclass('memstore.alembic_version')),"
            " (SELECT nspowner FROM pg_namespace WHERE nspname = 'memstore')))"
        )
    ).scalar_one_or_none()
    return None if row is None else str(row)


def _object_key(conn: Connection, kind: str, name: str) -> str | None:
    """An object named in sql/ as the catalog queries above name it."""
    if kind in ("FUNCTION", "PROCEDURE", "ROUTINE"):
        found = conn.execute(sa.text("SELECT to_regprocedure(:s)::text"), {"s": name}).scalar()
        return None if found is None else str(found)
    if kind == "SCHEMA":
        return name
    return name if name.startswith("memstore.") else f"memstore.{name}"


def _owner_problems(conn: Connection, expected: Definitions, owner: str | None) -> list[Finding]:
    if owner is None:
        return []
    problems = []
    if owner in (*CONFINED, REDACTOR):
        problems.append(
            Finding(
                "owner-changed",
                f"memstore.alembic_version, and so the schema, is owned by {owner}: the owner"
                " is not confined by row-level security",
            )
        )
    special = {}
    for kind, name, role in expected.owners:
        if (key := _object_key(conn, kind, name)) is not None:
            special[key] = role
    for kind, name, have in _rows(conn, _OWNED):
        want = special.get(str(name), owner)
        if have != want:
            why = "" if str(name) in special else " (the role that ran the migrations)"
            problems.append(
                Finding("owner-changed", f"{kind} {name} is owned by {have}, not {want}{why}")
            )
    return problems


# --------------------------------------------------------------------------- privileges

Entry = tuple[str, str, str, bool]  # (object, grantee, privilege, with grant option)

_LIVE_ACL = """
SELECT CASE c.relkind WHEN 'S' THEN 'sequence' WHEN 'v' THEN 'view'
                      WHEN 'm' THEN 'materialized view' ELSE 'table' END,
       'memstore.' || c.relname, pg_get_userbyid(c.relowner),
       CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type,
       a.is_grantable
FROM pg_class c CROSS JOIN LATERAL aclexplode(coalesce(c.relacl,
     acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner))) a
WHERE c.relnamespace = 'memstore'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_class'::regclass
                  AND e.objid = c.oid AND e.deptype = 'e')
UNION ALL
SELECT 'column', 'memstore.' || c.relname || '.' || t.attname, pg_get_userbyid(c.relowner),
       CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END,
       a.privilege_type, a.is_grantable
FROM pg_attribute t JOIN pg_class c ON c.oid = t.attrelid
CROSS JOIN LATERAL aclexplode(t.attacl) a
WHERE c.relnamespace = 'memstore'::regnamespace AND t.attacl IS NOT NULL
UNION ALL
SELECT 'function', p.oid::regprocedure::text, pg_get_userbyid(p.proowner),
       CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END,
       a.privilege_type, a.is_grantable
FROM pg_proc p CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
WHERE p.pronamespace = 'memstore'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_proc'::regclass
                  AND e.objid = p.oid AND e.deptype = 'e')
UNION ALL
SELECT 'schema', 'memstore', pg_get_userbyid(n.nspowner),
       CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type,
       a.is_grantable
FROM pg_namespace n CROSS JOIN LATERAL aclexplode(coalesce(n.nspacl,
     acldefault('n', n.nspowner))) a
WHERE n.nspname = 'memstore'
"""

_GRANT = re.compile(
    r"GRANT\s+(?P<privs>.+?)\s+ON\s+(?P<target>.+?)\s+TO\s+(?P<who>.+?)"
    r"(?P<option>\s+WITH\s+GRANT\s+OPTION)?(?:\s+GRANTED\s+BY\s+\S+)?$",
    re.I,
)
_REVOKE = re.compile(
    r"REVOKE\s+(?P<option>GRANT\s+OPTION\s+FOR\s+)?(?P<privs>.+?)\s+ON\s+(?P<target>.+?)"
    r"\s+FROM\s+(?P<who>.+?)(?:\s+GRANTED\s+BY\s+\S+)?(?:\s+(?:CASCADE|RESTRICT))?$",
    re.I,
)


def _split_top(text: str) -> list[str]:
    """Comma-separated items, ignoring commas inside parentheses (function signatures)."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if c == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return [item for item in items if item]


@dataclass
class _Catalog:
    """The live objects a GRANT can name, and the privileges ALL means for each class."""

    kinds: dict[str, str]
    """object → class (table, view, sequence, function, schema …)."""
    all_privileges: dict[str, tuple[str, ...]]


class _AclModel:
    """The privileges sql/ and roles.py grant, replayed over the live objects."""

    def __init__(self, conn: Connection, catalog: _Catalog, owner: str | None):
        self.conn = conn
        self.catalog = catalog
        self.owner = owner
        self.entries: set[Entry] = set()

    def targets(self, target: str) -> list[str]:
        words = target.split()
        head = words[0].upper()
        if head == "ALL" and len(words) >= 5:
            kind = words[1].upper()
            if words[-1].lower() != SCHEMA:
                return []
            classes = {
                "TABLES": ("table", "view", "materialized view"),
                "SEQUENCES": ("sequence",),
                "FUNCTIONS": ("function",),
                "ROUTINES": ("function",),
                "PROCEDURES": ("function",),
            }[kind]
            return [o for o, k in self.catalog.kinds.items() if k in classes]
        if head == "SCHEMA":
            return [n for n in _split_top(target[len(words[0]) :]) if n.lower() == SCHEMA]
        if head in ("DATABASE", "TABLESPACE", "LANGUAGE", "FOREIGN", "PARAMETER"):
            return []
        if head in ("FUNCTION", "PROCEDURE", "ROUTINE"):
            out = []
            for signature in _split_top(target[len(words[0]) :]):
                if signature.lower().startswith(f"{SCHEMA}."):
                    key = _object_key(self.conn, "FUNCTION", signature)
                    if key is not None:
                        out.append(key)
            return out
        names = target[len(words[0]) :] if head in ("TABLE", "SEQUENCE") else target
        if head in ("TYPE", "DOMAIN", "LARGE"):
            if f"{SCHEMA}." in target.lower():
                raise ValueError(f"cannot read this grant of roles.py or sql/: ON {target}")
            return []
        return [n for n in _split_top(names) if n.lower().startswith(f"{SCHEMA}.") and "(" not in n]

    def grantees(self, who: str) -> list[str]:
        out = []
        for name in _split_top(who):
            upper = name.upper()
            if upper == "PUBLIC":
                out.append("PUBLIC")
            elif upper in ("CURRENT_USER", "CURRENT_ROLE", "SESSION_USER"):
                out.append(self.owner or "")
            else:
                out.append(name.removeprefix("GROUP ").strip('"'))
        return out

    def privileges(self, privs: str, obj: str) -> list[str]:
        kind = self.catalog.kinds.get(obj)
        if kind is None:
            return []
        if "(" in privs:
            raise ValueError(f"cannot read column privileges in roles.py or sql/: {privs}")
        if privs.upper().startswith("ALL"):
            return list(self.catalog.all_privileges.get(kind, ()))
        return [p.strip().upper() for p in privs.split(",")]

    def apply(self, statement: str) -> None:
        if m := _GRANT.match(statement):
            for obj in self.targets(m.group("target")):
                for privilege in self.privileges(m.group("privs"), obj):
                    for grantee in self.grantees(m.group("who")):
                        self.entries.add((obj, grantee, privilege, bool(m.group("option"))))
        elif m := _REVOKE.match(statement):
            for obj in self.targets(m.group("target")):
                for privilege in self.privileges(m.group("privs"), obj):
                    for grantee in self.grantees(m.group("who")):
                        granted = (obj, grantee, privilege, True)
                        if m.group("option"):  # REVOKE GRANT OPTION FOR: the privilege stays
                            if granted in self.entries:
                                self.entries.discard(granted)
                                self.entries.add((obj, grantee, privilege, False))
                        else:
                            self.entries.discard(granted)
                            self.entries.discard((obj, grantee, privilege, False))


def _existing_roles(conn: Connection) -> dict[str, dict[str, Any]]:
    names = sorted({*roles.ROLES, REDACTOR})
    rows = conn.execute(
        sa.text(
            "SELECT rolname, rolsuper, rolbypassrls, rolcreatedb, rolcreaterole, rolreplication,"
            " rolcanlogin, rolinherit FROM pg_roles WHERE rolname = ANY(:names)"
        ),
        {"names": names},
    ).mappings()
    return {str(r["rolname"]): dict(r) for r in rows}


def _privilege_problems(
    conn: Connection,
    expected: Definitions,
    role_defs: RoleDefinitions,
    functions: Iterable[str],
    owner: str | None,
    existing: dict[str, dict[str, Any]],
) -> list[Finding]:
    live = _rows(conn, _LIVE_ACL)
    kinds = {str(obj): str(kind) for kind, obj, *_ in live if kind != "column"}
    all_privileges = {
        kind: tuple(
            str(p)
            for (p,) in _rows(
                conn,
                'SELECT privilege_type FROM aclexplode(acldefault(CAST(:c AS "char"),'
                " CAST(10 AS oid)))",
                c=code,
            )
        )
        for kind, code in (
            ("table", "r"),
            ("view", "r"),
            ("materialized view", "r"),
            ("sequence", "s"),
            ("function", "f"),
            ("schema", "n"),
        )
    }
    model = _AclModel(conn, _Catalog(kinds, all_privileges), owner)
    # PostgreSQL lets PUBLIC execute a new function; sql/ revokes it where it matters.
    for signature in functions:
        model.entries.add((signature, "PUBLIC", "EXECUTE", False))
    for statement in [*expected.grants, *role_defs.grants]:
        model.apply(statement)

    have: set[Entry] = set()
    objects: dict[str, tuple[str, str]] = {}
    for kind, obj, obj_owner, grantee, privilege, grantable in live:
        objects[str(obj)] = (str(kind), str(obj_owner))
        if grantee in (obj_owner, owner):
            continue  # the owners hold everything anyway
        have.add((str(obj), grantee, str(privilege), bool(grantable)))
    wanted = {e for e in model.entries if e[1] not in ("", owner)}

    problems = []
    for obj, grantee, privilege, grantable in sorted(have - wanted):
        if grantable and (obj, grantee, privilege, False) in wanted:
            what = f"the grant option for {privilege}"
        else:
            what = privilege + (" WITH GRANT OPTION" if grantable else "")
        kind = objects[obj][0]
        target = f"{kind} {obj}" if kind != "schema" else f"schema {obj}"
        if grantee == "PUBLIC":
            problems.append(Finding("public-grant", f"PUBLIC (every role) has {what} on {target}"))
        elif grantee in (*CONFINED, REDACTOR):
            source = "roles.py" if grantee in CONFINED else "sql/"
            problems.append(
                Finding(
                    "role-privilege",
                    f"{grantee} has {what} on {target}, which {source} does not grant",
                )
            )
        else:
            problems.append(
                Finding(
                    "stranger-privilege",
                    f"role {grantee} has {what} on {target}; only memstore's roles should",
                )
            )
    # A missing grant is a finding only where roles were applied to this database:
    # the role exists and may use the schema (roles.py's first grant).
    applied = {
        role for role in CONFINED if role in existing and (SCHEMA, role, "USAGE", False) in have
    }
    for obj, grantee, privilege, _ in sorted(wanted - have):
        if grantee not in applied or obj not in objects or grantee == objects[obj][1]:
            continue
        if (obj, grantee, privilege, True) in have:
            continue
        kind = objects[obj][0]
        problems.append(
            Finding(
                "privilege-missing",
                f"{grantee} lacks {privilege} on {kind} {obj}, which roles.py grants:"
                " run `memstore db roles --apply`",
            )
        )
    return problems


def _default_privilege_problems(conn: Connection, owner: str | None) -> list[Finding]:
    """ALTER DEFAULT PRIVILEGES that would hand the next migration's objects to others."""
    problems = []
    for role, scope, kind, grantee, privilege in _rows(
        conn,
        "SELECT pg_get_userbyid(d.defaclrole),"
        " CASE WHEN d.defaclnamespace = 0 THEN 'every schema' ELSE 'schema memstore' END,"
        " CASE d.defaclobjtype WHEN 'r' THEN 'tables' WHEN 'S' THEN 'sequences'"
        "   WHEN 'f' THEN 'functions' WHEN 'T' THEN 'types' ELSE 'schemas' END,"
        " CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END,"
        " a.privilege_type"
        " FROM pg_default_acl d CROSS JOIN LATERAL aclexplode(d.defaclacl) a"
        " WHERE (d.defaclnamespace = 'memstore'::regnamespace"
        "        OR (d.defaclnamespace = 0 AND pg_get_userbyid(d.defaclrole) = :owner))"
        "   AND a.grantee <> d.defaclrole"
        "   AND NOT (a.grantee = 0 AND d.defaclobjtype = 'f' AND a.privilege_type = 'EXECUTE')"
        "   AND NOT (a.grantee = 0 AND d.defaclobjtype = 'T' AND a.privilege_type = 'USAGE')"
        " ORDER BY 1, 2, 3, 4, 5",
        owner=owner or "",
    ):
        problems.append(
            Finding(
                "default-privilege",
                f"default privileges of role {role} in {scope} give {grantee} {privilege}"
                f" on new {kind}: the next migration's objects would carry it",
            )
        )
    return problems


# --------------------------------------------------------------------------- roles

# Database-wide settings (for every role) that lock the service out.
_LOCKOUT = {
    "default_transaction_read_only": ("on", "true", "yes", "1"),
    "transaction_read_only": ("on", "true", "yes", "1"),
    "row_security": ("off", "false", "no", "0"),
}


def _role_problems(
    conn: Connection, role_defs: RoleDefinitions, existing: dict[str, dict[str, Any]]
) -> list[Finding]:
    problems = []
    for role, wanted in sorted(role_defs.attributes.items()):
        if role not in existing:
            continue
        for column, value in sorted(wanted.items()):
            if existing[role][column] != value:
                word = next(k for k, v in _ATTRIBUTES.items() if v == column)
                have = word if existing[role][column] else f"NO{word}"
                problems.append(
                    Finding(
                        "role-attribute",
                        f"role {role} has {have}; roles.py gives it {'' if value else 'NO'}{word}",
                    )
                )
    modern = int(str(conn.execute(sa.text("SHOW server_version_num")).scalar())) >= 160000
    options = (
        "m.admin_option, m.inherit_option, m.set_option, m.grantor = 10"
        if modern
        else "m.admin_option, true, true, false"
    )
    for role, member, admin, inherit, set_, bootstrap in _rows(
        conn,
        (
            "SELECT r.rolname, u.rolname, {options} FROM pg_auth_members m"
            " JOIN pg_roles r ON r.oid = m.roleid JOIN pg_roles u ON u.oid = m.member"
            " WHERE r.rolname = :redactor OR u.rolname = ANY(:confined) ORDER BY 1, 2"
        ).replace("{options}", options),
        redactor=REDACTOR,
        confined=list(CONFINED),
    ):
        if (role, member) in role_defs.memberships:
            continue
        if role == REDACTOR:
            # PostgreSQL 16+ records who created a role (a CREATEROLE admin on a
            # managed service) as a member WITH ADMIN only, granted by the
            # bootstrap superuser: that member cannot act as the role.
            if bootstrap and admin and not inherit and not set_:
                continue
            problems.append(
                Finding(
                    "redactor-member",
                    f"memstore_redactor is granted to {member}: {member} can blank content"
                    " past the append-only guard",
                )
            )
        else:
            problems.append(
                Finding(
                    "role-membership",
                    f"{member} is a member of {role}: it gains privileges roles.py does not grant",
                )
            )
    for role, database, settings in _rows(
        conn,
        "SELECT coalesce(r.rolname, ''), coalesce(d.datname, '(all databases)'), s.setconfig"
        " FROM pg_db_role_setting s"
        " LEFT JOIN pg_database d ON d.oid = s.setdatabase"
        " LEFT JOIN pg_roles r ON r.oid = s.setrole"
        " WHERE (s.setdatabase = 0 OR d.datname = current_database())"
        "   AND (s.setrole = 0 OR r.rolname = ANY(:confined)) ORDER BY 1, 2",
        confined=list(CONFINED),
    ):
        for setting in settings or []:
            key, _, setting_value = str(setting).partition("=")
            key = key.lower()
            if key == "session_replication_role":
                continue  # reported as replication-role
            if role:
                if key in role_defs.settings.get(role, set()):
                    continue
                problems.append(
                    Finding(
                        "role-setting",
                        f"role {role} has {key} = {setting_value} in database {database}:"
                        " roles.py sets nothing for it, and such settings can lock the service"
                        " out or change what it does",
                    )
                )
            elif setting_value.lower() in _LOCKOUT.get(key, ()):
                problems.append(
                    Finding(
                        "database-setting",
                        f"{key} = {setting_value} is set for every role in database {database}:"
                        " it locks the service out",
                    )
                )
    return problems


# --------------------------------------------------------------------------- entry points


def findings(conn: Connection) -> list[Finding]:
    """Every way the live database differs from sql/, the metadata and roles.py."""
    expected = definitions()
    role_defs = role_definitions()
    owner = migrating_owner(conn)
    existing = _existing_roles(conn)
    functions = _expected_functions(conn, expected)
    signatures = [
        str(s)
        for (s,) in _rows(
            conn,
            "SELECT p.oid::regprocedure::text FROM pg_proc p"
            " WHERE p.pronamespace = 'memstore'::regnamespace"
            " AND (p.proname, pg_get_function_identity_arguments(p.oid))"
            "     IN (SELECT * FROM unnest(CAST(:names AS text[]), CAST(:args AS text[])))",
            names=[name for name, _ in functions],
            args=[args for _, args in functions],
        )
    ]
    return [
        *_trigger_problems(conn, expected),
        *_function_problems(conn, expected, functions),
        *_policy_problems(conn, expected),
        *_view_problems(conn, expected),
        *_structure_problems(conn),
        *_stranger_problems(conn, expected),
        *_owner_problems(conn, expected, owner),
        *_privilege_problems(conn, expected, role_defs, signatures, owner, existing),
        *_default_privilege_problems(conn, owner),
        *_role_problems(conn, role_defs, existing),
    ]


def problems(conn: Connection) -> list[str]:
    """The messages of :func:`findings` (empty when all is well)."""
    return [f.message for f in findings(conn)]


__all__ = [
    "CODES",
    "Definitions",
    "Finding",
    "RoleDefinitions",
    "definitions",
    "findings",
    "migrating_owner",
    "normalised_trigger",
    "problems",
    "role_definitions",
]
