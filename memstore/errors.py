"""Every error memstore raises, and the one place driver errors are translated.

All exceptions derive from :class:`MemstoreError`. Database refusals that the
schema itself raises (the append-only law, supersession and tombstone rules,
proposal transitions, redaction) carry a dedicated SQLSTATE of class ``MS``;
:func:`translate_db_error` maps them — by SQLSTATE, never by the shard-specific
table name a distributed PostgreSQL would report — to the named errors below.
"""

from __future__ import annotations

from typing import Any

# SQLSTATEs raised by the SQL in sql/. Class "MS" is not used by PostgreSQL.
SQLSTATE_IMMUTABLE = "MS001"
SQLSTATE_SUPERSESSION = "MS002"
SQLSTATE_TOMBSTONE = "MS003"
SQLSTATE_PROPOSAL = "MS004"
SQLSTATE_REDACTION = "MS005"


class MemstoreError(Exception):
    """Root of every error memstore raises."""


class ConfigurationError(MemstoreError):
    """The settings or arguments cannot describe a working store."""


class DatabaseUnavailableError(MemstoreError):
    """The PostgreSQL server cannot be reached or started."""


class UnsupportedServerError(MemstoreError):
    """The server is reachable but too old, or lacks the pgvector extension."""


class SchemaVersionError(MemstoreError):
    """The database schema is not at the revision this package expects.

    ``database_revision`` is ``None`` for a database that was never migrated.
    """

    def __init__(self, message: str, *, database_revision: str | None, package_revision: str):
        super().__init__(message)
        self.database_revision = database_revision
        self.package_revision = package_revision


class DatabaseError(MemstoreError):
    """The database rejected a statement for a reason memstore has no name for.

    ``sqlstate`` and ``constraint`` come from the server's diagnostics.
    """

    def __init__(self, message: str, *, sqlstate: str | None = None, constraint: str | None = None):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.constraint = constraint


class DatabaseRefusal(MemstoreError):
    """The database refused a change that its own rules forbid.

    ``table`` is the table the refusal came from (as PostgreSQL reports it) and
    ``hint`` the sanctioned alternative, when the schema gives one.
    """

    def __init__(self, message: str, *, table: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.table = table
        self.hint = hint


class ImmutableRecordError(DatabaseRefusal):
    """An UPDATE, DELETE or TRUNCATE hit an append-only table."""


class SupersessionError(ImmutableRecordError):
    """A node was superseded twice, or into a cycle: its lineage is already written."""


class TombstoneError(ImmutableRecordError):
    """A target was tombstoned twice: a tombstone is written once."""


class ProposalTransitionError(ImmutableRecordError):
    """A proposal's status moved other than pending → accepted/rejected, once."""


class RedactionError(DatabaseRefusal):
    """A redaction named an unknown node, or one that is already redacted."""


class InvalidInputError(MemstoreError, ValueError):
    """An argument is malformed or out of range; nothing was written.

    ``field`` names the offending argument when there is one.
    """

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.field = field


class ContentTooLargeError(InvalidInputError):
    """Content is larger than ``MEMSTORE_MAX_CONTENT_BYTES``."""

    def __init__(self, message: str, *, size: int, limit: int):
        super().__init__(message, field="content")
        self.size = size
        self.limit = limit


class DataTooLargeError(InvalidInputError):
    """A JSON document (a memory's ``data``) is larger than its limit, e.g.
    ``MEMSTORE_MAX_DATA_BYTES``; ``limit`` is that limit in bytes."""

    def __init__(self, message: str, *, limit: int, field: str = "data"):
        super().__init__(message, field=field)
        self.limit = limit


class DimensionMismatchError(InvalidInputError):
    """A vector's length differs from the embedder's dimensions."""

    def __init__(self, message: str, *, expected: int, got: int):
        super().__init__(message, field="embedding")
        self.expected = expected
        self.got = got


class NotFoundError(MemstoreError, LookupError):
    """A node or edge does not exist in this namespace."""

    def __init__(self, message: str, *, namespace: str, target_id: int):
        super().__init__(message)
        self.namespace = namespace
        self.target_id = target_id


class NodeNotFoundError(NotFoundError):
    """No node with this id exists in this namespace."""


class EdgeNotFoundError(NotFoundError):
    """No edge with this id exists in this namespace."""


class EntryNotFoundError(MemstoreError, LookupError):
    """A tier has no current entry under this key (a pin, a procedure name)."""

    def __init__(self, message: str, *, namespace: str, tier: str, key: str):
        super().__init__(message)
        self.namespace = namespace
        self.tier = tier
        self.key = key


class ProcedureNotFoundError(EntryNotFoundError):
    """No current procedure has this name in this namespace."""

    def __init__(self, message: str, *, namespace: str, name: str):
        super().__init__(message, namespace=namespace, tier="procedures", key=name)
        self.name = name


class CrossNamespaceError(InvalidInputError):
    """An edge would join nodes of two namespaces: links never cross namespaces.

    No longer raised by the service (kept for callers that catch it): a node of
    another namespace is answered with :class:`NodeNotFoundError`, exactly like
    an id never used, so an error never tells that it exists (docs/security.md).
    """


class NodeStateError(MemstoreError):
    """The node exists but its state forbids the operation.

    ``current_id`` names the node's current version when it was superseded.
    """

    def __init__(self, message: str, *, node_id: int, current_id: int | None = None):
        super().__init__(message)
        self.node_id = node_id
        self.current_id = current_id


class NodeSupersededError(NodeStateError):
    """The node was revised; act on its current version instead."""


class NodeTombstonedError(NodeStateError):
    """The node was forgotten."""


class NodeRedactedError(NodeStateError):
    """The node's content was erased."""


class ProtectedNodeError(NodeStateError):
    """The node is protected (identity, values): only ``ns.cultivate(...)`` may change it."""


class LifecycleRecordError(InvalidInputError):
    """A direct verb (remember, revise, forget) aimed at a lifecycle record or the policy.

    Lifecycle records (short-term, durable, incubation, identity, intervention,
    agency, cluster) and the namespace policy change through lifecycle
    operations only; ``use`` names the one to use (docs/lifecycle.md).
    """

    def __init__(self, message: str, *, field: str, use: str, node_id: int | None = None):
        super().__init__(message, field=field)
        self.use = use
        self.node_id = node_id


class PolicyRefusedError(InvalidInputError):
    """The namespace policy refuses the write (e.g. a kind in ``refused_kinds``)."""


class ProposalNotFoundError(NotFoundError):
    """No proposal with that id in this namespace."""


class OperationRejectedError(MemstoreError):
    """The law rejected an operation; nothing was written.

    ``receipt`` is the :class:`~memstore.law.receipt.Receipt` with each reason.
    """

    def __init__(self, message: str, *, receipt: Any):
        super().__init__(message)
        self.receipt = receipt


class SleepResidueError(OperationRejectedError):
    """A forced sleep left short-term memories unaccounted for; nothing was written.

    ``residue`` lists their ids.
    """

    def __init__(self, message: str, *, receipt: Any, residue: list[int]):
        super().__init__(message, receipt=receipt)
        self.residue = residue


class StoreClosedError(MemstoreError):
    """The store was used after :meth:`MemoryStore.close`."""


_REFUSALS: dict[str, type[DatabaseRefusal]] = {
    SQLSTATE_IMMUTABLE: ImmutableRecordError,
    SQLSTATE_SUPERSESSION: SupersessionError,
    SQLSTATE_TOMBSTONE: TombstoneError,
    SQLSTATE_PROPOSAL: ProposalTransitionError,
    SQLSTATE_REDACTION: RedactionError,
}

# Unique indexes that back a trigger's check under concurrency: when two
# writers race past the trigger, the index refuses the loser with 23505.
_UNIQUE_BACKSTOPS: dict[str, type[DatabaseRefusal]] = {
    "uq_supersessions_old": SupersessionError,
    "uq_tombstones_node": TombstoneError,
    "uq_tombstones_edge": TombstoneError,
    "uq_redactions_node": RedactionError,
}


def _driver_error(exc: BaseException) -> Any:
    """The psycopg error inside ``exc`` (SQLAlchemy wraps it in ``.orig``)."""
    return getattr(exc, "orig", None) or exc


def translate_db_error(exc: BaseException) -> MemstoreError:
    """The memstore error for a driver (or SQLAlchemy-wrapped driver) error.

    The schema's refusals get their named class; a lost or refused connection
    becomes :class:`DatabaseUnavailableError`; anything else
    :class:`DatabaseError`. Callers raise the result ``from exc`` so the
    driver's trace stays attached.
    """
    # Imported here, not at the top: this module is a leaf every layer (and
    # the CLI's error handler) imports, and a driver error means psycopg is
    # loaded already.
    import psycopg

    err = _driver_error(exc)
    sqlstate = getattr(err, "sqlstate", None)
    diag = getattr(err, "diag", None)
    table = getattr(diag, "table_name", None) if diag is not None else None
    hint = getattr(diag, "message_hint", None) if diag is not None else None
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    message = primary or str(err).strip()
    if sqlstate in _REFUSALS:
        return _REFUSALS[sqlstate](message, table=table, hint=hint)
    constraint = getattr(diag, "constraint_name", None) if diag is not None else None
    if sqlstate == "23505" and constraint in _UNIQUE_BACKSTOPS:
        return _UNIQUE_BACKSTOPS[constraint](message, table=table, hint=hint)
    lost = sqlstate is None and isinstance(err, psycopg.OperationalError | psycopg.InterfaceError)
    if lost or (sqlstate is not None and sqlstate.startswith(("08", "57P"))):
        # Connection exceptions and operator intervention (server shutting down).
        return DatabaseUnavailableError(f"the database connection failed: {message}")
    return DatabaseError(message, sqlstate=sqlstate, constraint=constraint)


class AuthenticationError(MemstoreError):
    """No API key was presented, or it is unknown, revoked or expired (HTTP 401).

    ``reason`` is one of ``missing``, ``malformed``, ``unknown``, ``revoked``,
    ``expired``; the message never repeats the secret.
    """

    def __init__(self, message: str, *, reason: str):
        super().__init__(message)
        self.reason = reason


class PermissionDeniedError(MemstoreError):
    """The API key lacks the scope an action needs (HTTP 403); ``scope`` names it."""

    def __init__(self, message: str, *, scope: str):
        super().__init__(message)
        self.scope = scope


class KeyNotFoundError(MemstoreError, LookupError):
    """No API key has this id."""

    def __init__(self, message: str, *, key_id: int):
        super().__init__(message)
        self.key_id = key_id


class RateLimitedError(MemstoreError):
    """An API key sent more requests than its rate allows (HTTP 429).

    ``retry_after`` is the number of seconds until the next request is admitted.
    """

    def __init__(self, message: str, *, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after


class SnapshotFileError(InvalidInputError):
    """An export file cannot be restored: missing or unreadable, not a memstore export,
    another format version, a line that is not a JSON object or is out of order, or a
    file cut short. ``line`` is the 1-based number of the offending line, when there is
    one. Nothing was written."""

    def __init__(self, message: str, *, line: int | None = None):
        super().__init__(message, field="file")
        self.line = line


class NamespaceNotEmptyError(MemstoreError):
    """A restore was aimed at a namespace that already holds memories (it rebuilds only
    into an empty or absent one); ``namespace`` names it. Nothing was written."""

    def __init__(self, message: str, *, namespace: str):
        super().__init__(message)
        self.namespace = namespace


class RestoreNotPermittedError(MemstoreError):
    """The connected role may not restore: only the tables' owner (the migrating role),
    logged in as itself, can write rows with their original times (docs/security.md,
    "Restore keeps the times"). Nothing was written."""
