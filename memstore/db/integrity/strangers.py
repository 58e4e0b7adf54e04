"""Strangers: every object in schema memstore is one sql/ or the metadata defines.

Tables, views, sequences, functions, procedures, aggregates, types, operators,
operator classes, collations, text-search objects, statistics, extensions —
and every rule on its tables (a rule can rewrite or swallow statements). The
only sequences expected are the identity sequences of the metadata's identity
columns. No object in schema memstore may be a member of an extension, except
vector's own when vector itself was created there: the other checks skip only
those, so ``ALTER EXTENSION … ADD`` hides nothing. The
HNSW indexes memstore builds per embedding model at run time are expected
(see :mod:`memstore.db.integrity.structure`); functions are checked in
:mod:`memstore.db.integrity.functions`.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from memstore.db.integrity.catalog import rows
from memstore.db.integrity.codes import Finding
from memstore.db.integrity.definitions import Definitions
from memstore.db.schema import metadata

_OBJECTS = """
SELECT CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'TABLE' WHEN 'v' THEN 'VIEW'
                      WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'
                      WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TYPE' END,
       'memstore.' || c.relname,
       (SELECT t.relname || '.' || a.attname FROM pg_depend d
        JOIN pg_class t ON t.oid = d.refobjid
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
        WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'i'
          AND d.refclassid = 'pg_class'::regclass AND t.relnamespace = c.relnamespace
          AND a.attidentity <> '' LIMIT 1)
FROM pg_class c
WHERE c.relnamespace = 'memstore'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
  AND NOT EXISTS (SELECT 1 FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
                WHERE e.classid = 'pg_class'::regclass AND e.objid = c.oid AND e.deptype = 'e'
                AND x.extname = 'vector' AND x.extnamespace = c.relnamespace)
UNION ALL
SELECT 'TYPE', 'memstore.' || t.typname, NULL FROM pg_type t
WHERE t.typnamespace = 'memstore'::regnamespace AND t.typrelid = 0
  AND NOT EXISTS (SELECT 1 FROM pg_type a WHERE a.typarray = t.oid)
  AND NOT EXISTS (SELECT 1 FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
                WHERE e.classid = 'pg_type'::regclass AND e.objid = t.oid AND e.deptype = 'e'
                AND x.extname = 'vector' AND x.extnamespace = t.typnamespace)
UNION ALL
SELECT 'OPERATOR', o.oid::regoperator::text, NULL FROM pg_operator o
WHERE o.oprnamespace = 'memstore'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
                WHERE e.classid = 'pg_operator'::regclass AND e.objid = o.oid AND e.deptype = 'e'
                AND x.extname = 'vector' AND x.extnamespace = o.oprnamespace)
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

# Members of an extension in schema memstore. The only extension memstore
# installs is vector (migration 0001, wherever the migrating role's search_path
# puts it: usually public); its own objects are expected, and skipped by the
# other checks, only when it was created in schema memstore itself. Anything
# else joined to an extension (ALTER EXTENSION … ADD) hides from those checks.
_MEMBERS = """
SELECT o.type, o.identity, x.extname::text
FROM pg_depend e JOIN pg_extension x ON x.oid = e.refobjid
CROSS JOIN LATERAL pg_identify_object(e.classid, e.objid, e.objsubid) o
WHERE e.deptype = 'e' AND e.refclassid = 'pg_extension'::regclass AND o.schema = 'memstore'
  AND NOT (x.extname = 'vector' AND x.extnamespace = 'memstore'::regnamespace)
ORDER BY 1, 2
"""


def stranger_problems(conn: Connection, expected: Definitions) -> list[Finding]:
    """Objects and rules in schema memstore that neither sql/ nor the metadata define."""
    tables = {t.name for t in metadata.sorted_tables} | {"alembic_version"}
    known = {("TABLE", f"memstore.{t}") for t in tables}
    known |= {("VIEW", f"memstore.{v}") for v in expected.views}
    known |= {(kind, f"memstore.{name}") for kind, name in expected.objects}
    # Migration 0001 creates pgvector wherever the migrating role's search_path
    # puts it (usually public): in schema memstore it is expected too.
    known.add(("EXTENSION", "vector"))
    # The identity sequences of the metadata's identity columns, and no other:
    # a sequence merely OWNED BY one of our columns is a stranger.
    identities = {
        f"{t.name}.{c.name}" for t in metadata.sorted_tables for c in t.columns if c.identity
    }
    problems = []
    for kind, name, identity_of in rows(conn, _OBJECTS):
        if (kind, name) in known or (kind == "SEQUENCE" and identity_of in identities):
            continue
        problems.append(
            Finding(
                "object-unknown",
                f"{kind.lower()} {name} is not defined in sql/ or the metadata",
            )
        )
    for kind, name, extension in rows(conn, _MEMBERS):
        problems.append(
            Finding(
                "extension-member",
                f"{kind} {name} is a member of extension {extension}: no extension memstore"
                " installs puts it in schema memstore, and the other checks skip extension"
                " members",
            )
        )
    for table, rule in rows(
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


__all__ = ["stranger_problems"]
