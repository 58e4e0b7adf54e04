"""Spreading activation: heaviest-first edge indexes, learned edges by end, version lookups.

- ix_edges_out / ix_edges_in are rebuilt ordered by weight (heaviest first), so
  a neighbourhood pull stops reading a node's edges at the fan-out cap.
- edge_state gains copies of its edge's ends, and partial indexes over learned
  (hebbian_weight > 0) edges by end: a pull finds a node's learned edges
  without reading all of its edges. Existing rows are backfilled from edges.
- memstore.current_version / memstore.earlier_versions: a frozen copy of
  sql/04_versions.sql as it was at this revision.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/04_versions.sql
VERSIONS_SQL = r"""
-- Version lookups for reads that follow supersession (spreading activation).
-- Edges stay on the version they were authored on; a read treats the edges of
-- every earlier version as the current version's, and an edge into an old
-- version as leading to the current one (docs/activation.md).
--
-- Both take as_of: a supersession recorded after it does not count, so an
-- as-of read sees the lineage the store knew then. Callers guard the call with
-- an index probe (does the node have a successor / a predecessor?), so the
-- common case of a never-revised node costs no function call.

CREATE OR REPLACE FUNCTION memstore.current_version(
    ns bigint, node bigint, as_of timestamptz DEFAULT NULL
) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    -- A node is superseded at most once and never into a cycle (02_lineage.sql),
    -- so the chain forward is a simple path.
    WITH RECURSIVE chain(id, step) AS (
        SELECT node, 0
        UNION ALL
        SELECT s.new_id, c.step + 1
        FROM memstore.supersessions s
        JOIN chain c ON s.old_id = c.id
        WHERE s.namespace_id = ns AND (as_of IS NULL OR s.at <= as_of)
    )
    SELECT id FROM chain ORDER BY step DESC LIMIT 1
$$;

CREATE OR REPLACE FUNCTION memstore.earlier_versions(
    ns bigint, node bigint, as_of timestamptz DEFAULT NULL
) RETURNS SETOF bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    -- Every version that led to this one (a merge has several predecessors).
    WITH RECURSIVE back(id) AS (
        SELECT s.old_id
        FROM memstore.supersessions s
        WHERE s.namespace_id = ns AND s.new_id = node AND (as_of IS NULL OR s.at <= as_of)
        UNION
        SELECT s.old_id
        FROM memstore.supersessions s
        JOIN back b ON s.new_id = b.id
        WHERE s.namespace_id = ns AND (as_of IS NULL OR s.at <= as_of)
    )
    SELECT id FROM back
$$;
"""


def _edge_indexes(
    out_columns: list[str | sa.TextClause],
    in_columns: list[str | sa.TextClause],
    out_include: list[str],
    in_include: list[str],
) -> None:
    op.drop_index("ix_edges_out", table_name="edges", schema="memstore")
    op.drop_index("ix_edges_in", table_name="edges", schema="memstore")
    op.create_index(
        "ix_edges_out", "edges", out_columns, schema="memstore", postgresql_include=out_include
    )
    op.create_index(
        "ix_edges_in", "edges", in_columns, schema="memstore", postgresql_include=in_include
    )


def upgrade() -> None:
    _edge_indexes(
        ["namespace_id", "src", sa.text("weight DESC"), "id"],
        ["namespace_id", "dst", sa.text("weight DESC"), "id"],
        ["dst", "relation", "inhibitory"],
        ["src", "relation", "inhibitory"],
    )
    op.add_column("edge_state", sa.Column("src", sa.BigInteger(), nullable=True), schema="memstore")
    op.add_column("edge_state", sa.Column("dst", sa.BigInteger(), nullable=True), schema="memstore")
    op.execute(
        "UPDATE memstore.edge_state s SET src = e.src, dst = e.dst FROM memstore.edges e"
        " WHERE e.namespace_id = s.namespace_id AND e.id = s.edge_id"
    )
    op.alter_column("edge_state", "src", nullable=False, schema="memstore")
    op.alter_column("edge_state", "dst", nullable=False, schema="memstore")
    for name, column in (("ix_edge_state_learned_out", "src"), ("ix_edge_state_learned_in", "dst")):
        op.create_index(
            name,
            "edge_state",
            ["namespace_id", column],
            schema="memstore",
            postgresql_include=["edge_id"],
            postgresql_where=sa.text("hebbian_weight > 0"),
        )
    op.execute(VERSIONS_SQL)


def downgrade() -> None:
    op.execute("DROP FUNCTION memstore.earlier_versions(bigint, bigint, timestamptz)")
    op.execute("DROP FUNCTION memstore.current_version(bigint, bigint, timestamptz)")
    op.drop_index("ix_edge_state_learned_in", table_name="edge_state", schema="memstore")
    op.drop_index("ix_edge_state_learned_out", table_name="edge_state", schema="memstore")
    op.drop_column("edge_state", "dst", schema="memstore")
    op.drop_column("edge_state", "src", schema="memstore")
    _edge_indexes(
        ["namespace_id", "src"],
        ["namespace_id", "dst"],
        ["dst", "weight", "relation", "inhibitory"],
        ["src", "weight", "relation", "inhibitory"],
    )
