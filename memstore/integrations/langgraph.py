"""LangGraph's long-term memory store (``BaseStore``) over memstore (docs/integrations.md).

``pip install 'memstore[langgraph]'``, then hand :class:`MemstoreStore` to
``graph.compile(store=...)`` (or LangMem) where ``PostgresStore`` or
``InMemoryStore`` would go::

    with MemstoreStore.from_conn_string(url) as store:
        store.put(("users", "alice"), "color", {"text": "Alice likes red"})
        store.search(("users", "alice"), query="favourite colour")

Semantics are memstore's: a LangGraph namespace is one memstore namespace
(:func:`namespace_name`), an item is the current memory of its key in the tier
:data:`TIER`, a put of an existing key is a revision (history kept), a delete a
tombstone, and a search with a query is memstore's hybrid recall.
"""

from __future__ import annotations

import asyncio
import functools
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from datetime import UTC, datetime
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    ensure_embeddings,
    get_text_at_path,
    validate_op_namespace,
)

from memstore.embedding.adapter import CallableEmbedder
from memstore.embedding.base import Embedder
from memstore.errors import ConfigurationError, InvalidInputError
from memstore.graph.keyed import Comparison, DataCondition, namespaces_holding
from memstore.inputs import validated
from memstore.models import Node, RecallMode
from memstore.namespace import Namespace
from memstore.store import MemoryStore

TIER = "langgraph"
"""The tier of every item the adapter writes (``ns.keyed(TIER)`` reaches them natively)."""
NODE_TYPE = "Item"
# The longest query memstore's recall takes, and the most hits one recall returns.
QUERY_MAX = 10_000
RECALL_MAX = 1000
# The most puts of one batch written in one transaction (keyed.put_many's own limit).
PUT_CHUNK = 1000
_OPERATORS: dict[str, Comparison] = {
    "$eq": "eq",
    "$ne": "ne",
    "$gt": "gt",
    "$gte": "gte",
    "$lt": "lt",
    "$lte": "lte",
}

__all__ = ["NODE_TYPE", "TIER", "MemstoreStore", "namespace_name", "namespace_tuple"]


# --- namespaces -----------------------------------------------------------------------


def _label_text(label: str) -> str:
    """One label as it appears in a memstore name: '%', control and format characters, and
    whitespace at either end percent-encoded (UTF-8), everything else as it is."""
    out = []
    last = len(label) - 1
    for i, char in enumerate(label):
        if (
            char == "%"
            or unicodedata.category(char) in ("Cc", "Cf")
            or (char.isspace() and (i == 0 or i == last))
        ):
            out.append(quote(char, safe=""))
        else:
            out.append(char)
    return "".join(out)


def namespace_name(namespace: Sequence[str]) -> str:
    """The memstore namespace of a LangGraph namespace tuple: its labels joined by ``"."``.

    LangGraph forbids ``"."`` in labels, so the join is reversible
    (:func:`namespace_tuple`); what memstore's names may not hold (control and
    format characters, whitespace at the ends) and ``"%"`` itself are
    percent-encoded.

    >>> namespace_name(("users", "alice", "memories"))
    'users.alice.memories'
    >>> namespace_name(("50%", " padded "))
    '50%25.%20padded%20'
    """
    return ".".join(_label_text(label) for label in namespace)


def namespace_tuple(name: str) -> tuple[str, ...]:
    """The LangGraph namespace of a memstore name :func:`namespace_name` made.

    >>> namespace_tuple('50%25.%20padded%20')
    ('50%', ' padded ')
    """
    return tuple(unquote(label) for label in name.split("."))


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(want in ("*", got) for want, got in zip(path, part, strict=True))


# --- filters --------------------------------------------------------------------------


def conditions(filter: Mapping[str, Any] | None) -> list[DataCondition]:
    """LangGraph's ``filter`` as memstore data conditions.

    ``{"field": value}`` is equality, ``{"field": {"$gt": 3, "$lt": 9}}`` one
    condition per operator; ``"a.b"`` names the nested field ``b`` of ``a``.
    """
    if not filter:
        return []
    if not isinstance(filter, Mapping):
        raise InvalidInputError("filter must be a mapping of field to value", field="filter")
    out: list[DataCondition] = []
    for field, wanted in filter.items():
        if not isinstance(field, str) or not field:
            raise InvalidInputError("a filter field must be non-empty text", field="filter")
        path = tuple(field.split("."))
        if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
            for operator, value in wanted.items():
                if operator not in _OPERATORS:
                    raise InvalidInputError(
                        f"unknown filter operator {operator!r} for {field!r}: use one of"
                        f" {', '.join(_OPERATORS)}",
                        field="filter",
                    )
                out.append(
                    validated(DataCondition, path=path, op=_OPERATORS[operator], value=value)
                )
        else:
            out.append(validated(DataCondition, path=path, op="eq", value=wanted))
    return out


# --- the store ------------------------------------------------------------------------


def _created_at(node: Node) -> datetime:
    """When the key was first put: the ``observed_at`` every version carries (the adapter's
    clock), never later than this version's ``recorded_at`` (the server's)."""
    if node.observed_at is None:
        return node.recorded_at
    return min(node.observed_at, node.recorded_at)


def _embedder_for(index: IndexConfig, given: Embedder | None) -> Embedder:
    """The embedder an index config asks for: its ``embed`` (as a memstore embedder named
    after it), or ``given`` (the store's) when it names none."""
    embed = index.get("embed")
    dims = index.get("dims")
    if embed is None:
        assert given is not None
        if dims is not None and dims != given.dims:
            raise ConfigurationError(
                f"index dims {dims} differ from the store's embedder {given.name!r}"
                f" ({given.dims}): pass the embedding function as index['embed']"
            )
        return given
    if dims is None:
        raise ConfigurationError("an index with an embed function needs its dims")
    # An object with embed_documents (LangChain's Embeddings, or one shaped like it) is
    # used as it is; a function or a "provider:model" string goes through LangGraph.
    documents = getattr(embed, "embed_documents", None)
    if not callable(documents):
        documents = ensure_embeddings(embed).embed_documents
    if isinstance(embed, str):
        name = embed
    else:
        model = getattr(embed, "model", None) or getattr(embed, "model_name", None)
        kind = embed if callable(embed) and not hasattr(embed, "embed_documents") else type(embed)
        name = str(model) if model else f"{kind.__module__}.{kind.__qualname__}"
    return CallableEmbedder(f"langgraph:{name}:{dims}", dims, documents)


def _with_embedder(store: MemoryStore, embedder: Embedder) -> MemoryStore:
    """``store`` when it already embeds with ``embedder``, else a facade over the same
    engine that does (the caller keeps closing ``store``)."""
    if store.embedder.name == embedder.name and store.embedder.dims == embedder.dims:
        return store
    url = store.engine.url.render_as_string(hide_password=True)
    return MemoryStore(store.engine, url=url, settings=store.settings, embedder=embedder)


class MemstoreStore(BaseStore):
    """A LangGraph ``BaseStore`` over an open :class:`~memstore.MemoryStore`.

    ``index`` (LangGraph's ``IndexConfig``: ``dims``, ``embed``, ``fields``)
    chooses what text of a value is searched and embedded (``fields``, default
    the whole value as JSON) and the embedding function (``embed``; memstore's
    own embedder when it names none). ``mode`` is the recall a query runs:
    ``hybrid`` (words and vectors, the default), ``semantic`` or ``lexical``.
    TTL is not supported (``supports_ttl = False``, docs/integrations.md).
    """

    supports_ttl: bool = False
    __slots__ = ("_store", "index_config", "mode")

    def __init__(
        self,
        store: MemoryStore,
        *,
        index: IndexConfig | None = None,
        mode: RecallMode = "hybrid",
    ):
        if mode not in ("hybrid", "semantic", "lexical"):
            raise InvalidInputError("mode must be hybrid, semantic or lexical", field="mode")
        self.index_config: IndexConfig | None = None
        if index is not None:
            embedder = _embedder_for(index, store.embedder)
            store = _with_embedder(store, embedder)
            self.index_config = IndexConfig(
                dims=embedder.dims,
                embed=index.get("embed") or embedder.embed,  # type: ignore[typeddict-item]
                fields=list(index.get("fields") or ["$"]),
            )
        self._store = store
        self.mode: RecallMode = mode

    @classmethod
    def from_conn_string(
        cls,
        url: str | None,
        *,
        index: IndexConfig | None = None,
        mode: RecallMode = "hybrid",
        auto_upgrade: bool | None = None,
    ) -> _Opening:
        """Open a store at ``url`` (None: ``MEMSTORE_DATABASE_URL``, else the embedded
        server) for a ``with`` or ``async with`` block; closed at its end.

        >>> with MemstoreStore.from_conn_string(url) as store:        # doctest: +SKIP
        ...     store.put(("users", "alice"), "color", {"text": "likes red"})
        """
        return _Opening(cls, url, index=index, mode=mode, auto_upgrade=auto_upgrade)

    @property
    def store(self) -> MemoryStore:
        """The memstore facade underneath (its own API reaches what LangGraph cannot say)."""
        return self._store

    def namespace(self, namespace: Sequence[str]) -> Namespace:
        """The memstore namespace holding a LangGraph namespace's items."""
        return self._store.namespace(namespace_name(namespace))

    def setup(self) -> None:
        """Nothing to do: the schema is memstore's, migrated by ``memstore db upgrade`` (or on
        open of the embedded server). Here so code written for ``PostgresStore`` runs."""

    # --- batches -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order. Consecutive puts of values into one namespace are one
        transaction (one embedding call); every other write is a transaction of its own."""
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        results: list[Result] = [None] * len(ops)
        gets: dict[tuple[str, ...], list[int]] = {}
        puts: list[PutOp] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                self._put_many(puts)  # a get sees the puts before it
                puts = []
                # Gets of one namespace between two writes are one statement.
                gets.setdefault(tuple(op.namespace), []).append(i)
                continue
            self._get_many(ops, gets, results)  # and a write does not change what they see
            gets = {}
            if isinstance(op, PutOp) and op.value is not None:
                if puts and tuple(puts[0].namespace) != tuple(op.namespace):
                    self._put_many(puts)
                    puts = []
                puts.append(op)
                continue
            self._put_many(puts)
            puts = []
            if isinstance(op, PutOp):
                self._delete(op)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
            else:
                raise InvalidInputError(f"unknown operation {type(op).__name__}", field="ops")
        self._put_many(puts)
        self._get_many(ops, gets, results)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (see :func:`_in_worker`)."""
        return await _in_worker(self.batch, list(ops))

    def history(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """Every version of ``key``, oldest first: the values it had before each put, the
        current one last (a deleted key's versions too). ``updated_at`` is when each was
        written. ``ns.keyed(TIER).history(key)`` gives the same as memstore nodes, with
        their status."""
        validate_op_namespace(GetOp(namespace, key))
        versions = self.namespace(namespace).keyed(TIER).history(str(key))
        return [self._item(tuple(namespace), node) for node in versions]

    # --- operations ----------------------------------------------------------------

    @staticmethod
    def _item(namespace: tuple[str, ...], node: Node) -> Item:
        assert node.label is not None
        return Item(
            value=node.data,
            key=node.label,
            namespace=namespace,
            created_at=_created_at(node),
            updated_at=node.recorded_at,
        )

    def _get_many(
        self,
        ops: list[Op],
        gets: dict[tuple[str, ...], list[int]],
        results: list[Result],
    ) -> None:
        for namespace, positions in gets.items():
            if not namespace:
                continue  # the empty namespace holds nothing
            keys = [str(ops[i].key) for i in positions]  # type: ignore[union-attr]
            found = self.namespace(namespace).keyed(TIER).get(list(dict.fromkeys(keys)))
            for i, key in zip(positions, keys, strict=True):
                node = found.get(key)
                results[i] = None if node is None else self._item(namespace, node)

    def _text(self, op: PutOp, value: Mapping[str, Any]) -> str:
        """What recall searches for an item: the text at its index fields, or its key."""
        if op.index is False:
            return op.key
        if op.index is not None:
            fields = list(op.index)
        elif self.index_config is not None:
            fields = list(self.index_config.get("fields") or ["$"])
        else:
            fields = ["$"]
        texts = [text for path in fields for text in get_text_at_path(value, path)]
        return "\n".join(text for text in texts if text.strip()) or op.key

    @staticmethod
    def _check_write(op: PutOp) -> None:
        if op.ttl is not None:
            raise NotImplementedError(
                "TTL is not supported by MemstoreStore: put with ttl=None"
                " (docs/integrations.md, 'TTL')"
            )
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")

    def _delete(self, op: PutOp) -> None:
        self._check_write(op)
        entries = self.namespace(op.namespace).keyed(TIER)
        entries.forget(str(op.key), reason="deleted through LangGraph's store")

    def _put_many(self, puts: list[PutOp]) -> None:
        """Puts of values into one namespace, as one transaction."""
        if not puts:
            return
        entries = []
        for op in puts:
            self._check_write(op)
            if not isinstance(op.value, Mapping):
                raise InvalidInputError("an item's value must be a mapping", field="value")
            value = dict(op.value)
            entries.append(
                {
                    "key": str(op.key),
                    "content": self._text(op, value),
                    "data": value,
                    "node_type": NODE_TYPE,
                    "observed_at": datetime.now(UTC),
                }
            )
        keyed = self.namespace(puts[0].namespace).keyed(TIER)
        for start in range(0, len(entries), PUT_CHUNK):
            keyed.put_many(entries[start : start + PUT_CHUNK], reason="put through LangGraph")

    def _namespaces(self, prefix: Sequence[str]) -> list[str]:
        """memstore names of the LangGraph namespaces under ``prefix`` holding items."""
        encoded = namespace_name(prefix) if prefix else None
        return namespaces_holding(self._store.engine, TIER, prefix=encoded)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise InvalidInputError("limit and offset must not be negative", field="limit")
        where = conditions(op.filter)
        wanted = op.offset + op.limit
        query = (op.query or "").strip()[:QUERY_MAX]
        if wanted == 0:
            return []
        found: list[tuple[float, SearchItem]] = []
        if query and op.namespace_prefix:
            # The namespace the prefix names is recalled while another thread asks which
            # namespaces under it hold items: one wait for the server instead of two.
            exact = namespace_name(op.namespace_prefix)
            listing = _listing_pool().submit(self._namespaces, op.namespace_prefix)
            try:
                first = self._recalled(exact, query, where, wanted)
            finally:
                names = listing.result()
            found = first if exact in names else []
            names = [name for name in names if name != exact]
        else:
            names = self._namespaces(op.namespace_prefix)
            if not query:
                return self._listed(names, where, op) if names else []
        for name in names:
            found += self._recalled(name, query, where, wanted)
        found.sort(key=lambda pair: -pair[0])
        return [item for _, item in found[op.offset : wanted]]

    def _listed(self, names: list[str], where: list[DataCondition], op: SearchOp) -> list[Any]:
        """Items without a query: the latest written first (across namespaces too)."""
        if len(names) == 1:
            nodes = (
                self._store.namespace(names[0])
                .keyed(TIER)
                .all(where=where, limit=op.limit, offset=op.offset)
            )
            return [self._search_item(names[0], node, None) for node in nodes]
        merged: list[tuple[datetime, int, SearchItem]] = []
        for name in names:
            for node in (
                self._store.namespace(name).keyed(TIER).all(where=where, limit=op.offset + op.limit)
            ):
                merged.append((node.recorded_at, node.id, self._search_item(name, node, None)))
        merged.sort(key=lambda row: (row[0], row[1]), reverse=True)
        return [row[2] for row in merged[op.offset : op.offset + op.limit]]

    def _recalled(
        self, name: str, query: str, where: list[DataCondition], wanted: int
    ) -> list[tuple[float, SearchItem]]:
        """The best ``wanted`` items of one namespace for ``query`` that pass ``where``.

        Recall cannot filter on data, so it asks for more hits until enough pass
        (or the namespace has no more, or recall's limit of 1000 is reached).
        """
        ns = self._store.namespace(name)
        k = min(max(wanted, 10), RECALL_MAX)
        while True:
            hits = ns.recall(query, k=k, mode=self.mode, tiers=[TIER], node_types=[NODE_TYPE])
            if where and hits:
                kept = {
                    node.id
                    for node in ns.keyed(TIER).all(
                        where=where, ids=[hit.node.id for hit in hits], limit=len(hits)
                    )
                }
                passing = [hit for hit in hits if hit.node.id in kept]
            else:
                passing = hits
            if len(passing) >= wanted or len(hits) < k or k >= RECALL_MAX:
                return [
                    (hit.score, self._search_item(name, hit.node, hit.score))
                    for hit in passing[:wanted]
                ]
            k = min(k * 4, RECALL_MAX)

    def _search_item(self, name: str, node: Node, score: float | None) -> SearchItem:
        assert node.label is not None
        return SearchItem(
            namespace=namespace_tuple(name),
            key=node.label,
            value=node.data,
            created_at=_created_at(node),
            updated_at=node.recorded_at,
            score=score,
        )

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        if op.limit < 0 or op.offset < 0:
            raise InvalidInputError("limit and offset must not be negative", field="limit")
        if op.max_depth is not None and op.max_depth < 1:
            raise InvalidInputError("max_depth must be at least 1", field="max_depth")
        matching = list(op.match_conditions or ())
        # The literal start of a prefix condition narrows the statement; the rest is here.
        literal: list[str] = []
        for condition in matching:
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    literal.append(label)
                break
        listed = [namespace_tuple(name) for name in self._namespaces(literal)]
        kept = {
            ns if op.max_depth is None else ns[: op.max_depth]
            for ns in listed
            if all(_matches(ns, condition) for condition in matching)
        }
        return sorted(kept)[op.offset : op.offset + op.limit]


@functools.cache
def _listing_pool() -> ThreadPoolExecutor:
    """The threads that list namespaces beside a search's first recall (shared by stores)."""
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="memstore-langgraph")


async def _in_worker(run: Callable[[list[Op]], list[Result]], ops: list[Op]) -> list[Result]:
    """Run the sync core in a worker thread (asyncio's default executor, which bounds how
    many run at once). The one place to point at memstore's async API once it exists."""
    return await asyncio.to_thread(run, ops)


class _Opening(
    AbstractContextManager["MemstoreStore"], AbstractAsyncContextManager["MemstoreStore"]
):
    """What :meth:`MemstoreStore.from_conn_string` returns: ``with`` or ``async with``."""

    def __init__(
        self,
        cls: type[MemstoreStore],
        url: str | None,
        *,
        index: IndexConfig | None,
        mode: RecallMode,
        auto_upgrade: bool | None,
    ):
        self._cls = cls
        self._url = url
        self._index = index
        self._mode: RecallMode = mode
        self._auto_upgrade = auto_upgrade
        self._opened: MemoryStore | None = None

    def __enter__(self) -> MemstoreStore:
        embedder: Embedder | None = None
        if self._index is not None and self._index.get("embed") is not None:
            # Open with the index's embedder so the store has one facade, not two.
            embedder = _embedder_for(self._index, None)
        self._opened = MemoryStore.open(
            self._url, embedder=embedder, auto_upgrade=self._auto_upgrade
        )
        try:
            return self._cls(self._opened, index=self._index, mode=self._mode)
        except BaseException:
            self._opened.close()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._opened is not None:
            self._opened.close()
            self._opened = None

    async def __aenter__(self) -> MemstoreStore:
        return await asyncio.to_thread(self.__enter__)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.__exit__, exc_type, exc, tb)
