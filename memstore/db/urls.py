"""Database URLs: the form SQLAlchemy needs, the form libpq needs, the form to print."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from memstore.errors import ConfigurationError

_POSTGRES_DRIVERS = {"postgres", "postgresql", "postgresql+psycopg"}


def _parse(url: str) -> URL:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigurationError(f"not a database URL: {mask(url)!r}") from exc
    if parsed.drivername not in _POSTGRES_DRIVERS:
        raise ConfigurationError(
            f"memstore needs PostgreSQL; got a {parsed.drivername!r} URL"
            " (use postgresql://user:password@host:port/database)"
        )
    return parsed


def sqlalchemy_url(url: str) -> URL:
    """``url`` for SQLAlchemy with the psycopg 3 driver."""
    return _parse(url).set(drivername="postgresql+psycopg")


def libpq_url(url: str) -> str:
    """``url`` as a libpq connection string for plain psycopg."""
    return _parse(url).set(drivername="postgresql").render_as_string(hide_password=False)


def mask(url: str) -> str:
    """``url`` with its password hidden, for messages and status output."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"
