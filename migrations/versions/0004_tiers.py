"""Memory tiers: indexes to find a tier's entry by key and its newest entries.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_nodes_tier_label",
        "nodes",
        ["namespace_id", "tier", "label"],
        schema="memstore",
        postgresql_where=sa.text("tier IS NOT NULL"),
    )
    op.create_index(
        "ix_nodes_tier_observed",
        "nodes",
        ["namespace_id", "tier", sa.text("observed_at DESC")],
        schema="memstore",
        postgresql_where=sa.text("tier IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_nodes_tier_observed", table_name="nodes", schema="memstore")
    op.drop_index("ix_nodes_tier_label", table_name="nodes", schema="memstore")
