"""Citus readiness (DESIGN.md §8), statically: every statement filters on namespace_id in
every table reference, and every key carries namespace_id."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import ForeignKeyConstraint, PrimaryKeyConstraint, UniqueConstraint

import memstore
from memstore.db.schema import KEY_TABLES, metadata
from tests.citus import (
    ALLOWED_UNFILTERED,
    Statement,
    named_query_statements,
    python_text_statements,
    sql_file_statements,
    violations,
)

PACKAGE = Path(memstore.__file__).parent


def _everything() -> list[Statement]:
    return [
        *sql_file_statements(),
        *named_query_statements(PACKAGE),
        *python_text_statements(PACKAGE),
    ]


def test_the_walk_finds_our_sql():
    sources = {s.source.split(" ")[0].split(":")[0] for s in _everything()}
    assert {"sql/05_neighbourhood.sql", "sql/06_views.sql", "sql/02_lineage.sql"} <= sources
    assert {"memstore/recall/recall.sql", "memstore/activation/learning.sql"} <= sources
    assert "memstore/graph/lineage.py" in sources and "memstore/graph/census.py" in sources
    views = [s for s in _everything() if s.view]
    assert len(views) == 11


def test_every_table_reference_has_its_namespace_condition():
    found = [str(v) for s in _everything() for v in violations(s.text, s.source, view=s.view)]
    assert found == []


@pytest.mark.parametrize(
    ("sql", "view"),
    [
        ("SELECT n.id FROM memstore.nodes n WHERE n.id = 1", False),
        # A filter on another table, or inside a subquery, does not count.
        (
            "SELECT e.id FROM memstore.edges e JOIN memstore.nodes n ON n.id = e.src"
            " WHERE n.namespace_id = 1",
            False,
        ),
        (
            "SELECT n.id FROM memstore.nodes n WHERE EXISTS (SELECT 1 FROM memstore.tombstones t"
            " WHERE t.namespace_id = 1 AND t.node_id = n.id)",
            False,
        ),
        (
            "SELECT n.id FROM memstore.nodes n WHERE n.namespace_id = 1 AND EXISTS"
            " (SELECT 1 FROM memstore.tombstones t WHERE t.node_id = n.id)",
            False,
        ),
        # Both terms of a recursive CTE.
        (
            "WITH RECURSIVE c(id) AS (SELECT 1 UNION SELECT s.new_id FROM memstore.supersessions s"
            " JOIN c ON s.old_id = c.id) SELECT id FROM c",
            False,
        ),
        ("INSERT INTO memstore.edges (src, dst) VALUES (1, 2)", False),
        ("UPDATE memstore.edge_state SET hebbian_weight = 0 WHERE edge_id = 3", False),
        ("SELECT n.id FROM memstore.nodes n WHERE n.label = 'n.namespace_id = 1'", False),
        ("SELECT n.id FROM memstore.nodes n -- n.namespace_id = 1\n WHERE true", False),
        ("SELECT count(*) FROM memstore.nodes WHERE other_namespace_id = 1", False),
        # A view must at least expose the namespace to the caller's filter.
        ("SELECT a.node_id, count(*) FROM memstore.activations a GROUP BY a.node_id", True),
    ],
)
def test_the_walk_catches_a_missing_condition(sql, view):
    assert violations(sql, "example", view=view) != []


@pytest.mark.parametrize(
    ("sql", "view"),
    [
        ("SELECT count(*) FROM memstore.nodes WHERE memstore.nodes.namespace_id = %(x)s", False),
        ("SELECT count(*) FROM memstore.nodes WHERE namespace_id = :ns", False),
        ("INSERT INTO memstore.edges (namespace_id, src, dst) VALUES (1, 2, 3)", False),
        ("SELECT a.namespace_id, count(*) FROM memstore.activations a GROUP BY 1", True),
        ("SELECT ns.id FROM memstore.namespaces ns WHERE ns.name = 'x'", False),
    ],
)
def test_the_walk_accepts_a_condition(sql, view):
    assert violations(sql, "example", view=view) == []


def test_only_the_reference_tables_are_allowed_without_a_filter():
    assert ALLOWED_UNFILTERED == {"namespaces", *KEY_TABLES}


def _keys():
    for table in metadata.sorted_tables:
        for constraint in table.constraints:
            if isinstance(constraint, PrimaryKeyConstraint | UniqueConstraint):
                yield table.name, constraint.name, [c.name for c in constraint.columns], None
            elif isinstance(constraint, ForeignKeyConstraint):
                referred = [e.column.name for e in constraint.elements]
                yield table.name, constraint.name, [c.name for c in constraint.columns], referred
        for index in table.indexes:
            if index.unique:
                yield table.name, index.name, [c.name for c in index.columns], None


def test_every_key_carries_namespace_id_first():
    wrong = []
    for table, name, columns, referred in _keys():
        if table == "namespaces" or table in KEY_TABLES:
            # The reference tables: the namespace's id *is* the namespace id;
            # its name is unique across namespaces by definition; an API key
            # may serve many namespaces (a prefix), so it belongs to none.
            continue
        if columns[0] != "namespace_id":
            wrong.append(name)
        # A foreign key: namespace_id in the same (first) position on both
        # sides, or the single column that references the namespace itself.
        if referred is not None and referred != ["id"] and referred[0] != "namespace_id":
            wrong.append(name)
    assert wrong == []


def test_no_foreign_key_cascades_or_sets_null():
    for table in metadata.sorted_tables:
        for fk in table.foreign_key_constraints:
            assert fk.ondelete is None and fk.onupdate is None, fk.name


def test_settings_are_set_by_literal_set_local_never_set_config():
    """Citus forwards SET LOCAL to its workers (row-level policies, HNSW scans), not
    set_config(): no statement of the package or of sql/ sets a setting that way."""
    calling = re.compile(r"(?i)\bselect\s+(pg_catalog\.)?set_config\s*\(")
    sources = [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.sql"), *Path("sql").glob("*.sql")]
    offenders = [str(path) for path in sources if calling.search(path.read_text())]
    assert not offenders
    assert calling.search("SELECT set_config(s.name, s.value, true) FROM unnest(...)")
