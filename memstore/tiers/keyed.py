"""Keyed entries: one current memory per key in a tier of the caller's choosing.

The shape a framework's key-value store expects (LangGraph's ``BaseStore``,
docs/integrations.md), kept with memstore's semantics: a new value for a key
is a revision (the old one stays, superseded), a delete is a tombstone, and
every version stays readable through :meth:`KeyedEntries.history`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from memstore.errors import InvalidInputError
from memstore.graph import keyed
from memstore.graph.content import checked_content, checked_data
from memstore.graph.keyed import MAX_KEYS, DataCondition
from memstore.inputs import checked_reason, validated
from memstore.law.policy import LIFECYCLE_TIERS, POLICY
from memstore.models import Kind, MemoryInput, Node, RowId, ShortText
from memstore.tiers.common import TIERS, lock_key, remember_fresh

if TYPE_CHECKING:
    from memstore.namespace import Namespace

Key = Annotated[str, Field(min_length=1, max_length=1000)]
# The most entries one list call returns.
MAX_LIST = 10_000


class EntryInput(BaseModel):
    """What :meth:`KeyedEntries.put` accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: Key
    content: str
    data: dict[str, Any]
    kind: Kind = "semantic"
    node_type: Annotated[str, Field(min_length=1, max_length=64)] = "Entry"
    observed_at: AwareDatetime | None = None


class ListRequest(BaseModel):
    """What :meth:`KeyedEntries.all` accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    where: tuple[DataCondition, ...] = ()
    limit: int = Field(default=10, ge=0, le=MAX_LIST)
    offset: int = Field(default=0, ge=0)
    ids: Annotated[list[RowId], Field(max_length=MAX_LIST)] | None = None


class TierName(BaseModel):
    """A keyed profile's tier, as :meth:`Namespace.keyed` accepts it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tier: ShortText


def checked_tier(tier: object) -> str:
    """A tier name a keyed profile may use: not one of memstore's own tiers (their entries
    have their own rules) and not a lifecycle record's."""
    name = validated(TierName, tier=tier).tier
    if name in TIERS or name in LIFECYCLE_TIERS or name == POLICY:
        raise InvalidInputError(
            f"tier {name!r} belongs to memstore; keyed entries need a tier of their own",
            field="tier",
        )
    return name


class KeyedEntries:
    """``ns.keyed(tier)``: the current memory of each key of ``tier``.

    An entry is a node with the key as its label, ``content`` as the text that
    recall searches, and the caller's ``data``. Putting a key again revises its
    current entry (or writes nothing when content and data are the same);
    :meth:`forget` writes a tombstone.
    """

    def __init__(self, ns: Namespace, tier: str):
        self.ns = ns
        self.tier = checked_tier(tier)

    def put(
        self,
        key: str,
        content: str,
        *,
        data: Mapping[str, Any],
        kind: Kind = "semantic",
        node_type: str = "Entry",
        observed_at: datetime | None = None,
        reason: str = "a new value for the key",
    ) -> Node:
        """Set ``key`` to ``content`` and ``data``; returns its current entry.

        A key without a current entry gets a new memory (``observed_at`` is
        when it was first put); a key with one is revised (``observed_at``
        carried over), unless it already holds this content and data.
        """
        checked_data(data, limit=self.ns.settings.max_data_bytes)
        given = validated(
            EntryInput,
            key=key,
            content=content,
            data=dict(data) if isinstance(data, Mapping) else data,
            kind=kind,
            node_type=node_type,
            observed_at=observed_at,
        )
        reason = checked_reason(reason)
        item = validated(
            MemoryInput,
            content=given.content,
            kind=given.kind,
            node_type=given.node_type,
            tier=self.tier,
            label=given.key,
            data=given.data,
            observed_at=given.observed_at,
            dedupe_key=f"{self.tier}\x1f{given.key}",
        )
        text = checked_content(item.content, limit=self.ns.settings.max_content_bytes)
        # The vector of a new key, computed before the key is locked so the lock is held
        # for the statements alone (a revision of an existing key embeds its own).
        vector = self.ns.vectors([item], [text])
        with self.ns.transaction() as tx:
            # Two concurrent puts of one key: the second waits, then revises the first's.
            lock_key(tx, self.tier, given.key)
            current = keyed.current_by_labels(tx.conn, tx.id, tx.name, self.tier, [given.key])
            old = current.get(given.key)
            if old is None:
                return remember_fresh(tx, item, vector=vector)
            if old.content == given.content and old.data == given.data:
                return old
            return tx.revise(
                old.id,
                given.content,
                reason=reason,
                data=given.data,
                # Versions may repeat an earlier value: each is its own node.
                dedupe_key=f"{self.tier}\x1f{given.key}\x1f{old.id}",
            )

    def forget(self, key: str, *, reason: str = "deleted") -> int | None:
        """Tombstone the current entry of ``key``; its id, or None when it has none."""
        key = validated(EntryInput, key=key, content="-", data={}).key
        reason = checked_reason(reason)
        if not self.ns.exists():
            return None  # nothing written yet: no namespace to create for a no-op
        with self.ns.transaction() as tx:
            lock_key(tx, self.tier, key)
            current = keyed.current_by_labels(tx.conn, tx.id, tx.name, self.tier, [key])
            if key not in current:
                return None
            return tx.forget(current[key].id, reason=reason)

    def get(self, keys: Sequence[str], *, privacy_ceiling: int | None = None) -> dict[str, Node]:
        """The current entry of each of ``keys`` that has one, by key (one statement)."""
        if isinstance(keys, str) or not isinstance(keys, Sequence):
            raise InvalidInputError("keys must be a list of texts", field="keys")
        if len(keys) > MAX_KEYS:
            raise InvalidInputError(f"at most {MAX_KEYS} keys at once", field="keys")
        checked = [validated(EntryInput, key=key, content="-", data={}).key for key in keys]
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return keyed.current_by_labels(tx.conn, tx.id, tx.name, self.tier, checked)

    def all(
        self,
        *,
        where: Sequence[DataCondition | Mapping[str, Any]] = (),
        limit: int = 10,
        offset: int = 0,
        ids: Sequence[int] | None = None,
        privacy_ceiling: int | None = None,
    ) -> list[Node]:
        """Current entries whose data meet every condition of ``where`` (among the node
        ``ids`` when given: say, a recall's hits), the latest written first, from
        ``offset`` on, at most ``limit``."""
        request = validated(
            ListRequest,
            where=tuple(where),
            limit=limit,
            offset=offset,
            ids=None if ids is None else list(ids),
        )
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return keyed.list_current(
                tx.conn,
                tx.id,
                tx.name,
                self.tier,
                request.where,
                limit=request.limit,
                offset=request.offset,
                ids=request.ids,
            )

    def history(self, key: str, *, privacy_ceiling: int | None = None) -> list[Node]:
        """Every version ``key`` has had, oldest first, with its status (also the versions
        of a deleted key, and of earlier lives of a key deleted and put again)."""
        key = validated(EntryInput, key=key, content="-", data={}).key
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return keyed.versions_by_label(tx.conn, tx.id, tx.name, self.tier, key)
