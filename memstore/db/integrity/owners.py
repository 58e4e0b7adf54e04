"""Owners: everything in schema memstore is owned by the role that ran the migrations.

That role is the owner of ``memstore.alembic_version``; the exceptions are
what sql/ hands to another role with ``ALTER … OWNER TO`` (``redact_node`` →
``memstore_redactor``). The migrating role is not one of the confined roles:
an owner is not confined by row-level security.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.integrity.catalog import object_key, rows
from memstore.db.integrity.codes import Finding
from memstore.db.integrity.definitions import CONFINED, REDACTOR, Definitions

_OWNED = """
SELECT 'schema', 'memstore', pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'memstore'
UNION ALL
SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'S' THEN 'sequence'
                      WHEN 'm' THEN 'materialized view' WHEN 'c' THEN 'type' ELSE 'table' END,
       'memstore.' || c.relname, pg_get_userbyid(c.relowner)
FROM pg_class c WHERE c.relnamespace = 'memstore'::regnamespace
  AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
  AND NOT EXISTS (SELECT 1 FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
                  WHERE e.classid = 'pg_class'::regclass AND e.objid = c.oid AND e.deptype = 'e'
                  AND x.extname = 'vector' AND x.extnamespace = c.relnamespace)
UNION ALL
SELECT 'function', p.oid::regprocedure::text, pg_get_userbyid(p.proowner)
FROM pg_proc p WHERE p.pronamespace = 'memstore'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
                  WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid AND e.deptype = 'e'
                  AND x.extname = 'vector' AND x.extnamespace = p.pronamespace)
UNION ALL
SELECT 'type', 'memstore.' || t.typname, pg_get_userbyid(t.typowner) FROM pg_type t
WHERE t.typnamespace = 'memstore'::regnamespace AND t.typrelid = 0
  AND NOT EXISTS (SELECT 1 FROM pg_type a WHERE a.typarray = t.oid)
  AND NOT EXISTS (SELECT 1 FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
                  WHERE e.classid = 'pg_type'::regclass AND e.objid = t.oid AND e.deptype = 'e'
                  AND x.extname = 'vector' AND x.extnamespace = t.typnamespace)
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


def owner_problems(conn: Connection, expected: Definitions, owner: str | None) -> list[Finding]:
    """Objects owned by another role than ``owner`` (:func:`migrating_owner`) or sql/ gives."""
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
        if (key := object_key(conn, kind, name)) is not None:
            special[key] = role
    for kind, name, have in rows(conn, _OWNED):
        want = special.get(str(name), owner)
        if have != want:
            why = "" if str(name) in special else " (the role that ran the migrations)"
            problems.append(
                Finding("owner-changed", f"{kind} {name} is owned by {have}, not {want}{why}")
            )
    return problems


__all__ = ["migrating_owner", "owner_problems"]
