"""One namespace as the services see it: who it is and how to open a transaction in it.

A :class:`Scope` holds the namespace's id (once it exists), name, engine,
settings and embedder, opens its transactions (:meth:`Scope.transaction`,
:meth:`Scope.reading`, :meth:`Scope.connection`) and computes the vectors of
new memories (:meth:`Scope.vectors`). The tiers, the lifecycle and the other
services receive it instead of the :class:`~memstore.namespace.Namespace`
facade, so nothing below the facade imports it back.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import Any, NoReturn, TypeVar

import numpy as np
from sqlalchemy.engine import Connection, Engine

from memstore.config import Settings
from memstore.db.replicas import ReadRouter
from memstore.db.transaction import (
    PipelinedTransaction,
    Statement,
    checked_namespace_transaction,
    declare_scope,
    pipelined_namespace_transaction,
    transaction,
)
from memstore.embedding import cache
from memstore.embedding.base import Embedder
from memstore.errors import DatabaseError, InvalidInputError
from memstore.graph.namespaces import lookup_namespace, name_check, open_namespace
from memstore.graph.rows import NamespaceStats
from memstore.models import PRIVACY_MAX, MemoryInput, check_clean
from memstore.recall import TermCounts
from memstore.tx import NamespaceTransaction

NAME_MAX_BYTES = 2048

T = TypeVar("T")

# The id a read uses for a name nobody has written to yet: identity ids start at
# 1, so every statement scoped to it finds nothing, and nothing is created.
NO_NAMESPACE = 0


def check_namespace_name(name: object) -> str:
    """Text of 1 to 2048 UTF-8 bytes, without leading or trailing whitespace and without
    control or format characters (Unicode categories Cc and Cf: NUL, newlines, escape
    sequences, zero-width and bidirectional marks); compared exactly (docs/security.md)."""
    if not isinstance(name, str):
        raise InvalidInputError("a namespace name must be text", field="name")
    if not name:
        raise InvalidInputError("a namespace name must not be empty", field="name")
    if "\x00" in name:
        raise InvalidInputError("a namespace name must not contain NUL", field="name")
    try:
        check_clean(name)
    except ValueError as exc:
        raise InvalidInputError(f"the namespace name {exc}", field="name") from None
    if len(name.encode()) > NAME_MAX_BYTES:
        raise InvalidInputError(
            f"a namespace name may be at most {NAME_MAX_BYTES} bytes", field="name"
        )
    if name != name.strip():
        raise InvalidInputError(
            "a namespace name must not begin or end with whitespace", field="name"
        )
    for char in name:
        if unicodedata.category(char) in ("Cc", "Cf"):
            raise InvalidInputError(
                f"a namespace name must not contain control or format characters"
                f" (found U+{ord(char):04X})",
                field="name",
            )
    return name


def checked_ceiling(value: object, default: int) -> int:
    """A privacy ceiling (an int from 0 to 3), or ``default`` (the store's) for None."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= PRIVACY_MAX:
        raise InvalidInputError(
            f"privacy_ceiling must be an integer from 0 to {PRIVACY_MAX}",
            field="privacy_ceiling",
        )
    return value


class NamespaceState:
    """What a store knows of one namespace between requests: its id, its sizes and its
    common terms' counts. The store keeps these for many more namespaces than it keeps
    handles (memstore/store.py), and every handle of the namespace shares them, so a
    tenant met again pays no lookup and no statistics read.

    An id is kept for a name only while the namespace has that name: namespaces are
    never renamed or removed (their append-only triggers), and the reads that use a
    kept id carry the namespace's name beside their rows (:meth:`Scope.still_named`):
    should an owner who bypasses the triggers rename or remove it all the same, those
    rows are dropped, and the id looked up again.
    """

    __slots__ = ("id", "missing", "stats", "term_counts")

    def __init__(self) -> None:
        self.id: int | None = None
        # (namespace id, sizes, when read: time.monotonic()).
        self.stats: tuple[int, NamespaceStats, float] | None = None
        self.term_counts = TermCounts()
        # (namespace, ceiling, the sizes it was counted with) -> what lacks a vector.
        self.missing: tuple[tuple[int, int | None, float], tuple[int, list[int]]] | None = None

    def release(self) -> None:
        """Drop what is big to keep (the common terms' counts, sampled again when a
        lexical or hybrid recall needs them): the store let the namespace's handle go."""
        self.term_counts = TermCounts()

    def forget(self) -> None:
        """Drop everything kept: the next read looks the namespace up again."""
        self.id = None
        self.stats = None
        self.term_counts = TermCounts()
        self.missing = None


class Scope:
    """One namespace of one store: its identity, settings, embedder and transactions."""

    def __init__(
        self,
        engine: Engine,
        name: str,
        *,
        settings: Settings,
        embedder: Embedder,
        reads: ReadRouter | None = None,
        state: NamespaceState | None = None,
    ):
        self.engine = engine
        # Where reads go when the store has replicas (None: every read on ``engine``).
        self.reads = reads
        self.name = check_namespace_name(name)
        self.embedder = embedder
        self.settings = settings
        # The id once the namespace exists (None before its first write commits), with
        # what else the store keeps of it; the thread running that first write sees the
        # new id in _creating.
        self.state = state if state is not None else NamespaceState()
        self._creating = threading.local()
        self._looked = False  # whether this handle has looked its namespace up

    @property
    def id(self) -> int:
        """The namespace's id; 0 while nobody has written to it (reads then find nothing)."""
        known = self.state.id
        if known is not None:
            return known
        pending: int | None = getattr(self._creating, "id", None)
        if pending is not None:
            return pending
        if not self._looked:  # looked up when first needed, not when the handle is made
            self.exists()
            if self.state.id is not None:
                return self.state.id
        return NO_NAMESPACE

    def exists(self) -> bool:
        """Whether the namespace has been created (by a first successful write); looking
        never creates it. One round trip the first time, none once found."""
        if self.state.id is None:
            # A lookup on the primary, not a write: reads need not wait for a replica.
            looking = self.reads.read_on_primary() if self.reads else nullcontext()
            with looking:
                found = lookup_namespace(self.engine, self.name)
            if self.state.id is None:
                self.state.id = found
            self._looked = True
        return self.state.id is not None

    def still_named(self, namespace_id: int, name: object) -> bool:
        """Whether the namespace ``namespace_id`` was still called by this scope's name, as
        a read's name check (memstore.graph.namespaces.NAME_SQL) answered beside its rows.
        When it was not, the kept id and everything kept with it are dropped: the caller
        discards the rows and reads again, by a fresh lookup."""
        if namespace_id == NO_NAMESPACE or name == self.name:
            return True
        if self.state.id == namespace_id:
            self.state.forget()
        return False

    def ceiling(self, privacy_ceiling: object) -> int:
        """The ceiling of a call: its own (checked), else the store's default."""
        return checked_ceiling(privacy_ceiling, self.settings.privacy_ceiling)

    @contextmanager
    def transaction(self, *, privacy_ceiling: int | None = None) -> Iterator[NamespaceTransaction]:
        """See :meth:`memstore.namespace.Namespace.transaction`: creates the namespace in
        the transaction when it does not exist yet."""
        ceiling = self.ceiling(privacy_ceiling)
        for _ in range(2):
            if not self.exists():
                break
            with self._scoped(self.engine, namespace_id=self.id, ceiling=ceiling) as conn:
                if conn is not None:
                    yield NamespaceTransaction(self, conn, privacy_ceiling=ceiling)
                    return
            # The kept id lost its name (an owner renamed or removed the namespace past
            # its append-only guard): look the name up again; nobody has it, create it,
            # as for a name never written to. Never write under namespace id 0.
        else:
            self.renamed()
        with transaction(self.engine) as conn:
            created = open_namespace(conn, self.name, self.embedder)
            declare_scope(conn, created, ceiling)
            self._creating.id = created
            try:
                yield NamespaceTransaction(self, conn, privacy_ceiling=ceiling)
            finally:
                self._creating.id = None
        self.state.id = created  # committed: every thread may use it now

    @contextmanager
    def reading(self, *, privacy_ceiling: int | None = None) -> Iterator[NamespaceTransaction]:
        """See :meth:`memstore.namespace.Namespace.reading`: never creates the namespace."""
        ceiling = self.ceiling(privacy_ceiling)
        if self.reads is None:
            with self.connection(privacy_ceiling=ceiling) as conn:
                yield NamespaceTransaction(self, conn, privacy_ceiling=ceiling)
            return
        reads = self.reads
        for _ in range(2):
            self.exists()  # another process may have created it since
            namespace_id = self.id
            opened = partial(self._scoped, namespace_id=namespace_id, ceiling=ceiling)
            with reads.reading(opened) as conn:
                if conn is not None:
                    yield NamespaceTransaction(self, conn, privacy_ceiling=ceiling)
                    return
        self.renamed()

    def read(self, statement: Callable[[Engine], T]) -> T:
        """``statement(engine)`` on the engine reads go to: a replica when the store has one
        that has caught up (the primary again if it fails), else the primary."""
        if self.reads is None:
            return statement(self.engine)
        return self.reads.run(statement)

    @contextmanager
    def pipelined_reading(self, *, privacy_ceiling: int | None) -> Iterator[PipelinedTransaction]:
        """A pipelined namespace transaction (memstore/db/transaction.py) that only reads:
        on a replica when the store has one that will do."""
        if self.reads is None:
            with pipelined_namespace_transaction(
                self.engine, self.id, privacy_ceiling=privacy_ceiling
            ) as tx:
                yield tx
            return
        with self.reads.reading(
            lambda engine: pipelined_namespace_transaction(
                engine, self.id, privacy_ceiling=privacy_ceiling
            )
        ) as tx:
            yield tx

    @contextmanager
    def connection(self, *, privacy_ceiling: int | None = None) -> Iterator[Connection]:
        """See :meth:`memstore.namespace.Namespace.connection`: one transaction whose first
        statement declares the namespace and the ceiling (``SET LOCAL``). Its opening is one
        round trip, and checks that the namespace's kept id still has this name."""
        ceiling = self.ceiling(privacy_ceiling)
        for _ in range(2):
            self.exists()  # another process may have created it since
            with self._scoped(self.engine, namespace_id=self.id, ceiling=ceiling) as conn:
                if conn is not None:
                    yield conn
                    return
        self.renamed()

    @contextmanager
    def _scoped(
        self, engine: Engine, *, namespace_id: int, ceiling: int
    ) -> Iterator[Connection | None]:
        """A transaction scoped to ``namespace_id``, opened with the name check in the same
        round trip; None (the transaction ended, the kept id dropped) when that id no longer
        has this scope's name (:meth:`still_named`)."""
        check = None if namespace_id == NO_NAMESPACE else name_check(namespace_id)
        with checked_namespace_transaction(
            engine, namespace_id, privacy_ceiling=ceiling, check=check
        ) as (conn, rows):
            named = rows[0]["name"] if rows else None
            yield conn if check is None or self.still_named(namespace_id, named) else None

    def rows_in_one_round_trip(
        self,
        privacy_ceiling: int | None,
        statements: Callable[[int, Connection], list[Statement]],
    ) -> list[list[dict[str, Any]]]:
        """The rows of ``statements(namespace id, connection)``: a read in one round trip
        (BEGIN, the scope, the statements, the name check and COMMIT in one pipeline), read
        again once by a fresh lookup if the kept id had lost this name."""
        ceiling = self.ceiling(privacy_ceiling)
        for _ in range(2):
            found, name = self.rows_once(ceiling, statements)
            if self.still_named(self.id, name):
                return found
        self.renamed()

    def rows_once(
        self, ceiling: int, statements: Callable[[int, Connection], list[Statement]]
    ) -> tuple[list[list[dict[str, Any]]], str | None]:
        """One attempt of :meth:`rows_in_one_round_trip`: the rows and the name the kept id
        has now (the caller decides with :meth:`still_named`). On a replica that fails
        it, the whole read runs again on the primary (:meth:`read`)."""
        self.exists()  # another process may have created it since
        namespace_id = self.id

        def once(engine: Engine) -> tuple[list[list[dict[str, Any]]], str | None]:
            with pipelined_namespace_transaction(
                engine, namespace_id, privacy_ceiling=ceiling
            ) as tx:
                *found, named = tx.rows(
                    [*statements(namespace_id, tx.conn), name_check(namespace_id)], commit=True
                )
            return found, (str(named[0]["name"]) if named else None)

        return self.read(once)

    @contextmanager
    def opened_reading(
        self, privacy_ceiling: int, first: Callable[[int, PipelinedTransaction], T]
    ) -> Iterator[tuple[PipelinedTransaction, T]]:
        """:meth:`pipelined_reading` whose first reads (``first(namespace id, tx)``, the
        transaction's opening riding with them) count as its opening: on a replica that
        fails them it is opened again on the primary, as :meth:`reading` is."""
        self.exists()
        namespace_id = self.id

        @contextmanager
        def open_on(engine: Engine) -> Iterator[tuple[PipelinedTransaction, T]]:
            with pipelined_namespace_transaction(
                engine, namespace_id, privacy_ceiling=privacy_ceiling
            ) as tx:
                yield tx, first(namespace_id, tx)

        if self.reads is None:
            with open_on(self.engine) as opened:
                yield opened
            return
        with self.reads.reading(open_on) as opened:
            yield opened

    def renamed(self) -> NoReturn:
        """Raised when a namespace's name moved twice while it was being opened: only an
        owner who bypasses the namespaces' append-only rule can do that."""
        raise DatabaseError(
            f"the namespace {self.name!r} changed while it was being opened"
            " (namespaces are never renamed: was their append-only rule bypassed?)"
        )

    def vectors(self, items: list[MemoryInput], texts: list[str]) -> np.ndarray[Any, Any]:
        """Given vectors where items carry one; the embedder's for the rest."""
        dims = self.embedder.dims
        given = [i for i, item in enumerate(items) if item.embedding is not None]
        out = np.empty((len(items), dims), dtype=np.float32)
        if given and not self._given_vectors_at_once(items, given, out):
            for i in given:  # one by one: the first bad vector raises its own error
                out[i] = cache.check_vector(items[i].embedding, dims)
        todo = [i for i in range(len(items)) if items[i].embedding is None]
        if todo:
            out[todo] = self.embedder.embed([texts[i] for i in todo])
        return out

    def _given_vectors_at_once(
        self, items: list[MemoryInput], given: list[int], out: np.ndarray[Any, Any]
    ) -> bool:
        """Check and store the given vectors as one array, if every one passes.

        The checks of :func:`~memstore.embedding.cache.check_vector`, done for
        a whole batch at once (a bulk load of given vectors spent most of its
        vector time checking them one by one); False when any vector would fail
        them, so the caller checks one by one and raises the exact error.
        """
        try:
            block = np.asarray([items[i].embedding for i in given], dtype=np.float32)
        except (TypeError, ValueError):
            return False
        dims = self.embedder.dims
        if block.shape != (len(given), dims):
            return False
        if not (np.isfinite(block).all() and block.any(axis=1).all()):
            return False
        out[given] = block
        return True
