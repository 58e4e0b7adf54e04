"""Roles from roles.py: the attributes it sets, the memberships it grants, no settings.

``NOSUPERUSER``, ``NOBYPASSRLS``, ``NOLOGIN`` for ``memstore_redactor`` …;
``memstore_redactor`` granted only to ``memstore_owner``, the confined roles
members of nothing; no per-role settings on the confined roles
(``statement_timeout``, ``default_transaction_read_only``, ``search_path`` …)
and no database-wide setting that locks the service out.

Roles that do not exist are not checked: a deployment that never ran
``memstore db roles`` has no ``memstore_app`` to misconfigure.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db import roles
from memstore.db.integrity.catalog import rows
from memstore.db.integrity.codes import Finding
from memstore.db.integrity.definitions import ATTRIBUTES, CONFINED, REDACTOR, RoleDefinitions


def existing_roles(conn: Connection) -> dict[str, dict[str, Any]]:
    """The memstore roles that exist, by name: their pg_roles attributes."""
    names = sorted({*roles.ROLES, REDACTOR})
    found = conn.execute(
        sa.text(
            "SELECT rolname, rolsuper, rolbypassrls, rolcreatedb, rolcreaterole, rolreplication,"
            " rolcanlogin, rolinherit FROM pg_roles WHERE rolname = ANY(:names)"
        ),
        {"names": names},
    ).mappings()
    return {str(r["rolname"]): dict(r) for r in found}


# Database-wide settings (for every role) that lock the service out.
_LOCKOUT = {
    "default_transaction_read_only": ("on", "true", "yes", "1"),
    "transaction_read_only": ("on", "true", "yes", "1"),
    "row_security": ("off", "false", "no", "0"),
}


def role_problems(
    conn: Connection, role_defs: RoleDefinitions, existing: dict[str, dict[str, Any]]
) -> list[Finding]:
    """Role attributes, memberships and settings roles.py does not give."""
    return [
        *_attribute_problems(role_defs, existing),
        *_membership_problems(conn, role_defs),
        *_setting_problems(conn, role_defs),
    ]


def _attribute_problems(
    role_defs: RoleDefinitions, existing: dict[str, dict[str, Any]]
) -> list[Finding]:
    problems = []
    for role, wanted in sorted(role_defs.attributes.items()):
        if role not in existing:
            continue
        for column, value in sorted(wanted.items()):
            if existing[role][column] != value:
                word = next(k for k, v in ATTRIBUTES.items() if v == column)
                have = word if existing[role][column] else f"NO{word}"
                problems.append(
                    Finding(
                        "role-attribute",
                        f"role {role} has {have}; roles.py gives it {'' if value else 'NO'}{word}",
                    )
                )
    return problems


def _membership_problems(conn: Connection, role_defs: RoleDefinitions) -> list[Finding]:
    problems = []
    modern = int(str(conn.execute(sa.text("SHOW server_version_num")).scalar())) >= 160000
    options = (
        "m.admin_option, m.inherit_option, m.set_option, m.grantor = 10"
        if modern
        else "m.admin_option, true, true, false"
    )
    for role, member, admin, inherit, set_, bootstrap in rows(
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
    return problems


def _settings_of(conn: Connection, roles: list[str]) -> list[tuple[Any, ...]]:
    """(role or '', database or '(all databases)', settings) of every ``ALTER ROLE/DATABASE
    ... SET`` that applies in this database to every role or to one of ``roles``."""
    return rows(
        conn,
        "SELECT coalesce(r.rolname, ''), coalesce(d.datname, '(all databases)'), s.setconfig"
        " FROM pg_db_role_setting s"
        " LEFT JOIN pg_database d ON d.oid = s.setdatabase"
        " LEFT JOIN pg_roles r ON r.oid = s.setrole"
        " WHERE (s.setdatabase = 0 OR d.datname = current_database())"
        "   AND (s.setrole = 0 OR r.rolname = ANY(:roles)) ORDER BY 1, 2",
        roles=roles,
    )


def _setting_problems(conn: Connection, role_defs: RoleDefinitions) -> list[Finding]:
    problems = []
    for role, database, settings in _settings_of(conn, list(CONFINED)):
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


def shadowing_schemas(search_path: str) -> list[str]:
    """The schemas a ``search_path`` value searches before ``pg_catalog``.

    PostgreSQL searches ``pg_catalog`` first unless the path names it; named after
    another schema, a function or operator planted there (``current_setting``,
    ``=`` on bigint) stands in for the built-in in every statement that does not
    qualify it — memstore's own statements among them.

    >>> shadowing_schemas('evil, pg_catalog, public'), shadowing_schemas('"$user", public')
    (['evil'], [])
    """
    names = [part.strip().strip('"') for part in search_path.split(",") if part.strip()]
    if "pg_catalog" not in names:
        return []
    return names[: names.index("pg_catalog")]


def search_path_problems(conn: Connection, owner: str | None) -> list[Finding]:
    """A ``search_path`` that puts a schema before ``pg_catalog`` for the whole database,
    every role, the migrating role (the owner, whom the embedded default and a
    superuser deploy run the service as) or the checking session. The confined roles'
    own settings are ``role-setting`` findings already."""
    problems = []
    for role, database, settings in _settings_of(conn, [owner] if owner else []):
        for setting in settings or []:
            key, _, value = str(setting).partition("=")
            before = shadowing_schemas(value) if key.lower() == "search_path" else []
            if before:
                who = f"role {role}" if role else "every role"
                problems.append(_shadowing(f"for {who} in database {database}", value, before))
    (session,) = rows(conn, "SELECT current_setting('search_path')")
    before = shadowing_schemas(str(session[0]))
    if before and not problems:  # else the session has it from a setting just reported
        problems.append(_shadowing("in the checking session", str(session[0]), before))
    return problems


def _shadowing(where: str, value: str, before: list[str]) -> Finding:
    return Finding(
        "database-setting",
        f"search_path = {value} is set {where}: {', '.join(before)} is searched before"
        " pg_catalog, so a function or operator there stands in for a built-in in the"
        " service's statements (its privacy and namespace filters included)",
    )


__all__ = ["existing_roles", "role_problems", "search_path_problems", "shadowing_schemas"]
