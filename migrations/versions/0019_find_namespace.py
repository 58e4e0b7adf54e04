"""memstore.find_namespace(name): a namespace's id without creating it.

Reads of a namespace nobody has written to must leave nothing behind (issue
17 §8), so the service looks a name up with this function and calls
memstore.open_namespace only inside a namespace's first write transaction. A
confined role cannot read the namespaces table, hence SECURITY DEFINER, like
open_namespace: it answers only for a name the caller already knows.

A frozen copy of the function as sql/07_row_security.sql defines it at this
revision.

Revision ID: 0019
Revises: 0016
Create Date: 2026-12-02

"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/07_row_security.sql: find_namespace()
FIND_NAMESPACE_SQL = r"""
CREATE OR REPLACE FUNCTION memstore.find_namespace(p_name text)
RETURNS bigint
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ns.id FROM memstore.namespaces ns WHERE ns.name = p_name;
$$;

REVOKE ALL ON FUNCTION memstore.find_namespace(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.find_namespace(text) TO CURRENT_USER;
"""


def upgrade() -> None:
    op.execute(FIND_NAMESPACE_SQL)


def downgrade() -> None:
    op.execute("DROP FUNCTION memstore.find_namespace(text)")
