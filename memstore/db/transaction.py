"""One transaction, with the database's refusals translated into memstore errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from memstore.errors import translate_db_error


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
