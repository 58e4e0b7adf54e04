"""API keys of ``memstore serve``: create, list, revoke, and check a presented secret.

A key is ``msk_`` followed by 43 URL-safe characters (256 random bits). The
store keeps its first :data:`LOOKUP_CHARS` characters (to find the row) and the
sha256 of the whole secret; the secret itself is returned once, by
:func:`create_key`. Keys are bound to one namespace or to an explicit
namespace prefix, never to every namespace (docs/server.md, "Keys").

Creating and revoking are the owner's actions (``memstore keys``, connected as
the migrating role); :func:`check_key` is what the server runs per request, as
``memstore_app`` too, through ``memstore.authenticate_key`` (sql/10_api_keys.sql).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Annotated, Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from sqlalchemy.engine import Engine

from memstore.db.schema import API_SCOPES, api_key_revocations, api_keys
from memstore.db.transaction import transaction
from memstore.errors import AuthenticationError, InvalidInputError, KeyNotFoundError
from memstore.services.scope import check_namespace_name

KEY_MARKER = "msk_"
# Characters of the random part kept in clear to find a key's row: 72 bits, so
# two keys practically never share one (a unique index refuses it if they do).
LOOKUP_CHARS = 12
SECRET_BYTES = 32
# The scopes a key gets when its creator names none.
DEFAULT_SCOPES = ("read", "write")
MAX_EXPIRY_DAYS = 36500
NAME_MAX_CHARS = 200

Scope = Annotated[str, Field(pattern="^(" + "|".join(API_SCOPES) + ")$")]


class KeySpec(BaseModel):
    """What a new key may do: its binding, scopes, label and lifetime."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str | None = None
    namespace_prefix: str | None = None
    scopes: tuple[Scope, ...] = DEFAULT_SCOPES
    name: str | None = Field(default=None, min_length=1, max_length=NAME_MAX_CHARS)
    expires_in_days: float | None = Field(default=None, gt=0, le=MAX_EXPIRY_DAYS)

    @field_validator("namespace", "namespace_prefix")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        return None if value is None else check_namespace_name(value)

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("a key needs at least one scope")
        return tuple(scope for scope in API_SCOPES if scope in value)  # canonical order

    @model_validator(mode="after")
    def _one_binding(self) -> KeySpec:
        if (self.namespace is None) == (self.namespace_prefix is None):
            raise ValueError(
                "a key is bound to exactly one of namespace or namespace_prefix"
                " (there is no key for every namespace)"
            )
        return self


class ApiKey(BaseModel):
    """A key as ``memstore keys list`` shows it: never its secret."""

    id: int
    prefix: str = Field(description="The key's first characters, to recognise it (msk_…).")
    name: str | None
    namespace: str | None
    namespace_prefix: str | None
    scopes: list[str]
    expires_at: datetime | None
    created_at: datetime
    created_by: str
    revoked_at: datetime | None = None


class CreatedKey(ApiKey):
    """A new key with its secret, ``key``: shown this once, stored only as a digest."""

    key: str


class KeyHolder(BaseModel):
    """Who presented a valid key: what the server authorises a request with."""

    model_config = ConfigDict(frozen=True)

    id: int
    name: str | None
    namespace: str | None
    namespace_prefix: str | None
    scopes: frozenset[str]
    expires_at: datetime | None = None


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def _lookup(secret: str) -> str | None:
    """The lookup part of a well-formed secret, else None."""
    if not secret.startswith(KEY_MARKER):
        return None
    body = secret[len(KEY_MARKER) :]
    if len(body) < LOOKUP_CHARS or len(body) > 128:
        return None
    return body[:LOOKUP_CHARS]


def _as_key(row: Mapping[Any, Any]) -> ApiKey:
    mapping = dict(row)
    mapping["prefix"] = KEY_MARKER + str(mapping.pop("lookup"))
    return ApiKey.model_validate(mapping)


_LISTED = sa.select(
    api_keys.c.id,
    api_keys.c.lookup,
    api_keys.c.name,
    api_keys.c.namespace,
    api_keys.c.namespace_prefix,
    api_keys.c.scopes,
    api_keys.c.expires_at,
    api_keys.c.created_at,
    api_keys.c.created_by,
    api_key_revocations.c.revoked_at,
).select_from(
    api_keys.outerjoin(api_key_revocations, api_key_revocations.c.key_id == api_keys.c.id)
)


def create_key(
    engine: Engine,
    *,
    namespace: str | None = None,
    namespace_prefix: str | None = None,
    scopes: tuple[str, ...] | list[str] = DEFAULT_SCOPES,
    name: str | None = None,
    expires_in_days: float | None = None,
    actor: str = "memstore",
) -> CreatedKey:
    """A new key; its secret (``key``) is in the answer and nowhere else.

    Bound to ``namespace`` exactly, or to every namespace whose name starts
    with ``namespace_prefix``; one of the two, never both.
    """
    try:
        spec = KeySpec(
            namespace=namespace,
            namespace_prefix=namespace_prefix,
            scopes=tuple(scopes),
            name=name,
            expires_in_days=expires_in_days,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise InvalidInputError(f"invalid key: {first['msg']}", field=field) from None
    secret = KEY_MARKER + secrets.token_urlsafe(SECRET_BYTES)
    lookup = _lookup(secret)
    assert lookup is not None
    expires = (
        sa.func.now() + timedelta(days=spec.expires_in_days)
        if spec.expires_in_days is not None
        else None
    )
    with transaction(engine) as conn:
        key_id = conn.execute(
            sa.insert(api_keys)
            .values(
                lookup=lookup,
                secret_hash=_digest(secret),
                name=spec.name,
                namespace=spec.namespace,
                namespace_prefix=spec.namespace_prefix,
                scopes=list(spec.scopes),
                expires_at=expires,
                created_by=actor,
            )
            .returning(api_keys.c.id)
        ).scalar_one()
        row = conn.execute(_LISTED.where(api_keys.c.id == key_id)).mappings().one()
    return CreatedKey(**_as_key(row).model_dump(), key=secret)


def list_keys(engine: Engine) -> list[ApiKey]:
    """Every key, oldest first, revoked ones included; secrets are never stored."""
    with transaction(engine) as conn:
        return [_as_key(row) for row in conn.execute(_LISTED.order_by(api_keys.c.id)).mappings()]


def revoke_key(
    engine: Engine, key_id: int, *, actor: str = "memstore", reason: str | None = None
) -> ApiKey:
    """Revoke a key from now on, by writing its revocation row; revoking twice is a no-op."""
    if isinstance(key_id, bool) or not isinstance(key_id, int) or key_id < 1:
        raise InvalidInputError("a key id is a positive integer", field="key_id")
    with transaction(engine) as conn:
        known = conn.execute(sa.select(api_keys.c.id).where(api_keys.c.id == key_id)).first()
        if known is None:
            raise KeyNotFoundError(f"no API key has id {key_id}", key_id=key_id)
        conn.execute(
            sa.dialects.postgresql.insert(api_key_revocations)
            .values(key_id=key_id, actor=actor, reason=reason)
            .on_conflict_do_nothing(index_elements=["key_id"])
        )
        row = conn.execute(_LISTED.where(api_keys.c.id == key_id)).mappings().one()
    return _as_key(row)


def check_key(engine: Engine, secret: str | None) -> KeyHolder:
    """The holder of ``secret``, or :class:`~memstore.errors.AuthenticationError`.

    Runs as any role, the service's included: ``memstore.authenticate_key``
    answers only when the lookup prefix and the sha256 both match.
    """
    if not secret:
        raise AuthenticationError("an API key is required", reason="missing")
    lookup = _lookup(secret)
    if lookup is None:
        raise AuthenticationError("the API key is malformed", reason="malformed")
    with transaction(engine) as conn:
        row = conn.execute(
            sa.select(sa.text("*")).select_from(
                sa.func.memstore.authenticate_key(lookup, _digest(secret))
            )
        ).first()
    if row is None:
        raise AuthenticationError("the API key is not known", reason="unknown")
    if row.revoked:
        raise AuthenticationError("the API key was revoked", reason="revoked")
    if row.expired:
        raise AuthenticationError("the API key has expired", reason="expired")
    return KeyHolder(
        id=row.id,
        name=row.name,
        namespace=row.namespace,
        namespace_prefix=row.namespace_prefix,
        scopes=frozenset(row.scopes),
        expires_at=row.expires_at,
    )


__all__ = [
    "DEFAULT_SCOPES",
    "KEY_MARKER",
    "ApiKey",
    "CreatedKey",
    "KeyHolder",
    "KeySpec",
    "check_key",
    "create_key",
    "list_keys",
    "revoke_key",
]
