"""Proposals keep their evidence: what a reviewer needs to decide.

The lifecycle law (docs/lifecycle.md) queues writes that need review as
proposals; each carries the anchors it rests on. The decision guard on
proposals compares whole rows, so the new column is frozen like the others.
v_review_queue gains the operation's name and the evidence (new columns go
last: CREATE OR REPLACE VIEW may only append).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REVIEW_QUEUE = """
CREATE OR REPLACE VIEW memstore.v_review_queue WITH (security_invoker = true) AS
SELECT p.namespace_id, p.id AS proposal_id, p.status, p.operation, p.rationale,
       p.proposed_by, p.proposed_at, p.decided_by, p.decided_at, p.decision_reason,
       CASE WHEN p.status = 'pending' THEN now() - p.proposed_at END AS waiting,
       row_number() OVER (PARTITION BY p.namespace_id
                          ORDER BY p.status <> 'pending', p.decided_at DESC NULLS FIRST,
                                   p.proposed_at, p.id) AS queue_position{extra}
FROM memstore.proposals p;
"""
NEW_COLUMNS = """,
       p.operation ->> 'op' AS op,
       p.evidence"""


def upgrade() -> None:
    op.add_column(
        "proposals",
        sa.Column("evidence", JSONB, nullable=False, server_default=sa.text("'[]'::jsonb")),
        schema="memstore",
    )
    op.execute(REVIEW_QUEUE.format(extra=NEW_COLUMNS))


def downgrade() -> None:
    op.execute("DROP VIEW memstore.v_review_queue")
    op.execute(REVIEW_QUEUE.format(extra=""))
    op.drop_column("proposals", "evidence", schema="memstore")
