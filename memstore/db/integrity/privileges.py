"""Privileges from sql/ and roles.py: nobody holds more than they grant; the confined no less.

The grants sql/ makes, then the SQL :func:`memstore.db.roles.roles_sql` runs,
replayed (statement by statement, REVOKE included, :mod:`.acl`) over the live
objects give every privilege a role other than the owner may hold. PUBLIC
keeps only the EXECUTE PostgreSQL gives on functions sql/ does not revoke;
anything more — for PUBLIC, the memstore roles or any other role, column
privileges and grant options included — is a finding, and so is a privilege
roles.py grants that ``memstore_app`` or ``memstore_reader`` lacks, once roles
were applied to this database. No ``ALTER DEFAULT PRIVILEGES`` (in schema
memstore, or of the migrating role) hands the next migration's objects to
others.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.engine import Connection

from memstore.db.integrity.acl import AclModel, Catalog, Entry
from memstore.db.integrity.catalog import rows
from memstore.db.integrity.codes import Finding
from memstore.db.integrity.definitions import CONFINED, REDACTOR, Definitions, RoleDefinitions
from memstore.db.schema import SCHEMA

_LIVE_ACL = """
SELECT CASE c.relkind WHEN 'S' THEN 'sequence' WHEN 'v' THEN 'view'
                      WHEN 'm' THEN 'materialized view' ELSE 'table' END,
       'memstore.' || c.relname, pg_get_userbyid(c.relowner),
       CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type,
       a.is_grantable
FROM pg_class c CROSS JOIN LATERAL aclexplode(coalesce(c.relacl,
     acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner))) a
WHERE c.relnamespace = 'memstore'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
  AND NOT EXISTS (SELECT 1 FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
                  WHERE e.classid = 'pg_class'::regclass AND e.objid = c.oid AND e.deptype = 'e'
                  AND x.extname = 'vector' AND x.extnamespace = c.relnamespace)
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
  AND NOT EXISTS (SELECT 1 FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
                  WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid AND e.deptype = 'e'
                  AND x.extname = 'vector' AND x.extnamespace = p.pronamespace)
UNION ALL
SELECT 'schema', 'memstore', pg_get_userbyid(n.nspowner),
       CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type,
       a.is_grantable
FROM pg_namespace n CROSS JOIN LATERAL aclexplode(coalesce(n.nspacl,
     acldefault('n', n.nspowner))) a
WHERE n.nspname = 'memstore'
"""

Objects = dict[str, tuple[str, str]]
"""Live object → (its class, its owner)."""


def privilege_problems(
    conn: Connection,
    expected: Definitions,
    role_defs: RoleDefinitions,
    functions: Iterable[str],
    owner: str | None,
    existing: dict[str, dict[str, Any]],
) -> list[Finding]:
    """Privileges beyond what sql/ and roles.py grant, then those roles.py grants and are missing.

    ``functions`` are the live signatures of sql/'s functions (PUBLIC may
    execute them unless sql/ revokes it); ``existing`` the memstore roles that
    exist, by name.
    """
    live = rows(conn, _LIVE_ACL)
    kinds = {str(obj): str(kind) for kind, obj, *_ in live if kind != "column"}
    model = AclModel(conn, Catalog(kinds, _all_privileges(conn)), owner)
    # PostgreSQL lets PUBLIC execute a new function; sql/ revokes it where it matters.
    for signature in functions:
        model.entries.add((signature, "PUBLIC", "EXECUTE", False))
    for statement in [*expected.grants, *role_defs.grants]:
        model.apply(statement)

    have: set[Entry] = set()
    objects: Objects = {}
    for kind, obj, obj_owner, grantee, privilege, grantable in live:
        objects[str(obj)] = (str(kind), str(obj_owner))
        if grantee in (obj_owner, owner):
            continue  # the owners hold everything anyway
        have.add((str(obj), grantee, str(privilege), bool(grantable)))
    wanted = {e for e in model.entries if e[1] not in ("", owner)}
    return [*_excess(have - wanted, wanted, objects), *_missing(have, wanted, objects, existing)]


def _all_privileges(conn: Connection) -> dict[str, tuple[str, ...]]:
    """What ``GRANT ALL`` means for each class of object, as this server defines it."""
    return {
        kind: tuple(
            str(p)
            for (p,) in rows(
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


def _excess(excess: set[Entry], wanted: set[Entry], objects: Objects) -> list[Finding]:
    """A finding for each privilege held that sql/ and roles.py do not grant, by who holds it."""
    problems = []
    for obj, grantee, privilege, grantable in sorted(excess):
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
    return problems


def _missing(
    have: set[Entry], wanted: set[Entry], objects: Objects, existing: dict[str, dict[str, Any]]
) -> list[Finding]:
    """A finding for each privilege roles.py grants that a confined role lacks."""
    # A missing grant is a finding only where roles were applied to this database:
    # the role exists and may use the schema (roles.py's first grant).
    applied = {
        role for role in CONFINED if role in existing and (SCHEMA, role, "USAGE", False) in have
    }
    problems = []
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


def default_privilege_problems(conn: Connection, owner: str | None) -> list[Finding]:
    """ALTER DEFAULT PRIVILEGES that would hand the next migration's objects to others."""
    problems = []
    for role, scope, kind, grantee, privilege in rows(
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


__all__ = ["default_privilege_problems", "privilege_problems"]
