"""Schema migrations: Alembic driven from the package, so a wheel can migrate.

The schema version is a runtime contract: :func:`require_current` refuses a
database whose revision differs from the package's head.
"""

from __future__ import annotations

import functools
import io
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from psycopg import sql
from sqlalchemy.engine import Connection, Engine

from memstore.db.resources import migrations_dir
from memstore.db.schema import SCHEMA
from memstore.db.transaction import transaction
from memstore.errors import ImmutableRecordError, SchemaVersionError

VERSION_TABLE = "alembic_version"


def alembic_config(connection: Connection | None = None, **attributes: Any) -> Config:
    """An Alembic config for the packaged migrations, optionally bound to a connection."""
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    cfg.attributes.update(attributes)
    return cfg


# The packaged migrations cannot change under a running process: their revisions are
# read once (reading the scripts costs ~0.1-0.4 s, paid by every store opened).
@functools.cache
def head_revision() -> str:
    """The revision this package's code expects."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the packaged migrations have no head"
    return head


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at, or ``None`` if it was never migrated."""
    ctx = MigrationContext.configure(
        connection, opts={"version_table_schema": SCHEMA, "version_table": VERSION_TABLE}
    )
    return ctx.get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database up to ``revision`` in one transaction.

    Raises :class:`SchemaVersionError` if a newer memstore already migrated the
    database past anything this package knows.
    """
    with transaction(engine) as conn:
        database_revision = current_revision(conn)
        if database_revision is not None and database_revision not in known_revisions():
            raise SchemaVersionError(
                describe(database_revision, head_revision()),
                database_revision=database_revision,
                package_revision=head_revision(),
            )
        command.upgrade(alembic_config(conn), revision)
    # Connections opened before the vector extension existed lack its adapter.
    engine.dispose()


def downgrade(engine: Engine, revision: str, *, drop_data: bool = False) -> None:
    """Migrate the database down to ``revision`` (``base`` removes memstore's tables).

    Nothing is lost by accident: a downgrade that would drop a table holding rows,
    or a column of one, is rolled back whole and raises
    :class:`~memstore.errors.ImmutableRecordError` naming them, unless
    ``drop_data`` says to go ahead. One that drops only empty tables and code
    (functions, triggers, views) — the rollback of a deploy — needs no flag.
    """
    with transaction(engine) as conn:
        before = _tables(conn)
        command.downgrade(alembic_config(conn), revision)
        lost = _dropped_data(before, _tables(conn))
        if lost and not drop_data:
            raise ImmutableRecordError(
                f"downgrading to {revision} would drop data: {', '.join(lost)};"
                " nothing was changed (pass drop_data=True, `memstore db downgrade"
                " --drop-data`, once an export or a backup holds them)",
                table=lost[0].split(".")[0],
            )
    engine.dispose()


def _tables(conn: Connection) -> dict[str, tuple[bool, frozenset[str]]]:
    """Each table of schema memstore but the version table: whether it holds a row, and
    its columns."""
    raw = conn.connection.driver_connection
    assert raw is not None
    columns: dict[str, set[str]] = {}
    for table, column in raw.execute(
        "SELECT c.relname, a.attname FROM pg_catalog.pg_class c"
        " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND c.relname <> 'alembic_version'"
        "   AND a.attnum > 0 AND NOT a.attisdropped",
        (SCHEMA,),
    ).fetchall():
        columns.setdefault(str(table), set()).add(str(column))
    out = {}
    for table, names in columns.items():
        found = raw.execute(
            sql.SQL("SELECT EXISTS (SELECT FROM {})").format(sql.Identifier(SCHEMA, table))
        ).fetchone()
        out[table] = (bool(found and found[0]), frozenset(names))
    return out


def _dropped_data(
    before: dict[str, tuple[bool, frozenset[str]]], after: dict[str, tuple[bool, frozenset[str]]]
) -> list[str]:
    """The tables that held rows and are gone, and the columns gone from such tables."""
    lost = []
    for table, (held, columns) in sorted(before.items()):
        if not held:
            continue
        if table not in after:
            lost.append(f"table {table}")
        else:
            lost += [f"{table}.{column}" for column in sorted(columns - after[table][1])]
    return lost


def check(engine: Engine) -> None:
    """Raise if the SQLAlchemy metadata and the migrations disagree (``alembic check``)."""
    with transaction(engine) as conn:
        command.check(alembic_config(conn))


def offline_sql(start: str | None = None, end: str = "head") -> str:
    """The upgrade from ``start`` (the empty database) to ``end`` as SQL, without connecting."""
    buffer = io.StringIO()
    cfg = alembic_config()
    cfg.output_buffer = buffer
    command.upgrade(cfg, f"{start}:{end}" if start else end, sql=True)
    return buffer.getvalue()


@functools.cache
def known_revisions() -> frozenset[str]:
    """Every revision this package's migrations define."""
    scripts = ScriptDirectory.from_config(alembic_config())
    return frozenset(script.revision for script in scripts.walk_revisions())


def upgradable(connection: Connection) -> bool:
    """Whether the database is behind the package head on this package's own history.

    A database at a revision the package does not know (a newer memstore
    migrated it) is not upgradable: :func:`require_current` then explains.
    """
    database_revision = current_revision(connection)
    if database_revision == head_revision():
        return False
    return database_revision is None or database_revision in known_revisions()


def describe(database_revision: str | None, package_revision: str) -> str:
    """One sentence naming both revisions and the way forward."""
    if database_revision is None:
        return (
            f"the database has no memstore schema (package revision {package_revision}):"
            " run `memstore db upgrade` (or `alembic upgrade head`)"
        )
    if database_revision not in known_revisions():
        return (
            f"the database schema is at revision {database_revision}, which this memstore"
            f" package (revision {package_revision}) does not know: upgrade the package"
        )
    return (
        f"the database schema is at revision {database_revision} but this memstore package"
        f" needs revision {package_revision}: run `memstore db upgrade`"
        " (or `alembic upgrade head`)"
    )


def require_current(connection: Connection) -> None:
    """Raise :class:`SchemaVersionError` unless the database is at the package head."""
    database_revision = current_revision(connection)
    package_revision = head_revision()
    if database_revision != package_revision:
        raise SchemaVersionError(
            describe(database_revision, package_revision),
            database_revision=database_revision,
            package_revision=package_revision,
        )
