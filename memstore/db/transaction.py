"""One transaction, with the database's refusals translated into memstore errors."""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, LiteralString

import psycopg
import sqlalchemy as sa
from psycopg import sql
from psycopg.rows import dict_row
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from memstore.db.compiled import Compiled, binary_rows, bound, cursor_for
from memstore.errors import translate_db_error
from memstore.models import PRIVACY_MAX

# A statement and its parameters, for psycopg (``%(name)s`` placeholders; a Compiled
# statement numbered them once: memstore/db/compiled.py).
# bytes: a statement SQLAlchemy compiled for psycopg (pyformat placeholders).
Statement = tuple[sql.SQL | sql.Composed | Compiled | LiteralString | bytes, Mapping[str, Any]]


@contextmanager
def transaction(engine: Engine) -> Iterator[Connection]:
    """A connection inside one transaction: committed on success, rolled back on error.

    A refusal raised by the schema (an append-only trigger, a lineage rule, a
    redaction check) leaves as the matching :class:`~memstore.errors.MemstoreError`
    subclass, any other database error as :class:`~memstore.errors.DatabaseError`,
    with the driver error chained as its cause. That includes errors of
    statements run on the raw psycopg connection (binary COPY, named queries),
    which SQLAlchemy never sees to wrap.
    """
    try:
        with engine.begin() as conn:
            yield conn
    except (DBAPIError, psycopg.Error) as exc:
        raise translate_db_error(exc) from exc


# The per-transaction settings row-level security reads (sql/07_row_security.sql).
NAMESPACE_SETTING = "memstore.namespace_id"
CEILING_SETTING = "memstore.privacy_ceiling"


def scope_statement(namespace_id: int, privacy_ceiling: int) -> sql.Composed:
    """The literal ``SET LOCAL`` statements that declare a transaction's namespace and ceiling.

    SET takes no bound parameters, so the values are rendered as quoted
    literals — and only from validated integers, never from a name.

    >>> scope_statement(42, 3).as_string(None)
    "SET LOCAL memstore.namespace_id = '42'; SET LOCAL memstore.privacy_ceiling = '3'"
    """
    return sql.SQL("; ").join(set_local(scope_settings(namespace_id, privacy_ceiling)))


# A setting's name as SET accepts it unquoted: memstore's own constants only.
_SETTING_NAME = re.compile(r"[a-z_]+(\.[a-z_]+)?")


def set_local(settings: Mapping[str, str]) -> list[sql.Composed]:
    """One literal ``SET LOCAL`` statement per setting, to queue one by one in a pipeline.

    Literal statements, never ``set_config()``: a distributed PostgreSQL
    (Citus, ``citus.propagate_set_commands = 'local'``) forwards ``SET LOCAL``
    to its workers, where the row-level policies and the HNSW scans run, and
    does not forward ``set_config()`` (docs/security.md). The values come
    from checked integers (:func:`scope_settings`) or memstore's own search
    settings, rendered as quoted literals.

    >>> [s.as_string(None) for s in set_local({"hnsw.ef_search": "40"})]
    ["SET LOCAL hnsw.ef_search = '40'"]
    """
    return [_set_local_statement(name, value) for name, value in settings.items()]


@functools.lru_cache(maxsize=1024)
def _set_local_statement(name: str, value: str) -> sql.Composed:
    """One ``SET LOCAL``, composed once per (setting, value): every recall sends four."""
    if not _SETTING_NAME.fullmatch(name):
        raise ValueError(f"not a setting memstore sets: {name!r}")
    return sql.SQL("SET LOCAL {} = {}").format(sql.SQL(name), sql.Literal(value))


def scope_settings(namespace_id: int, privacy_ceiling: int) -> dict[str, str]:
    """The settings that declare a transaction's namespace and ceiling, from checked ints."""
    for value, what in ((namespace_id, "namespace id"), (privacy_ceiling, "privacy ceiling")):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"the {what} must be an int, not {type(value).__name__}")
    # 0 names no namespace (identity ids start at 1): a read of a namespace
    # nobody has written to yet runs scoped to it and finds nothing.
    if namespace_id < 0:
        raise ValueError(f"a namespace id is not negative, not {namespace_id}")
    return {NAMESPACE_SETTING: str(namespace_id), CEILING_SETTING: str(privacy_ceiling)}


@contextmanager
def namespace_transaction(
    engine: Engine, namespace_id: int, *, privacy_ceiling: int | None = None
) -> Iterator[Connection]:
    """:func:`transaction`, scoped to one namespace for row-level security.

    Its first statement declares the namespace and the caller's privacy
    ceiling (default: every level) with ``SET LOCAL`` — never session state,
    so a pooled connection cannot carry them into another transaction. Roles
    that do not own the tables (``memstore_app``, ``memstore_reader``) then
    see and change only this namespace's rows, and nodes up to the ceiling.
    Every namespace-scoped transaction of the service opens here, or in
    :func:`checked_namespace_transaction`: BEGIN and the scope are one round trip.
    """
    with checked_namespace_transaction(engine, namespace_id, privacy_ceiling=privacy_ceiling) as (
        conn,
        _,
    ):
        yield conn


@contextmanager
def checked_namespace_transaction(
    engine: Engine,
    namespace_id: int,
    *,
    privacy_ceiling: int | None = None,
    check: Statement | None = None,
) -> Iterator[tuple[Connection, list[dict[str, Any]]]]:
    """:func:`namespace_transaction` whose opening (BEGIN, the scope's ``SET LOCAL``s
    and the ``check`` statement, if any) is one round trip; the connection and the
    check's rows.

    The transaction of :func:`pipelined_namespace_transaction` (the connection in
    autocommit mode, BEGIN and COMMIT sent explicitly), so statements run on the
    connection as in any transaction: committed on leaving the block, rolled back on
    an error, which leaves as a :class:`~memstore.errors.MemstoreError` where it came
    from the database.
    """
    with pipelined_namespace_transaction(
        engine, namespace_id, privacy_ceiling=privacy_ceiling
    ) as tx:
        rows: list[dict[str, Any]] = []
        with tx.raw.cursor(row_factory=dict_row) as cursor:
            with tx.pipeline():
                if check is not None:
                    cursor.execute(check[0], check[1])
            if check is not None:
                rows = cursor.fetchall()
        yield tx.conn, rows


def declare_scope(conn: Connection, namespace_id: int, privacy_ceiling: int | None) -> None:
    """Declare the namespace and privacy ceiling (default: every level) of ``conn``'s open
    transaction: its first statement, before any read or write of the namespace."""
    ceiling = PRIVACY_MAX if privacy_ceiling is None else privacy_ceiling
    raw = conn.connection.driver_connection
    assert raw is not None
    try:
        raw.execute(scope_statement(namespace_id, ceiling))
    except psycopg.Error as exc:
        raise translate_db_error(exc) from exc


class PipelinedTransaction:
    """A namespace-scoped transaction whose opening and closing ride with its statements.

    See :func:`pipelined_namespace_transaction`. ``conn`` is usable for any
    statement once the transaction has started (:meth:`start`, or a first
    :meth:`pipeline`).
    """

    def __init__(self, conn: Connection, namespace_id: int, privacy_ceiling: int) -> None:
        raw = conn.connection.driver_connection
        assert raw is not None
        self.conn = conn
        self.raw: psycopg.Connection[Any] = raw
        self._scope = set_local(scope_settings(namespace_id, privacy_ceiling))
        self.started = False
        self.committed = False

    def start(self) -> None:
        """Open the transaction now (one round trip), if no pipeline has opened it yet."""
        if not self.started:
            with self.pipeline():
                pass

    @contextmanager
    def pipeline(self, *, commit: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """psycopg's pipeline mode on the raw connection: what the block queues is sent at
        once and answered by one wait for the server.

        The first pipeline begins with BEGIN and the scope (the literal ``SET
        LOCAL`` statements of :func:`scope_statement`, one statement each); with
        ``commit`` the pipeline ends with COMMIT. Cursors used in the block
        hold their results once it has ended.
        """
        raw = self.raw
        refused: psycopg.Error | None = None
        try:
            with raw.pipeline():
                try:
                    if not self.started:
                        raw.execute("BEGIN")
                        for statement in self._scope:
                            raw.execute(statement)
                        self.started = True
                    yield raw
                    if commit:
                        raw.execute("COMMIT")
                        self.committed = True
                except psycopg.Error as exc:
                    # Kept for below: leaving the block with it would make the
                    # pipeline log its own "aborted" error on the way out.
                    refused = exc
        except psycopg.Error as exc:
            refused = refused or exc
        if refused is not None:
            self.committed = False
            raise refused

    def rows(self, statements: Sequence[Statement], *, commit: bool) -> list[list[dict[str, Any]]]:
        """The rows of each of ``statements``, sent in one pipeline (with BEGIN and the scope
        if the transaction has not started; with COMMIT if ``commit``): one wait for the
        server."""
        cursors = [cursor_for(self.raw, query) for query, _ in statements]
        try:
            with self.pipeline(commit=commit):
                for cursor, (query, params) in zip(cursors, statements, strict=True):
                    cursor.execute(*bound(query, params), binary=binary_rows(query))
            return [cursor.fetchall() for cursor in cursors]
        finally:
            for cursor in cursors:
                cursor.close()


@contextmanager
def pipelined_namespace_transaction(
    engine: Engine, namespace_id: int, *, privacy_ceiling: int | None = None
) -> Iterator[PipelinedTransaction]:
    """:func:`namespace_transaction` for a read of a few dependent statements.

    The same transaction (the same scope, as literal ``SET LOCAL``s first),
    but BEGIN and the scope are queued with the first statement and COMMIT
    with the last, in psycopg's pipeline mode: ``ns.activate(seeds=…)``
    waits twice for the server (the pull; working memory's rows and COMMIT)
    instead of five times. Committed on leaving the block if the last
    pipeline did not; rolled back on an error, which leaves as a
    :class:`~memstore.errors.MemstoreError` where it came from the database.
    """
    ceiling = PRIVACY_MAX if privacy_ceiling is None else privacy_ceiling
    with engine.connect() as conn:
        tx = PipelinedTransaction(conn, namespace_id, ceiling)
        raw = tx.raw
        raw.autocommit = True  # the pipelines carry BEGIN and COMMIT
        try:
            yield tx
            if tx.started and not tx.committed:
                raw.execute("COMMIT")
        except BaseException as exc:
            if raw.closed or raw.broken:
                conn.invalidate()  # a dead connection must not go back to the pool
            elif raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                raw.execute("ROLLBACK")
            if isinstance(exc, (DBAPIError, psycopg.Error)):
                raise translate_db_error(exc) from exc
            raise
        finally:
            if not raw.closed and raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                raw.autocommit = False
            else:
                conn.invalidate()  # neither closed cleanly nor reusable


def in_one_round_trip(
    engine: Engine,
    namespace_id: int,
    query: sql.SQL | sql.Composed | Compiled | LiteralString | bytes,
    params: Mapping[str, Any],
    *,
    privacy_ceiling: int | None = None,
    settings: Mapping[str, str] | None = None,
    prepare: bool = False,
) -> list[dict[str, Any]]:
    """One statement in its own namespace-scoped transaction, in one round trip.

    :func:`pipelined_namespace_transaction` with one pipeline: BEGIN, the
    namespace and ceiling, then ``settings`` (all transaction-local), the
    statement and COMMIT travel together: one wait for the server instead of
    five. On a loaded machine each wait costs more than the statement itself
    (docs/recall.md).
    Parameters are bound on the server (vectors in binary); ``prepare`` keeps
    the statement prepared on the connection, so a repeated statement is not
    parsed again (docs/operations.md). Recall reads and ``remember`` writes
    this way. Rows come back as dicts; errors leave as
    :class:`~memstore.errors.MemstoreError` and the transaction is rolled back.
    """
    (rows,) = statements_in_one_round_trip(
        engine,
        namespace_id,
        [(query, params)],
        privacy_ceiling=privacy_ceiling,
        settings=settings,
        prepare=prepare,
    )
    return rows


def statements_in_one_round_trip(
    engine: Engine,
    namespace_id: int,
    statements: Sequence[Statement],
    *,
    privacy_ceiling: int | None = None,
    settings: Mapping[str, str] | None = None,
    prepare: bool = False,
) -> list[list[dict[str, Any]]]:
    """:func:`in_one_round_trip` for a few independent statements: they share the
    transaction (one snapshot) and the one wait for the server; the rows of each, in
    order. A check that travels beside a read (the namespace's name, say) is answered
    with it and costs no round trip of its own."""
    with pipelined_namespace_transaction(
        engine, namespace_id, privacy_ceiling=privacy_ceiling
    ) as tx:
        cursors = [cursor_for(tx.raw, query) for query, _ in statements]
        try:
            with tx.pipeline(commit=True) as raw:
                for statement in set_local(settings or {}):
                    raw.execute(statement)
                for cursor, (query, params) in zip(cursors, statements, strict=True):
                    binary = binary_rows(query)
                    cursor.execute(*bound(query, params), prepare=prepare, binary=binary)
            found: list[list[dict[str, Any]]] = [cursor.fetchall() for cursor in cursors]
        finally:
            for cursor in cursors:
                cursor.close()
    return found


# Whether the connected role is confined by row-level security, per engine: a
# role's ownership and attributes do not change while a store is open.
_CONFINED: weakref.WeakKeyDictionary[Engine, bool] = weakref.WeakKeyDictionary()
_CONFINED_SQL = """
SELECT NOT (r.rolsuper OR r.rolbypassrls
            OR (pg_has_role(current_user, c.relowner, 'USAGE') AND NOT c.relforcerowsecurity))
FROM pg_catalog.pg_roles r, pg_catalog.pg_class c
WHERE r.rolname = current_user AND c.oid = 'memstore.nodes'::regclass
"""


def confined(conn: Connection) -> bool:
    """True when row-level security applies to this connection's role (not the owner).

    Queries that must keep an index under a policy take another path then
    (recall's full-text match, sql/08_lexical.sql).
    """
    engine = conn.engine
    if engine not in _CONFINED:
        _CONFINED[engine] = bool(conn.exec_driver_sql(_CONFINED_SQL).scalar_one())
    return _CONFINED[engine]


def known_confined(engine: Engine) -> bool | None:
    """Whether row-level security confines ``engine``'s role, if a statement has told
    (:func:`confined`, :func:`note_confined`); None before."""
    return _CONFINED.get(engine)


def note_confined(engine: Engine, value: bool) -> None:
    """Keep what a statement that read :data:`_CONFINED_SQL`'s verdict told of the role."""
    _CONFINED[engine] = value


def declared_ceiling(conn: Connection) -> int:
    """The privacy ceiling ``conn``'s transaction declared with ``SET LOCAL`` (every level
    when it declared none)."""
    value = conn.execute(
        sa.text("SELECT current_setting(:name, true)"), {"name": CEILING_SETTING}
    ).scalar_one()
    return int(value) if value else PRIVACY_MAX


@contextmanager
def narrowed_ceiling(conn: Connection, ceiling: int, declared: int) -> Iterator[None]:
    """Declare the lower privacy ``ceiling`` (``SET LOCAL``) for the block, then the
    transaction's ``declared`` one again (unless the block ended the transaction)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    (narrow,) = set_local({CEILING_SETTING: str(ceiling)})
    (restore,) = set_local({CEILING_SETTING: str(declared)})
    raw.execute(narrow)
    try:
        yield
    finally:
        if not raw.closed and raw.info.transaction_status.name == "INTRANS":
            raw.execute(restore)
