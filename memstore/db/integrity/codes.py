"""What ``memstore db check`` can find: the stable codes and the finding that carries one.

Each code is short and never changes meaning; docs/security.md says what each
means and what to do, and a test keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

CODES: dict[str, str] = {
    "trigger-missing": "a trigger sql/ creates is gone",
    "trigger-disabled": "a trigger sql/ creates is disabled or fires only for replicas",
    "trigger-changed": "a trigger's definition differs from sql/",
    "trigger-unknown": "a trigger sql/ does not define sits on a memstore table",
    "replication-role": "session_replication_role = replica (which silences triggers) is set for"
    " the database or a role",
    "session-replication-role": "the checking session itself runs with"
    " session_replication_role = replica",
    "function-missing": "a function sql/ defines is gone (or has other argument types)",
    "function-body": "a function's body differs from sql/",
    "function-security": "a function is SECURITY DEFINER when sql/ says invoker, or the reverse",
    "function-config": "a function's SET options differ from sql/ (e.g. its search_path was reset)",
    "function-changed": "a function's arguments, result, language, volatility, strictness,"
    " LEAKPROOF, parallel safety or cost differ from sql/",
    "function-unknown": "a function, procedure or aggregate sql/ does not define is in schema"
    " memstore",
    "rls-disabled": "row-level security is off on a memstore table",
    "rls-unexpected": "a table has row-level security that sql/ does not enable",
    "policy-missing": "a policy sql/ creates is gone",
    "policy-changed": "a policy's command, roles or expressions differ from sql/",
    "policy-unknown": "a policy sql/ does not create is on a memstore table",
    "view-missing": "a view sql/ creates is gone",
    "view-invoker": "a view is no longer security_invoker",
    "view-changed": "a view's query differs from sql/",
    "table-missing": "a table of the metadata is gone",
    "table-changed": "a table is UNLOGGED, or inherits or is inherited from",
    "column-missing": "a column of the metadata is gone",
    "column-unknown": "a table has a column the metadata does not define",
    "column-changed": "a column's type, default, identity or generation differs from the metadata",
    "not-null-dropped": "a column the metadata declares NOT NULL accepts NULL",
    "constraint-missing": "a primary key, foreign key, unique or check constraint is gone",
    "constraint-changed": "a constraint differs from the metadata (definition, NOT VALID,"
    " deferrable)",
    "constraint-unknown": "a table has a constraint the metadata does not define",
    "constraint-disabled": "the triggers that enforce a foreign key are disabled",
    "sequence-changed": "an identity sequence's increment, bounds, cycling or type differ from"
    " the metadata",
    "index-missing": "an index of the metadata is gone",
    "index-changed": "an index differs from the metadata, or is invalid",
    "index-unknown": "an index neither the metadata nor an embedding model's HNSW index",
    "object-unknown": "a table, view, sequence, type, operator or other object sql/ and the"
    " metadata do not define is in schema memstore",
    "extension-member": "an object in schema memstore belongs to an extension (ALTER EXTENSION"
    " … ADD) that memstore did not install there",
    "rule-unknown": "a rule (which can rewrite or swallow statements) is on a memstore table",
    "owner-changed": "an object is owned by another role than the one sql/ and the migrations"
    " give it",
    "public-grant": "PUBLIC holds a privilege on a memstore object",
    "role-privilege": "memstore_app, memstore_reader or memstore_redactor holds a privilege"
    " roles.py (or sql/) does not grant",
    "stranger-privilege": "a role other than memstore's holds a privilege on a memstore object",
    "privilege-missing": "memstore_app or memstore_reader lacks a privilege roles.py grants",
    "default-privilege": "ALTER DEFAULT PRIVILEGES (in schema memstore, or of the migrating role)"
    " would grant the next migration's objects to others",
    "role-attribute": "a memstore role has an attribute roles.py does not give it (SUPERUSER,"
    " BYPASSRLS, LOGIN …)",
    "role-membership": "memstore_app or memstore_reader is a member of another role",
    "redactor-member": "memstore_redactor is granted to a role other than memstore_owner",
    "role-setting": "a per-role setting on memstore_app or memstore_reader",
    "database-setting": "a setting for the whole database (or every role) locks the service out",
}


@dataclass(frozen=True)
class Finding:
    """One way the live database differs from what memstore defines."""

    code: str
    """A stable short name from :data:`CODES`."""
    message: str
    """A sentence naming the object."""

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def differences(
    have: Sequence[Any], want: Sequence[Any], labels: Sequence[str], *, start: int, source: str
) -> list[str]:
    """``label live (source: expected)`` for each labelled value, from ``start``, that differs."""
    return [
        f"{label} {have[i]!s} ({source}: {want[i]!s})"
        for i, label in enumerate(labels, start=start)
        if have[i] != want[i]
    ]


__all__ = ["CODES", "Finding", "differences"]
