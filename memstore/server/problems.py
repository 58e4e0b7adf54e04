"""Errors as data: every memstore error as an RFC 9457 ``application/problem+json`` body.

One table, :data:`PROBLEMS`, maps each memstore error class to its HTTP status
and a stable ``type`` URI (``urn:memstore:problem:<name>``; docs/server.md lists
them). An error is matched by its most specific class in the table. The body
carries the error's message as ``detail`` and the data the error holds (which
field, which limit, the current version's id); never a stack trace. Errors
that memstore has no name for answer 500 with a fixed text, and are logged.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from memstore import errors

log = logging.getLogger("memstore.server")

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:memstore:problem:"


@dataclass(frozen=True)
class ProblemType:
    status: int
    name: str
    title: str

    @property
    def uri(self) -> str:
        return TYPE_PREFIX + self.name


# Most specific first is not needed: the lookup walks each error's MRO.
PROBLEMS: dict[type[errors.MemstoreError], ProblemType] = {
    errors.MemstoreError: ProblemType(500, "internal", "Internal error"),
    errors.AuthenticationError: ProblemType(401, "unauthenticated", "API key required"),
    errors.PermissionDeniedError: ProblemType(403, "forbidden", "Scope missing"),
    errors.RateLimitedError: ProblemType(429, "rate-limited", "Too many requests"),
    errors.InvalidInputError: ProblemType(422, "invalid-input", "Invalid input"),
    errors.ContentTooLargeError: ProblemType(413, "content-too-large", "Content too large"),
    errors.DataTooLargeError: ProblemType(413, "data-too-large", "Data too large"),
    errors.DimensionMismatchError: ProblemType(422, "dimension-mismatch", "Wrong vector size"),
    errors.CrossNamespaceError: ProblemType(422, "invalid-input", "Invalid input"),
    errors.LifecycleRecordError: ProblemType(422, "lifecycle-record", "Use a lifecycle operation"),
    errors.PolicyRefusedError: ProblemType(422, "policy-refused", "Refused by the policy"),
    errors.NotFoundError: ProblemType(404, "not-found", "Not found"),
    errors.NodeNotFoundError: ProblemType(404, "node-not-found", "Memory not found"),
    errors.EdgeNotFoundError: ProblemType(404, "edge-not-found", "Edge not found"),
    errors.ProposalNotFoundError: ProblemType(404, "proposal-not-found", "Proposal not found"),
    errors.EntryNotFoundError: ProblemType(404, "entry-not-found", "Entry not found"),
    errors.KeyNotFoundError: ProblemType(404, "key-not-found", "API key not found"),
    errors.NodeStateError: ProblemType(409, "node-state", "Memory state forbids this"),
    errors.NodeSupersededError: ProblemType(409, "superseded", "Memory was revised"),
    errors.NodeTombstonedError: ProblemType(409, "tombstoned", "Memory was forgotten"),
    errors.NodeRedactedError: ProblemType(409, "redacted", "Memory was erased"),
    errors.ProtectedNodeError: ProblemType(409, "protected", "Memory is protected"),
    errors.DatabaseRefusal: ProblemType(409, "conflict", "Refused by the store's rules"),
    errors.SupersessionError: ProblemType(409, "superseded", "Memory was revised"),
    errors.TombstoneError: ProblemType(409, "tombstoned", "Already forgotten"),
    errors.ProposalTransitionError: ProblemType(409, "proposal-decided", "Proposal decided"),
    errors.RedactionError: ProblemType(409, "redacted", "Already erased"),
    errors.OperationRejectedError: ProblemType(409, "operation-rejected", "Rejected by the law"),
    errors.SleepResidueError: ProblemType(409, "sleep-residue", "Sleep left memories behind"),
    errors.DatabaseUnavailableError: ProblemType(503, "database-unavailable", "Database down"),
    errors.UnsupportedServerError: ProblemType(503, "database-unavailable", "Database down"),
    errors.SchemaVersionError: ProblemType(503, "schema-version", "Schema not current"),
    errors.StoreClosedError: ProblemType(503, "database-unavailable", "Database down"),
    errors.ConfigurationError: ProblemType(500, "configuration", "Server misconfigured"),
    errors.DatabaseError: ProblemType(500, "database-error", "Database error"),
}
NOT_FOUND_ROUTE = ProblemType(404, "no-route", "No such route")
METHOD_NOT_ALLOWED = ProblemType(405, "method-not-allowed", "Method not allowed")
BODY_TOO_LARGE = ProblemType(413, "body-too-large", "Request body too large")
INTERNAL = PROBLEMS[errors.MemstoreError]

# Errors whose message may hold what the database said (SQL, values): replaced.
_OPAQUE = (errors.DatabaseError, errors.ConfigurationError)
# The data an error carries that a client may act on, by attribute name.
_EXTENSIONS = (
    "field",
    "limit",
    "size",
    "expected",
    "got",
    "node_id",
    "current_id",
    "target_id",
    "key_id",
    "scope",
    "use",
    "hint",
    "residue",
    "reason",
)


def problem_type(exc: errors.MemstoreError) -> ProblemType:
    """The problem type of ``exc``: its most specific class in :data:`PROBLEMS`."""
    for cls in type(exc).__mro__:
        if cls in PROBLEMS:
            return PROBLEMS[cls]
    return INTERNAL


def problem(kind: ProblemType, detail: str, **extensions: Any) -> dict[str, Any]:
    """A problem+json body."""
    body: dict[str, Any] = {
        "type": kind.uri,
        "title": kind.title,
        "status": kind.status,
        "detail": detail,
    }
    body.update({key: value for key, value in extensions.items() if value is not None})
    return body


def problem_of(exc: errors.MemstoreError, instance: str | None = None) -> dict[str, Any]:
    """The problem+json body of a memstore error; its message, never its trace."""
    kind = problem_type(exc)
    if isinstance(exc, _OPAQUE):
        log.error("request failed: %s: %s", type(exc).__name__, exc)
        detail = f"the server could not complete the request ({kind.title.lower()})"
    else:
        detail = str(exc)
    extensions: dict[str, Any] = {"instance": instance}
    for name in _EXTENSIONS:
        value = getattr(exc, name, None)
        if isinstance(value, str | int | float | bool | list) and not isinstance(exc, _OPAQUE):
            extensions[name] = value
    if isinstance(exc, errors.RateLimitedError):
        extensions["retry_after"] = max(1, math.ceil(exc.retry_after))
    receipt = getattr(exc, "receipt", None)
    if receipt is not None and hasattr(receipt, "model_dump"):
        extensions["receipt"] = receipt.model_dump(mode="json")
    return problem(kind, detail, **extensions)


__all__ = [
    "BODY_TOO_LARGE",
    "INTERNAL",
    "METHOD_NOT_ALLOWED",
    "NOT_FOUND_ROUTE",
    "PROBLEMS",
    "PROBLEM_JSON",
    "ProblemType",
    "problem",
    "problem_of",
    "problem_type",
]
