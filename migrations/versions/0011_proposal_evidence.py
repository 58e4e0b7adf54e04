"""Proposals keep their evidence: what a reviewer needs to decide.

The lifecycle law (docs/lifecycle.md) queues writes that need review as
proposals; each carries the anchors it rests on. The decision guard on
proposals compares whole rows, so the new column is frozen like the others.

Revision ID: 0011
Revises: 0008
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "proposals",
        sa.Column("evidence", JSONB, nullable=False, server_default=sa.text("'[]'::jsonb")),
        schema="memstore",
    )


def downgrade() -> None:
    op.drop_column("proposals", "evidence", schema="memstore")
