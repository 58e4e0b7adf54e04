"""A comparable snapshot of everything schema ``memstore`` defines."""

from __future__ import annotations

import psycopg

_QUERIES = {
    "columns": """
        SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
               a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated
        FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.relnamespace = 'memstore'::regnamespace AND c.relkind IN ('r', 'v', 'm')
          AND c.relname <> 'alembic_version' AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY 1, 2""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
        FROM pg_constraint
        WHERE connamespace = 'memstore'::regnamespace
          AND conrelid <> coalesce(to_regclass('memstore.alembic_version'), 0)
        ORDER BY 1, 2""",
    "indexes": """
        SELECT c.relname, pg_get_indexdef(i.indexrelid)
        FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
        WHERE c.relnamespace = 'memstore'::regnamespace AND c.relname <> 'alembic_version'
        ORDER BY 2""",
    "triggers": """
        SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid)
        FROM pg_trigger
        WHERE NOT tgisinternal
          AND tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'memstore'::regnamespace)
        ORDER BY 1, 2""",
    "functions": """
        SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid),
               pg_get_userbyid(p.proowner),
               coalesce(p.proacl, acldefault('f', p.proowner))::text
        FROM pg_proc p WHERE p.pronamespace = 'memstore'::regnamespace
        ORDER BY 1""",
    "views": """
        SELECT viewname, definition FROM pg_views WHERE schemaname = 'memstore' ORDER BY 1""",
    "policies": """
        SELECT tablename, policyname, permissive, roles::text, cmd, qual, with_check
        FROM pg_policies WHERE schemaname = 'memstore' ORDER BY 1, 2""",
    "row_security": """
        SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class
        WHERE relnamespace = 'memstore'::regnamespace AND relkind = 'r'
          AND relname <> 'alembic_version'
        ORDER BY 1""",
    "view_options": """
        SELECT relname, reloptions::text FROM pg_class
        WHERE relnamespace = 'memstore'::regnamespace AND relkind = 'v' ORDER BY 1""",
    # NULL means "the default privileges": compare it as what it means.
    "grants": """
        SELECT relname, coalesce(relacl, acldefault('r', relowner))::text FROM pg_class
        WHERE relnamespace = 'memstore'::regnamespace AND relkind IN ('r', 'v', 'm')
          AND relname <> 'alembic_version'
        UNION ALL
        SELECT 'schema memstore', coalesce(nspacl, acldefault('n', nspowner))::text
        FROM pg_namespace WHERE nspname = 'memstore'
        ORDER BY 1""",
}


def snapshot(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Columns, constraints, indexes, triggers, functions, views, policies and grants."""
    with psycopg.connect(url) as conn:
        return {name: conn.execute(query).fetchall() for name, query in _QUERIES.items()}


def table_names(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'memstore'::regnamespace"
            " AND relkind = 'r'"
        ).fetchall()
    return {row[0] for row in rows}
