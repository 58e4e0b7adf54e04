"""Confirmations: an append-only table of later observations that confirmed a memory.

memstore.confirmations holds (namespace_id, id, node_id, at); a node's
last_confirmed_at is its newest row's time, read through ix_confirmations_node.
Append-only triggers, the transaction-time stamp and the namespace policy are
a frozen copy of sql/11_confirmations.sql at this revision.

Revision ID: 0024
Revises: 0021
Create Date: 2026-12-03

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | Sequence[str] | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/11_confirmations.sql
CONFIRMATIONS_SQL = r"""
-- Confirmations: a later observation that confirmed a memory (docs/recall.md,
-- "Confirmation"). A row says "node N was observed again at T"; a node's
-- last_confirmed_at is its newest row's time. They are written by
-- ns.confirm(node_id) and by ns.remember of content the namespace already holds
-- as a current memory.
--
-- Append-only like the other truth tables: a confirmation is never changed or
-- removed. It holds no caller's words (no reason, actor or source), so an
-- erasure has nothing to blank here: what is erased is the node's content.
-- Its time is transaction time, set by the database (sql/09), never the caller.

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.confirmations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'confirmations are append-only: confirm the memory again');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.confirmations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'confirmations are append-only: confirm the memory again');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.confirmations
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'confirmations are append-only: confirm the memory again');

CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.confirmations
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_at();

-- Row-level security as for every table (sql/07_row_security.sql).
ALTER TABLE memstore.confirmations ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.confirmations
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);
"""


def upgrade() -> None:
    op.create_table(
        "confirmations",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column(
            "at", sa.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id", "node_id"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_confirmations_node_id",
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_confirmations"),
        schema="memstore",
    )
    op.create_index(
        "ix_confirmations_node",
        "confirmations",
        ["namespace_id", "node_id", sa.text("at DESC")],
        schema="memstore",
    )
    op.execute(CONFIRMATIONS_SQL)


def downgrade() -> None:
    op.drop_table("confirmations", schema="memstore")
