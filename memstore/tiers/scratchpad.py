"""The scratchpad: pinned facts by key; a new value supersedes the old, history kept."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field

from memstore.errors import EntryNotFoundError
from memstore.graph.entries import count_current, current_entries
from memstore.inputs import checked_reason, checked_tags, validated
from memstore.models import MemoryInput, Node
from memstore.tiers.common import (
    SCRATCHPAD,
    lock_key,
    remember_fresh,
)

if TYPE_CHECKING:
    from memstore.services.scope import Scope

PIN = "Pin"


class PinKey(BaseModel):
    """A pin's key, as every scratchpad verb accepts it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: Annotated[str, Field(min_length=1, max_length=200)]


class PinInput(PinKey):
    """What :meth:`Scratchpad.pin` accepts."""

    value: Annotated[str, Field(min_length=1)]


class Scratchpad:
    """``ns.scratchpad``: working facts the agent keeps in view (node type ``Pin``).

    A pin is a node with the key as its label, ``"key: value"`` as content and
    ``{"key", "value"}`` as data. Pinning a key again revises its current pin
    (the old value stays, superseded); unpinning writes a tombstone.
    """

    def __init__(self, ns: Scope):
        self.ns = ns

    def pin(self, key: str, value: str, *, tags: Sequence[str] | None = None) -> Node:
        """Set ``key`` to ``value``; returns the current pin (the same one if the value is).

        ``tags`` (docs/recall.md, "Tags"): the pin's; None keeps the current pin's tags.
        """
        given = validated(PinInput, key=key, value=value)
        wanted = None if tags is None else checked_tags(tags)
        with self.ns.transaction() as tx:
            # Two concurrent pins of one key: the second waits, then revises the first's.
            lock_key(tx, SCRATCHPAD, given.key)
            current = current_entries(tx.conn, self.ns, SCRATCHPAD, label=given.key, limit=1)
            content = f"{given.key}: {given.value}"
            if not current:
                return remember_fresh(
                    tx,
                    validated(
                        MemoryInput,
                        content=content,
                        kind="working",
                        node_type=PIN,
                        tier=SCRATCHPAD,
                        label=given.key,
                        data={"key": given.key, "value": given.value},
                        tags=wanted,
                    ),
                )
            retag = {} if wanted is None else {"tags": wanted}
            if current[0].data.get("value") == given.value and wanted in (None, current[0].tags):
                return current[0]
            return tx.revise(
                current[0].id,
                content,
                reason=f"pinned a new value for {given.key!r}",
                data={"key": given.key, "value": given.value},
                # Versions may repeat an earlier value: each is its own node.
                dedupe_key=f"pin\x1f{given.key}\x1f{current[0].id}",
                **retag,
            )

    def unpin(self, key: str, *, reason: str = "unpinned") -> int:
        """Retire the pin of ``key`` (a tombstone); returns the tombstone's id."""
        key = validated(PinKey, key=key).key
        reason = checked_reason(reason)
        with self.ns.transaction() as tx:
            lock_key(tx, SCRATCHPAD, key)
            current = current_entries(tx.conn, self.ns, SCRATCHPAD, label=key, limit=1)
            if not current:
                raise EntryNotFoundError(
                    f"no pin {key!r} in namespace {self.ns.name!r}",
                    namespace=self.ns.name,
                    tier=SCRATCHPAD,
                    key=key,
                )
            return tx.forget(current[0].id, reason=reason)

    def get(self, key: str, *, privacy_ceiling: int | None = None) -> Node | None:
        """The current pin of ``key``, or None (also for a pin above ``privacy_ceiling``)."""
        key = validated(PinKey, key=key).key
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            found = current_entries(tx.conn, self.ns, SCRATCHPAD, label=key, limit=1)
        return found[0] if found else None

    def history(self, key: str, *, privacy_ceiling: int | None = None) -> list[Node]:
        """Every value ``key`` has had, oldest first (of its current or last pin), up to
        ``privacy_ceiling`` (default: the store's)."""
        key = validated(PinKey, key=key).key
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            found = current_entries(tx.conn, self.ns, SCRATCHPAD, label=key, limit=1)
            return tx.lineage(found[0].id) if found else []

    def all(self, *, privacy_ceiling: int | None = None) -> list[Node]:
        """Every current pin up to ``privacy_ceiling`` (default: the store's), by key."""
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            pins = current_entries(tx.conn, self.ns, SCRATCHPAD)
        return sorted(pins, key=lambda node: node.label or "")

    def count(self, *, privacy_ceiling: int | None = None) -> int:
        """How many keys are pinned (pins up to ``privacy_ceiling``)."""
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return count_current(tx.conn, self.ns, SCRATCHPAD)
