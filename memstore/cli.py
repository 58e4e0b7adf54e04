"""The ``memstore`` command: a thin CLI over the same library.

Every option that a setting backs names its environment variable in ``--help``.
Exit codes: 0 success, 1 a memstore error (or ``db check`` found a mismatch),
2 a usage error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.engine import Engine

from memstore.config import Settings
from memstore.db import migrate
from memstore.db.embedded import EmbeddedServer
from memstore.db.engine import connect_checked, create_engine
from memstore.db.transaction import transaction
from memstore.errors import MemstoreError
from memstore.models import StoreStatus
from memstore.store import MemoryStore

app = typer.Typer(
    help="memstore: a relational memory store for AI agents on PostgreSQL + pgvector.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
db_app = typer.Typer(
    help="Schema migrations: upgrade, inspect and review the database schema.",
    no_args_is_help=True,
)
app.add_typer(db_app, name="db")

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


@dataclass
class _Options:
    settings: Settings


@app.callback()
def _options(
    ctx: typer.Context,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            envvar="MEMSTORE_DATABASE_URL",
            help="PostgreSQL >= 15 with pgvector >= 0.8. Unset: the embedded server.",
            show_default=False,
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar="MEMSTORE_DATA_DIR",
            help="Where the embedded server keeps its data (default ~/.local/share/memstore).",
            show_default=False,
        ),
    ] = None,
) -> None:
    overrides: dict[str, object] = {}
    if database_url:
        overrides["database_url"] = database_url
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    ctx.obj = _Options(settings=Settings(**overrides))  # type: ignore[arg-type]


def _settings(ctx: typer.Context) -> Settings:
    options: _Options = ctx.ensure_object(_Options)
    return options.settings


@contextmanager
def _engine(settings: Settings) -> Iterator[Engine]:
    """An engine on the configured database, without the schema-version guard."""
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


def _print_status(status: StoreStatus) -> None:
    out.print(f"database   {status.database_url}{'  (embedded)' if status.embedded else ''}")
    out.print(f"server     PostgreSQL {status.server_version}, pgvector {status.pgvector_version}")
    out.print(f"schema     revision {status.schema_revision} (package {status.package_revision})")
    table = Table("table", "rows", title="memstore tables", title_justify="left")
    for name, count in status.row_counts.items():
        table.add_row(name, str(count))
    out.print(table)


@app.command()
def status(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> None:
    """Show the server, the schema revision and the row count of every table."""
    with MemoryStore.open(settings=_settings(ctx)) as store:
        result = store.status()
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        _print_status(result)


@app.command()
def demo(ctx: typer.Context) -> None:
    """Start the embedded PostgreSQL (or use the configured one), migrate it, show status."""
    settings = _settings(ctx)
    where = "the configured database" if settings.database_url else str(settings.data_dir)
    out.print(f"memstore demo: opening the store in {where}")
    with MemoryStore.open(settings=settings) as store:
        _print_status(store.status())


def _migrate(ctx: typer.Context, step: Callable[[Engine, str], None], revision: str) -> None:
    with _engine(_settings(ctx)) as engine:
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
    _migrate(ctx, migrate.upgrade, revision)


@db_app.command("downgrade")
def db_downgrade(
    ctx: typer.Context,
    revision: Annotated[str, typer.Argument(help="Target revision; 'base' removes the tables.")],
) -> None:
    """Migrate the database schema down to a revision (for rollbacks; drops data)."""
    _migrate(ctx, migrate.downgrade, revision)


@db_app.command("current")
def db_current(ctx: typer.Context) -> None:
    """Print the database's schema revision and the package's."""
    with _engine(_settings(ctx)) as engine, transaction(engine) as conn:
        current = migrate.current_revision(conn)
    out.print(f"database revision: {current or 'none'}")
    out.print(f"package revision:  {migrate.head_revision()}")


@db_app.command("check")
def db_check(ctx: typer.Context) -> None:
    """Exit 1, naming both revisions, unless the database is at the package's revision."""
    with _engine(_settings(ctx)) as engine, transaction(engine) as conn:
        migrate.require_current(conn)
    out.print(f"database schema is current (revision {migrate.head_revision()})")


@db_app.command("sql")
def db_sql(
    start: Annotated[
        str | None,
        typer.Option("--from", help="Revision the database is at; omit for an empty database."),
    ] = None,
    end: Annotated[str, typer.Option("--to", help="Target revision.")] = "head",
) -> None:
    """Print the upgrade as SQL for a DBA to review, without connecting to any database."""
    sys.stdout.write(migrate.offline_sql(start, end))


def main() -> None:
    """Entry point of the ``memstore`` console script."""
    try:
        app()
    except MemstoreError as exc:
        err.print(f"error: {exc}", highlight=False)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
