"""What an owner who bypasses memstore's append-only triggers can do, for the tests
that prove the store still answers correctly afterwards."""

from __future__ import annotations

import sqlalchemy as sa

from memstore import MemoryStore


def rename_namespace(store: MemoryStore, old: str, new: str) -> None:
    """Rename a namespace, which the append-only trigger refuses, with the trigger off."""
    with store.transaction() as conn:
        conn.exec_driver_sql("ALTER TABLE memstore.namespaces DISABLE TRIGGER no_update")
        conn.execute(
            sa.text("UPDATE memstore.namespaces SET name = :new WHERE name = :old"),
            {"new": new, "old": old},
        )
        conn.exec_driver_sql("ALTER TABLE memstore.namespaces ENABLE TRIGGER no_update")
