"""Structure from the metadata (memstore/db/schema.py): tables, columns, constraints, indexes.

The tables are built in ``pg_temp`` in a rolled-back savepoint and their
columns (type, NOT NULL, default, identity), constraints (primary keys,
foreign keys, checks, unique, validated, deferrable) and indexes compared with
the live ones, and the identity sequences' bounds; the triggers that enforce
foreign keys are enabled; tables are logged and take part in no inheritance.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from memstore.db.integrity.catalog import LIVE, SCRATCH, rows, scratch
from memstore.db.integrity.codes import Finding, differences
from memstore.db.schema import SCHEMA, metadata

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
Structure = dict[str, list[tuple[Any, ...]]]
"""Part of _STRUCTURE → its rows."""
Keyed = dict[tuple[str, ...], tuple[Any, ...]]
"""An object's key (table, name …) → the rest of its row."""


def _structure(conn: Connection, namespace: str) -> Structure:
    return {part: rows(conn, q.replace("{ns}", namespace)) for part, q in _STRUCTURE.items()}


def _expected_structure(conn: Connection) -> Structure:
    """The metadata's tables as the server builds them: in pg_temp, rolled back."""
    with scratch(conn):
        conn.execution_options(schema_translate_map={SCHEMA: "pg_temp"})
        try:
            metadata.create_all(conn, checkfirst=False)
        finally:
            conn.execution_options(schema_translate_map=None)
        return _structure(conn, SCRATCH)


def _runtime_index(table: str, unique: bool, method: str, partial: bool) -> bool:
    """An embedding model's HNSW index, which memstore builds at run time (embedding/cache.py)."""
    return table == "embeddings" and method == "hnsw" and not unique and partial


def _keyed(found: list[tuple[Any, ...]], tables: set[str], width: int, table_at: int = 0) -> Keyed:
    """The rows of the metadata's tables, by their first ``width`` columns."""
    return {
        tuple(str(v) for v in r[:width]): r[width:] for r in found if str(r[table_at]) in tables
    }


def structure_problems(conn: Connection) -> list[Finding]:
    """Every way the tables differ from the metadata, table by table and part by part."""
    want = _expected_structure(conn)
    have = _structure(conn, LIVE)
    tables = {str(t) for t, _ in want["tables"]}
    live_tables = {str(t): str(p) for t, p in have["tables"]}
    problems: list[Finding] = []
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
    return [
        *problems,
        *_column_problems(
            _keyed(want["columns"], tables, 2), _keyed(have["columns"], tables, 2), live_tables
        ),
        *_constraint_problems(
            _keyed(want["constraints"], tables, 2),
            _keyed(have["constraints"], tables, 2),
            live_tables,
        ),
        *_disabled_constraints(conn),
        *_index_problems(
            _keyed(want["indexes"], tables, 1, 1),
            _keyed(have["indexes"], tables, 1, 1),
            live_tables,
        ),
        *_sequence_problems(
            _keyed(want["sequences"], tables, 1, 1), _keyed(have["sequences"], tables, 1, 1)
        ),
        *_inheritance_problems(conn),
    ]


def _column_problems(want: Keyed, have: Keyed, live_tables: dict[str, str]) -> list[Finding]:
    problems = []
    labels = ("type", "not null", "default", "identity", "generated")
    for key in sorted(want):
        name = f"column memstore.{key[0]}.{key[1]}"
        if key[0] not in live_tables:
            continue
        if key not in have:
            problems.append(Finding("column-missing", f"{name} is missing"))
            continue
        w, h = want[key], have[key]
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
    for key in sorted(set(have) - set(want)):
        problems.append(
            Finding(
                "column-unknown",
                f"column memstore.{key[0]}.{key[1]} is not defined in the metadata",
            )
        )
    return problems


def _constraint_problems(want: Keyed, have: Keyed, live_tables: dict[str, str]) -> list[Finding]:
    problems = []
    for key in sorted(want):
        name = f"constraint {key[1]} on memstore.{key[0]}"
        if key[0] not in live_tables:
            continue
        if key not in have:
            problems.append(Finding("constraint-missing", f"{name} is missing ({want[key][1]})"))
            continue
        (wtype, wdef, wvalid, wdefer, wdeferred) = want[key]
        (htype, hdef, hvalid, hdefer, hdeferred) = have[key]
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
    for key in sorted(set(have) - set(want)):
        problems.append(
            Finding(
                "constraint-unknown",
                f"constraint {key[1]} on memstore.{key[0]} is not defined in the metadata:"
                f" {have[key][1]}",
            )
        )
    return problems


def _disabled_constraints(conn: Connection) -> list[Finding]:
    """Foreign keys whose enforcing triggers were disabled (the constraint stays, unenforced)."""
    problems = []
    for table, constraint, enabled in rows(
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
    return problems


def _index_problems(want: Keyed, have: Keyed, live_tables: dict[str, str]) -> list[Finding]:
    problems = []
    for (index,), (table, definition, *_) in sorted(want.items()):
        if table not in live_tables:
            continue
        if (index,) not in have:
            problems.append(
                Finding("index-missing", f"index memstore.{index} is missing ({definition})")
            )
            continue
        h_table, h_definition, h_valid, *_ = have[(index,)]
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
    for (index,), (table, definition, _, unique, method, partial) in sorted(have.items()):
        if (index,) in want or _runtime_index(str(table), unique, str(method), partial):
            continue
        problems.append(
            Finding(
                "index-unknown",
                f"index memstore.{index} is not defined in the metadata: {definition}",
            )
        )
    return problems


def _sequence_problems(want: Keyed, have: Keyed) -> list[Finding]:
    problems = []
    labels = ("increment", "minimum", "maximum", "cycle", "type")
    for (column,), wanted_sequence in sorted(want.items()):
        live_sequence = have.get((column,))
        if live_sequence is None:
            continue  # the column's own comparison names a lost identity
        changed = differences(live_sequence, wanted_sequence, labels, start=1, source="metadata")
        if changed:
            problems.append(
                Finding(
                    "sequence-changed",
                    f"the identity sequence of memstore.{column} differs: {'; '.join(changed)}",
                )
            )
    return problems


def _inheritance_problems(conn: Connection) -> list[Finding]:
    problems = []
    for child, parent in rows(
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


__all__ = ["structure_problems"]
