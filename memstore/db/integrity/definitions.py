"""What memstore defines, read from its one source: the statements of sql/ and of roles.py.

Nothing here touches a database. :func:`parse_sql` reads the guards, grants,
owners and other objects out of sql/'s statements; :func:`role_definitions`
reads the roles' attributes, memberships, settings and grants out of the SQL
:func:`memstore.db.roles.roles_sql` produces. The checks compare the live
catalog with these, never with a copy kept here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memstore.db import roles
from memstore.db.sqlfiles import mask_quoted, split_statements

TRIGGER_HEAD = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+(\w+)\s.*?\sON\s+memstore\.(\w+)\s", re.S
)
FUNCTION_HEAD = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)\s+memstore\.(\w+)\s*\(", re.S | re.I
)
POLICY_HEAD = re.compile(r"CREATE\s+POLICY\s+(\w+)\s+ON\s+memstore\.(\w+)\s", re.S)
VIEW_HEAD = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+memstore\.(\w+)\s", re.S | re.I)
_RLS = re.compile(r"ALTER\s+TABLE\s+memstore\.(\w+)\s+ENABLE\s+ROW\s+LEVEL\s+SECURITY", re.S)
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
_DOLLAR = re.compile(r"\$[A-Za-z_]*\$")

REDACTOR = "memstore_redactor"
"""The NOLOGIN owner of ``memstore.redact_node`` (sql/03_redaction.sql)."""
CONFINED = (roles.APP, roles.READER)
"""The roles row-level security confines; they hold only what roles.py grants."""


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


def _dollar_body(statement: str) -> str:
    """The first dollar-quoted body of a statement ('' for a BEGIN ATOMIC body)."""
    if (m := _DOLLAR.search(statement)) is None:
        return ""
    start = m.end()
    return statement[start : statement.index(m.group(), start)]


def _words(statement: str) -> str:
    return re.sub(r"\s+", " ", statement).strip()


def parse_sql(paths: Iterable[Path]) -> Definitions:
    """Parse the guards out of the given sql/ files (:func:`memstore.db.integrity.definitions`)."""
    found = Definitions()
    for path in paths:
        for statement in split_statements(path.read_text()):
            bare = mask_quoted(statement)
            if m := TRIGGER_HEAD.match(bare):
                found.triggers[(m.group(2), m.group(1))] = statement
            elif m := FUNCTION_HEAD.match(bare):
                header = bare[: m2.start()] if (m2 := _DOLLAR.search(bare)) else bare
                definer = "SECURITY DEFINER" in header
                found.functions[m.group(2)] = (_dollar_body(statement), definer)
                found.routines.append(statement)
            elif m := POLICY_HEAD.match(bare):
                found.policies[(m.group(2), m.group(1))] = statement
            elif m := _RLS.match(bare):
                found.row_security.add(m.group(1))
            elif m := VIEW_HEAD.match(bare):
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


ATTRIBUTES = {
    "SUPERUSER": "rolsuper",
    "BYPASSRLS": "rolbypassrls",
    "CREATEDB": "rolcreatedb",
    "CREATEROLE": "rolcreaterole",
    "REPLICATION": "rolreplication",
    "LOGIN": "rolcanlogin",
    "INHERIT": "rolinherit",
}
"""A role attribute's keyword in ``ALTER ROLE`` → its pg_roles column."""
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
                name = word[2:] if word.startswith("NO") and word[2:] in ATTRIBUTES else word
                if name in ATTRIBUTES:
                    found.attributes.setdefault(role, {})[ATTRIBUTES[name]] = value
        elif re.match(r"(GRANT|REVOKE)\s.*\sON\s", bare, re.I):
            found.grants.append(text)
        elif m := _MEMBERSHIP.match(bare):
            for role in re.split(r"\s*,\s*", m.group(1)):
                for member in re.split(r"\s*,\s*", m.group(2)):
                    found.memberships.add((role, member))
    return found


__all__ = [
    "ATTRIBUTES",
    "CONFINED",
    "FUNCTION_HEAD",
    "POLICY_HEAD",
    "REDACTOR",
    "TRIGGER_HEAD",
    "VIEW_HEAD",
    "Definitions",
    "RoleDefinitions",
    "parse_sql",
    "role_definitions",
]
