"""Tier indexes in the exact order tiers are read: newest first, undated last, then by id.

ix_nodes_tier_observed was (observed_at DESC), which PostgreSQL orders NULLS
FIRST; the reads order NULLS LAST, so the index went unused and the whole tier
was read and sorted (110-200 ms for 94k turns). A second index serves one
session's turns.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NEWEST_FIRST = [sa.text("observed_at DESC NULLS LAST"), sa.text("id DESC")]
TIERED = sa.text("tier IS NOT NULL")


def upgrade() -> None:
    op.drop_index("ix_nodes_tier_observed", table_name="nodes", schema="memstore")
    op.create_index(
        "ix_nodes_tier_observed",
        "nodes",
        ["namespace_id", "tier", *NEWEST_FIRST],
        schema="memstore",
        postgresql_where=TIERED,
    )
    op.create_index(
        "ix_nodes_tier_scope_observed",
        "nodes",
        ["namespace_id", "tier", "scope", *NEWEST_FIRST],
        schema="memstore",
        postgresql_where=TIERED,
    )


def downgrade() -> None:
    op.drop_index("ix_nodes_tier_scope_observed", table_name="nodes", schema="memstore")
    op.drop_index("ix_nodes_tier_observed", table_name="nodes", schema="memstore")
    op.create_index(
        "ix_nodes_tier_observed",
        "nodes",
        ["namespace_id", "tier", sa.text("observed_at DESC")],
        schema="memstore",
        postgresql_where=TIERED,
    )
