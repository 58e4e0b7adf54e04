"""The facade: :class:`MemoryStore` opens a database and guards its schema version."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import IO, Self

from sqlalchemy.engine import Connection, Engine

from memstore.config import Settings
from memstore.db import migrate
from memstore.db.embedded import EmbeddedServer
from memstore.db.engine import connect_checked, create_engine
from memstore.db.replicas import ReadRouter, read_urls
from memstore.db.status import namespace_sizes, row_counts, server_versions
from memstore.db.transaction import transaction
from memstore.db.urls import mask
from memstore.embedding.base import Embedder
from memstore.embedding.select import choose_embedder
from memstore.errors import ConfigurationError, StoreClosedError
from memstore.models import NamespaceInfo, RestoreSummary, StoreStatus
from memstore.namespace import Namespace, check_namespace_name, checked_ceiling
from memstore.services.scope import NamespaceState

# Namespace objects the store keeps for reuse, the most recently used.
NAMESPACES_KEPT = 256
# What the store knows of a namespace between requests (its id and sizes:
# memstore.services.scope.NamespaceState), kept for this many namespaces, the most
# recently used: a handle made anew for one of them pays no lookup and no statistics
# read. Under a kilobyte each (the name is the key); the common terms' counts (up to
# 2,000 terms) are kept only while the store keeps the namespace's handle.
NAMESPACE_STATES_KEPT = 16_384

__all__ = ["MemoryStore", "StoreStatus"]


class MemoryStore:
    """A memory store on one PostgreSQL database.

    Use :meth:`open`; close it (or use it as a context manager) when done.

    >>> with MemoryStore.open() as store:          # doctest: +SKIP
    ...     print(store.status().row_counts["nodes"])
    0
    """

    def __init__(
        self,
        engine: Engine,
        *,
        url: str,
        settings: Settings,
        embedder: Embedder,
        embedded: EmbeddedServer | None = None,
        reads: ReadRouter | None = None,
    ):
        self._engine: Engine | None = engine
        self._reads = reads
        self._url = url
        self._embedded = embedded
        self.settings = settings
        self.embedder = embedder
        self._namespaces: OrderedDict[str, Namespace] = OrderedDict()
        self._states: OrderedDict[str, NamespaceState] = OrderedDict()
        self._namespaces_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        settings: Settings | None = None,
        auto_upgrade: bool | None = None,
        embedder: Embedder | None = None,
        read_url: str | Sequence[str] | None = None,
    ) -> MemoryStore:
        """Open the store at ``url``, else ``MEMSTORE_DATABASE_URL``, else the embedded server.

        The database must already be at this package's schema revision: a
        database that is behind (or ahead) raises
        :class:`~memstore.errors.SchemaVersionError` naming both revisions, and
        nothing is migrated implicitly. The one exception is the private
        embedded server, which is upgraded on open unless ``auto_upgrade=False``.

        ``embedder`` turns text into vectors; by default the neural model when
        the ``neural`` extra is installed, else the hashing embedder
        (``MEMSTORE_EMBEDDER`` chooses explicitly).

        ``read_url`` (else ``MEMSTORE_READ_DATABASE_URL``; a list, or URLs separated by
        commas) names streaming replicas of ``url``: reads go to one that has replayed
        this store's last write and lags at most ``max_replica_lag`` seconds, everything
        else to ``url`` (docs/operations.md, "Read replicas").
        """
        if url is not None and not url.strip():
            # An empty URL is a caller's bug, not a request for the user's own
            # embedded store: falling back would silently open (and migrate) it.
            raise ConfigurationError(
                "the database URL is empty: pass None (or leave MEMSTORE_DATABASE_URL"
                " unset) to use the embedded server"
            )
        settings = settings or Settings()
        embedder = embedder or choose_embedder(settings.embedder)
        url = url or settings.database_url
        embedded: EmbeddedServer | None = None
        if url is None:
            embedded = EmbeddedServer(settings.data_dir)
            url = embedded.start()
        if auto_upgrade is None:
            auto_upgrade = embedded is not None
        replicas = read_urls(read_url if read_url is not None else settings.read_database_url)
        engine = create_engine(url)
        reads: ReadRouter | None = None
        try:
            connect_checked(engine)
            if auto_upgrade:
                with transaction(engine) as conn:
                    behind = migrate.upgradable(conn)
                if behind:
                    migrate.upgrade(engine)
            with transaction(engine) as conn:
                migrate.require_current(conn)
            if replicas:
                reads = ReadRouter(
                    engine,
                    replicas,
                    max_lag=settings.max_replica_lag,
                    stale_ok=settings.stale_ok,
                )
        except BaseException:
            engine.dispose()
            if embedded is not None:
                embedded.stop()
            raise
        return cls(
            engine, url=url, settings=settings, embedder=embedder, embedded=embedded, reads=reads
        )

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (psycopg 3, pgvector registered)."""
        if self._engine is None:
            raise StoreClosedError("this MemoryStore is closed")
        return self._engine

    def namespace(self, name: str) -> Namespace:
        """The namespace called ``name`` (compared exactly), created by its first write.

        Asking for a name creates nothing: reads of a namespace nobody has
        written to answer empty (or not found), and its first successful write
        creates it in that write's own transaction, so a write that fails leaves
        no namespace behind either. Names are text of 1 to 2048 UTF-8 bytes,
        without leading or trailing whitespace and without control or format
        characters (:func:`~memstore.namespace.check_namespace_name`); any other
        name raises :class:`~memstore.errors.InvalidInputError`.

        The store keeps the objects of its :data:`NAMESPACES_KEPT` most recently used
        namespaces, so asking again for a name (say, once per request) returns the same
        object without a round trip to the server; and what it knows of the
        :data:`NAMESPACE_STATES_KEPT` most recently used (id, statistics), so the first
        read of a handle made anew for one of them costs no more than the next.
        """
        engine = self.engine  # raises once the store is closed
        name = str(check_namespace_name(name))  # bad input is refused before any lookup
        with self._namespaces_lock:
            kept = self._namespaces.get(name)
            if kept is not None:
                self._namespaces.move_to_end(name)
                return kept
            state = self._states.get(name)
            if state is None:
                state = self._states[name] = NamespaceState()
                while len(self._states) > NAMESPACE_STATES_KEPT:
                    self._states.popitem(last=False)
            else:
                self._states.move_to_end(name)
        opened = Namespace(
            engine,
            name,
            settings=self.settings,
            embedder=self.embedder,
            reads=self._reads,
            state=state,
        )
        with self._namespaces_lock:
            kept = self._namespaces.setdefault(name, opened)  # a concurrent opener may have won
            self._namespaces.move_to_end(name)
            while len(self._namespaces) > NAMESPACES_KEPT:
                let_go, _ = self._namespaces.popitem(last=False)
                if (state := self._states.get(let_go)) is not None:
                    state.release()
        return kept

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A connection in one transaction; the schema's refusals arrive as named errors.

        >>> with store.transaction() as conn:                  # doctest: +SKIP
        ...     conn.execute(sa.text("DELETE FROM memstore.nodes"))
        Traceback (most recent call last):
        memstore.errors.ImmutableRecordError: DELETE on nodes refused: nodes are append-only: ...
        """
        with transaction(self.engine) as conn:
            yield conn

    def namespaces(self, *, privacy_ceiling: int | None = None) -> list[NamespaceInfo]:
        """Every namespace, by name, with its node count up to ``privacy_ceiling`` (default:
        the store's ``privacy_ceiling`` setting).

        An operator's call: a role confined by row-level security (``memstore_app``)
        sees no namespace here, since it may not list them (docs/security.md).
        """
        ceiling = checked_ceiling(privacy_ceiling, self.settings.privacy_ceiling)
        with transaction(self.engine) as conn:
            return [
                NamespaceInfo(name=name, created_at=created_at, nodes=count)
                for name, created_at, count in namespace_sizes(conn, ceiling)
            ]

    def status(self, *, privacy_ceiling: int | None = None) -> StoreStatus:
        """Server, schema revision and row counts of every memstore table.

        The ``nodes`` count leaves out nodes above ``privacy_ceiling`` (default:
        the store's); the other tables are counted whole (the store's size).
        """
        ceiling = checked_ceiling(privacy_ceiling, self.settings.privacy_ceiling)
        with transaction(self.engine) as conn:
            server_version, pgvector = server_versions(conn)
            counts = row_counts(conn, ceiling)
            revision = migrate.current_revision(conn)
        return StoreStatus(
            database_url=mask(self._url),
            embedded=self._embedded is not None,
            server_version=server_version,
            pgvector_version=pgvector,
            schema_revision=revision,
            package_revision=migrate.head_revision(),
            row_counts=counts,
        )

    def close(self) -> None:
        """Release connections; stop the embedded server if this was its last user."""
        with self._namespaces_lock:
            self._namespaces.clear()
            self._states.clear()
        if self._reads is not None:
            self._reads.dispose()
            self._reads = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        if self._embedded is not None:
            self._embedded.stop()
            self._embedded = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- restore (appended: docs/operations.md, "Export and restore") ------------------

    def restore(
        self,
        source: str | os.PathLike[str] | IO[bytes],
        *,
        namespace: str,
        progress: Callable[[str, int], None] | None = None,
    ) -> RestoreSummary:
        """Rebuild an export (:meth:`Namespace.export`) into ``namespace``, empty or new.

        One transaction: a file that is cut short, not JSON, of another format
        version or whose ids do not hold together restores nothing
        (:class:`~memstore.errors.SnapshotFileError`), and so does a namespace
        that already holds memories (:class:`~memstore.errors.NamespaceNotEmptyError`).
        Every row gets a new id and every reference follows; statuses, lineage,
        edges, transaction times (``as_of``), learned state and the review queue
        come back as they were. Vectors come from the file when it carries them
        for the store's embedder, else the store's embedder computes them in the
        same transaction. Only the tables' owner may restore (it writes the
        file's times): as ``memstore_app`` it raises
        :class:`~memstore.errors.RestoreNotPermittedError` (docs/security.md).
        ``progress`` is called with each section's name and row count.

        >>> ns.export("agent-7.jsonl")                                 # doctest: +SKIP
        >>> store.restore("agent-7.jsonl", namespace="agent-7-copy").rows["node"]  # doctest: +SKIP
        42
        """
        from memstore.services import snapshot

        return snapshot.restore(
            self.engine,
            source,
            namespace=namespace,
            settings=self.settings,
            embedder=self.embedder,
            progress=progress,
        )
