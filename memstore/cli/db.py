"""``memstore db``: migrations as an explicit, reviewable deploy step."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from memstore.cli.common import err, out, settings_of

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from memstore.config import Settings

db_app = typer.Typer(
    help="Schema migrations: upgrade, inspect and review the database schema.",
    no_args_is_help=True,
)


@contextmanager
def _engine(settings: Settings) -> Iterator[Engine]:
    """An engine on the configured database, without the schema-version guard."""
    from memstore.db.embedded import EmbeddedServer
    from memstore.db.engine import connect_checked, create_engine

    embedded = None
    url = settings.database_url
    if url is None:
        embedded = EmbeddedServer(settings.data_dir)
        url = embedded.start()
    engine = create_engine(url)
    try:
        connect_checked(engine)
        yield engine
    finally:
        engine.dispose()
        if embedded is not None:
            embedded.stop()


def _migrate(ctx: typer.Context, step: Callable[[Engine, str], None], revision: str) -> None:
    from memstore.db import migrate
    from memstore.db.transaction import transaction

    with _engine(settings_of(ctx)) as engine:
        step(engine, revision)
        with transaction(engine) as conn:
            now = migrate.current_revision(conn)
    out.print(f"database schema at revision {now or 'base'}")


@db_app.command("upgrade")
def db_upgrade(
    ctx: typer.Context,
    revision: Annotated[str, typer.Option(help="Target revision.")] = "head",
) -> None:
    """Migrate the database schema up to a revision (default: the package's head)."""
    from memstore.db import migrate

    _migrate(ctx, migrate.upgrade, revision)


@db_app.command("downgrade")
def db_downgrade(
    ctx: typer.Context,
    revision: Annotated[str, typer.Argument(help="Target revision; 'base' removes the tables.")],
    drop_data: Annotated[
        bool,
        typer.Option(
            "--drop-data",
            help="Go ahead when the downgrade drops a table holding rows, or a column of one"
            " (refused otherwise, with nothing changed).",
        ),
    ] = False,
) -> None:
    """Migrate the database schema down to a revision (for rollbacks).

    A downgrade that would drop memories or other rows is refused whole unless
    --drop-data is given; one that drops only code and empty tables runs as is.
    """
    from functools import partial

    from memstore.db import migrate

    _migrate(ctx, partial(migrate.downgrade, drop_data=drop_data), revision)


@db_app.command("current")
def db_current(ctx: typer.Context) -> None:
    """Print the database's schema revision and the package's."""
    from memstore.db import migrate
    from memstore.db.transaction import transaction

    with _engine(settings_of(ctx)) as engine, transaction(engine) as conn:
        current = migrate.current_revision(conn)
    out.print(f"database revision: {current or 'none'}")
    out.print(f"package revision:  {migrate.head_revision()}")


@db_app.command("check")
def db_check(
    ctx: typer.Context,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the findings as JSON on stdout.")
    ] = False,
) -> None:
    """Exit 1 unless the schema is at the package's revision and nothing was tampered with.

    Compares the live database with sql/, the metadata and roles.py: triggers,
    functions (body, SECURITY DEFINER, search_path), row-level security and
    policies, views, columns, constraints and indexes, objects sql/ does not
    define, owners, privileges (PUBLIC, the memstore roles, other roles), role
    attributes, memberships and settings. Each finding is printed with its
    code (docs/security.md lists them and what to do).
    """
    from memstore.db import integrity, migrate
    from memstore.db.transaction import transaction

    with _engine(settings_of(ctx)) as engine, transaction(engine) as conn:
        migrate.require_current(conn)
        found = integrity.findings(conn)
    if as_json:
        report = {
            "revision": migrate.head_revision(),
            "ok": not found,
            "findings": [f.as_dict() for f in found],
        }
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        for finding in found:
            err.print(f"error: {finding}", highlight=False)
    if found:
        raise typer.Exit(1)
    if not as_json:
        out.print(f"database schema is current (revision {migrate.head_revision()})")
        out.print(
            "guards, structure, objects, owners, privileges and roles: all match sql/,"
            " the metadata and roles.py"
        )


@db_app.command("roles")
def db_roles(
    ctx: typer.Context,
    apply: Annotated[
        bool, typer.Option("--apply", help="Run the SQL on the database instead of printing it.")
    ] = False,
) -> None:
    """Print (or --apply) the SQL for memstore_owner, memstore_app and memstore_reader.

    Part 1 (the roles, the vector extension, the owner's right to migrate)
    comes before the first `memstore db upgrade`; part 2 (the service's and
    the reader's privileges on the tables) after every upgrade. --apply runs
    part 1, and part 2 when the schema is at the package's revision, so the
    deploy is: roles --apply, upgrade (as memstore_owner), roles --apply.
    Applying needs a superuser or a role with CREATEROLE (docs/security.md).
    """
    from memstore.db import migrate, roles
    from memstore.db.transaction import transaction

    if not apply:
        sys.stdout.write(roles.roles_sql())
        return
    with _engine(settings_of(ctx)) as engine:
        with transaction(engine) as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            raw.execute(roles.admin_sql().encode())
        out.print(f"roles {', '.join(roles.ROLES)} created or updated")
        with transaction(engine) as conn:
            revision = migrate.current_revision(conn)
            if revision != migrate.head_revision():
                out.print(
                    f"schema at revision {revision or 'none'}, not "
                    f"{migrate.head_revision()}: no table privileges granted yet; run "
                    "`memstore db upgrade` as memstore_owner, then `memstore db roles --apply`"
                    " again"
                )
                return
            raw = conn.connection.driver_connection
            assert raw is not None
            raw.execute(roles.grants_sql().encode())
    out.print("privileges of memstore_app and memstore_reader granted")


@db_app.command("sql")
def db_sql(
    start: Annotated[
        str | None,
        typer.Option("--from", help="Revision the database is at; omit for an empty database."),
    ] = None,
    end: Annotated[str, typer.Option("--to", help="Target revision.")] = "head",
) -> None:
    """Print the upgrade as SQL for a DBA to review, without connecting to any database."""
    from memstore.db import migrate

    sys.stdout.write(migrate.offline_sql(start, end))
