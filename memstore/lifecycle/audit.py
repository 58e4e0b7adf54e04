"""Writing the audit log: ``memstore.operations`` rows, through memstore's own function.

The service role has no INSERT on ``memstore.operations``; it records rows
through ``memstore.record_operations`` (sql/09_transaction_time.sql), a
SECURITY DEFINER function that writes them into the namespace the transaction
declared, stamped with the transaction's time (docs/security.md, "Time").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

# The keys record_operations reads from each row; any other key is ignored.
ROW_KEYS = ("batch_id", "op", "phase", "actor", "outcome", "reason", "payload", "receipt")


def write_operations(
    conn: sa.Connection, namespace_id: int, rows: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Record ``rows`` (dicts with :data:`ROW_KEYS`) in one call; their ids, in order."""
    if not rows:
        return []
    given = [{key: row.get(key) for key in ROW_KEYS} for row in rows]
    found = conn.execute(
        sa.select(
            sa.func.memstore.record_operations(
                namespace_id, sa.cast(sa.literal(given, JSONB), JSONB)
            )
        )
    ).scalars()
    return [int(i) for i in found]


__all__ = ["ROW_KEYS", "write_operations"]
