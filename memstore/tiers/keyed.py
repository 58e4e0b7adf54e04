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
from memstore.tiers.common import TIERS, remember_fresh

if TYPE_CHECKING:
    from memstore.services.scope import Scope
    from memstore.tx import NamespaceTransaction

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

    def __init__(self, ns: Scope, tier: str):
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
        entry: dict[str, Any] = {"key": key, "content": content, "data": data, "kind": kind}
        entry |= {"node_type": node_type, "observed_at": observed_at}
        return self.put_many([entry], reason=reason)[0]

    def put_many(
        self, entries: Sequence[Mapping[str, Any]], *, reason: str = "a new value for the key"
    ) -> list[Node]:
        """:meth:`put` for each entry (a mapping of its arguments), in order, in one
        transaction: all are written or none. Returns the current entries in input order.

        The vectors of the contents are computed at once, before the keys are
        locked, so the locks are held for the statements alone (a revision of an
        existing key embeds its own).
        """
        if isinstance(entries, str | Mapping) or not isinstance(entries, Sequence):
            raise InvalidInputError("entries must be a list of mappings", field="entries")
        if len(entries) > MAX_KEYS:
            raise InvalidInputError(f"at most {MAX_KEYS} entries at once", field="entries")
        reason = checked_reason(reason)
        givens: list[EntryInput] = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                raise InvalidInputError(f"entries[{i}] must be a mapping", field="entries")
            data = entry.get("data")
            checked_data(data, limit=self.ns.settings.max_data_bytes, field=f"entries[{i}].data")
            values = {**entry, "data": dict(data) if isinstance(data, Mapping) else data}
            givens.append(validated(EntryInput, **values))
        items = [
            validated(
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
            for given in givens
        ]
        limit = self.ns.settings.max_content_bytes
        texts = [checked_content(item.content, limit=limit) for item in items]
        if not items:
            return []
        vectors = self.ns.vectors(items, texts)
        with self.ns.transaction() as tx:
            # Concurrent puts of one key: the second waits, then revises the first's.
            keys = list(dict.fromkeys(given.key for given in givens))
            keyed.lock_labels(tx.conn, tx.id, self.tier, keys)
            current = keyed.current_by_labels(tx.conn, tx.id, tx.name, self.tier, keys)
            out: list[Node] = []
            for i, (given, item) in enumerate(zip(givens, items, strict=True)):
                old = current.get(given.key)
                node = self._write(tx, given, item, old, vectors[i : i + 1], reason)
                current[given.key] = node
                out.append(node)
            return out

    def _write(
        self,
        tx: NamespaceTransaction,
        given: EntryInput,
        item: MemoryInput,
        old: Node | None,
        vector: Any,
        reason: str,
    ) -> Node:
        """One key's new value, its key locked: a first version, the same one, or a revision."""
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
            keyed.lock_labels(tx.conn, tx.id, self.tier, [key])
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
