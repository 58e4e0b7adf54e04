"""The privileges sql/ and roles.py grant, replayed statement by statement over the live objects.

PostgreSQL applies GRANT and REVOKE in order — a schema-wide grant, then a
narrower REVOKE, then a REVOKE of the grant option only — and so does
:class:`AclModel`: what is left in :attr:`AclModel.entries` is every privilege
a role other than the owner may hold. It reads the forms roles.py and sql/
write; a grant on memstore it cannot model (column privileges, ``ON TYPE
memstore.…``) raises :class:`ValueError` rather than pass unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from memstore.db.integrity.catalog import object_key
from memstore.db.schema import SCHEMA

Entry = tuple[str, str, str, bool]
"""(object, grantee, privilege, with grant option)."""

_GRANT = re.compile(
    r"GRANT\s+(?P<privs>.+?)\s+ON\s+(?P<target>.+?)\s+TO\s+(?P<who>.+?)"
    r"(?P<option>\s+WITH\s+GRANT\s+OPTION)?(?:\s+GRANTED\s+BY\s+\S+)?$",
    re.I,
)
_REVOKE = re.compile(
    r"REVOKE\s+(?P<option>GRANT\s+OPTION\s+FOR\s+)?(?P<privs>.+?)\s+ON\s+(?P<target>.+?)"
    r"\s+FROM\s+(?P<who>.+?)(?:\s+GRANTED\s+BY\s+\S+)?(?:\s+(?:CASCADE|RESTRICT))?$",
    re.I,
)


def split_top(text: str) -> list[str]:
    """Comma-separated items, ignoring commas inside parentheses (function signatures)."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if c == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return [item for item in items if item]


@dataclass
class Catalog:
    """The live objects a GRANT can name, and the privileges ALL means for each class."""

    kinds: dict[str, str]
    """object → class (table, view, sequence, function, schema …)."""
    all_privileges: dict[str, tuple[str, ...]]


class AclModel:
    """The privileges sql/ and roles.py grant, replayed over the live objects."""

    def __init__(self, conn: Connection, catalog: Catalog, owner: str | None):
        self.conn = conn
        self.catalog = catalog
        self.owner = owner
        self.entries: set[Entry] = set()

    def targets(self, target: str) -> list[str]:
        """The live objects a GRANT's ``ON …`` names (none outside schema memstore)."""
        words = target.split()
        head = words[0].upper()
        if head == "ALL" and len(words) >= 5:
            kind = words[1].upper()
            if words[-1].lower() != SCHEMA:
                return []
            classes = {
                "TABLES": ("table", "view", "materialized view"),
                "SEQUENCES": ("sequence",),
                "FUNCTIONS": ("function",),
                "ROUTINES": ("function",),
                "PROCEDURES": ("function",),
            }[kind]
            return [o for o, k in self.catalog.kinds.items() if k in classes]
        if head == "SCHEMA":
            return [n for n in split_top(target[len(words[0]) :]) if n.lower() == SCHEMA]
        if head in ("DATABASE", "TABLESPACE", "LANGUAGE", "FOREIGN", "PARAMETER"):
            return []
        if head in ("FUNCTION", "PROCEDURE", "ROUTINE"):
            out = []
            for signature in split_top(target[len(words[0]) :]):
                if signature.lower().startswith(f"{SCHEMA}."):
                    key = object_key(self.conn, "FUNCTION", signature)
                    if key is not None:
                        out.append(key)
            return out
        names = target[len(words[0]) :] if head in ("TABLE", "SEQUENCE") else target
        if head in ("TYPE", "DOMAIN", "LARGE"):
            if f"{SCHEMA}." in target.lower():
                raise ValueError(f"cannot read this grant of roles.py or sql/: ON {target}")
            return []
        return [n for n in split_top(names) if n.lower().startswith(f"{SCHEMA}.") and "(" not in n]

    def grantees(self, who: str) -> list[str]:
        """The roles a GRANT's ``TO …`` names (CURRENT_USER and the like: the owner)."""
        out = []
        for name in split_top(who):
            upper = name.upper()
            if upper == "PUBLIC":
                out.append("PUBLIC")
            elif upper in ("CURRENT_USER", "CURRENT_ROLE", "SESSION_USER"):
                out.append(self.owner or "")
            else:
                out.append(name.removeprefix("GROUP ").strip('"'))
        return out

    def privileges(self, privs: str, obj: str) -> list[str]:
        """The privileges a GRANT's list names on ``obj`` (ALL: every one of its class)."""
        kind = self.catalog.kinds.get(obj)
        if kind is None:
            return []
        if "(" in privs:
            raise ValueError(f"cannot read column privileges in roles.py or sql/: {privs}")
        if privs.upper().startswith("ALL"):
            return list(self.catalog.all_privileges.get(kind, ()))
        return [p.strip().upper() for p in privs.split(",")]

    def apply(self, statement: str) -> None:
        """Replay one GRANT or REVOKE on :attr:`entries`, as the server would."""
        if m := _GRANT.match(statement):
            for obj, grantee, privilege in self._each(m):
                self.entries.add((obj, grantee, privilege, bool(m.group("option"))))
        elif m := _REVOKE.match(statement):
            for obj, grantee, privilege in self._each(m):
                granted = (obj, grantee, privilege, True)
                if m.group("option"):  # REVOKE GRANT OPTION FOR: the privilege stays
                    if granted in self.entries:
                        self.entries.discard(granted)
                        self.entries.add((obj, grantee, privilege, False))
                else:
                    self.entries.discard(granted)
                    self.entries.discard((obj, grantee, privilege, False))

    def _each(self, m: re.Match[str]) -> Iterator[tuple[str, str, str]]:
        """(object, grantee, privilege) for every combination a statement names."""
        for obj in self.targets(m.group("target")):
            for privilege in self.privileges(m.group("privs"), obj):
                for grantee in self.grantees(m.group("who")):
                    yield obj, grantee, privilege


__all__ = ["AclModel", "Catalog", "Entry", "split_top"]
