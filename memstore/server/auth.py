"""Who is asking: the API key of a request, as a :class:`Principal`.

Every shell of ``memstore serve`` (the REST routes, MCP at ``/mcp``) calls
:func:`authenticate` with the request's ``Authorization`` header, then
:meth:`Principal.allows` with the namespace it is about to use and
:meth:`Principal.require` with the scope the action needs. Identity comes
from the key, never from an argument (DESIGN §9).

Scopes: ``read`` (get, list, recall, activate, context, status, proposals),
``write`` (remember, revise, forget, link, apply, sleep; it implies ``read``,
since every write answers with what it wrote), ``review`` (accept or reject
proposals), ``erase`` (redact) and ``admin`` (all of them).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from memstore.errors import AuthenticationError, PermissionDeniedError
from memstore.keys import KeyHolder, check_key
from memstore.store import MemoryStore

SCOPES = ("read", "write", "review", "erase", "admin")
# A scope a key holds -> the scopes it grants.
IMPLIED: dict[str, frozenset[str]] = {
    "read": frozenset({"read"}),
    "write": frozenset({"write", "read"}),
    "review": frozenset({"review"}),
    "erase": frozenset({"erase"}),
    "admin": frozenset(SCOPES),
}


@dataclass(frozen=True)
class Principal:
    """The holder of a valid API key: which namespaces it reaches, with which scopes."""

    key_id: int
    name: str | None
    namespace: str | None
    namespace_prefix: str | None
    scopes: frozenset[str]
    expires_at: datetime | None = None

    @classmethod
    def of(cls, holder: KeyHolder) -> Principal:
        """The principal of a key the store has checked."""
        return cls(
            key_id=holder.id,
            name=holder.name,
            namespace=holder.namespace,
            namespace_prefix=holder.namespace_prefix,
            scopes=holder.scopes,
            expires_at=holder.expires_at,
        )

    @property
    def granted(self) -> frozenset[str]:
        """Every scope the key grants, the implied ones included."""
        return frozenset().union(*(IMPLIED.get(scope, frozenset()) for scope in self.scopes))

    def allows(self, namespace: str) -> bool:
        """Whether the key reaches ``namespace``: its own, or one under its prefix.

        Compared as plain strings (no pattern), so ``_`` and ``%`` are characters.
        """
        if self.namespace is not None:
            return namespace == self.namespace
        if self.namespace_prefix is not None:
            return namespace.startswith(self.namespace_prefix)
        return False

    def has(self, scope: str) -> bool:
        """Whether the key grants ``scope`` (directly or implied)."""
        return scope in self.granted

    def require(self, scope: str) -> None:
        """Raise :class:`~memstore.errors.PermissionDeniedError` unless the key grants ``scope``."""
        if not self.has(scope):
            raise PermissionDeniedError(f"this API key lacks the {scope!r} scope", scope=scope)


def bearer_secret(authorization: str | None) -> str:
    """The secret of an ``Authorization: Bearer <secret>`` header."""
    if not authorization or not authorization.strip():
        raise AuthenticationError(
            "an API key is required: Authorization: Bearer msk_…", reason="missing"
        )
    scheme, _, secret = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise AuthenticationError(
            "the Authorization header must be 'Bearer <API key>'", reason="malformed"
        )
    return secret.strip()


def authenticate(store: MemoryStore, authorization: str | None) -> Principal:
    """The principal of an ``Authorization`` header, or
    :class:`~memstore.errors.AuthenticationError` (no, malformed, unknown,
    revoked or expired key: HTTP 401). The secret never appears in the error."""
    return Principal.of(check_key(store.engine, bearer_secret(authorization)))


# Keys kept by a KeyCache at most; the least recently used goes first.
KEY_CACHE_MAX = 10_000


class KeyCache:
    """Principals of recently checked keys, for ``ttl`` seconds (0: none kept).

    Entries are found by the sha256 of the Authorization header, so the cache
    holds no secret; a key past its ``expires_at`` is never served from it.
    """

    def __init__(self, ttl: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[bytes, tuple[Principal, float]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _digest(authorization: str) -> bytes:
        return hashlib.sha256(authorization.encode()).digest()

    def get(self, authorization: str | None) -> Principal | None:
        """The principal checked for this header within ``ttl`` seconds, if any."""
        if self.ttl <= 0 or not authorization:
            return None
        digest = self._digest(authorization)
        with self._lock:
            found = self._entries.get(digest)
            if found is None:
                return None
            principal, checked = found
            expired = principal.expires_at is not None and principal.expires_at <= datetime.now(UTC)
            if expired or self._clock() - checked > self.ttl:
                del self._entries[digest]
                return None
            return principal

    def put(self, authorization: str | None, principal: Principal) -> None:
        """Keep the principal just checked for this header."""
        if self.ttl <= 0 or not authorization:
            return
        with self._lock:
            self._entries[self._digest(authorization)] = (principal, self._clock())
            self._entries.move_to_end(self._digest(authorization))
            while len(self._entries) > KEY_CACHE_MAX:
                self._entries.popitem(last=False)


__all__ = ["IMPLIED", "SCOPES", "KeyCache", "Principal", "authenticate", "bearer_secret"]
