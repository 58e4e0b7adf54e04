"""The ``memstore`` command: a thin CLI over the same library.

Every option that a setting backs names its environment variable in ``--help``.
Exit codes: 0 success, 1 a memstore error (or ``db check`` found a mismatch),
2 a usage error.

**Commands stay lazy.** ``memstore --help`` (and every ``memstore CMD --help``)
imports this package and every command module, and typer reads each command's
signature, so it answers in well under a second only while those modules
import nothing heavy. A command module imports at its top only the standard
library, typer, rich and ``memstore.cli.common`` / ``memstore.errors``;
everything else (the store, the settings, pydantic models, SQLAlchemy,
psycopg, numpy, an extra's packages such as a web server) is imported inside
the command's body, and names needed only in annotations of helpers go under
``if TYPE_CHECKING:``. The annotations of a command's own parameters are read
at run time, so they use only those light names (``Annotated[str,
typer.Option(...)]``, ``int``, ``datetime``, the options of ``common``).
Register a new command here with one line, like the others.
tests/acceptance/test_cli_startup.py runs every command's ``--help`` and fails
when one of them imports a heavy module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from memstore.cli import activation, lifecycle, maintenance, memory, tiers
from memstore.cli import graph as graph_cli
from memstore.cli import mcp as mcp_command
from memstore.cli import server as server_cli
from memstore.cli import snapshot as snapshot_cli
from memstore.cli.common import (
    CeilingOption,
    app,
    err,
    open_store,
    out,
    print_json,
    settings_of,
)
from memstore.cli.db import db_app
from memstore.errors import MemstoreError

if TYPE_CHECKING:
    from memstore.models import StoreStatus

app.add_typer(db_app, name="db")
memory.register(app)
activation.register(app)
tiers.register(app)
lifecycle.register(app)
server_cli.register(app)
mcp_command.register(app)
maintenance.register(app)
graph_cli.register(app)
snapshot_cli.register(app)


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
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="Summarise this namespace instead of the store."),
    ] = None,
    privacy_ceiling: CeilingOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> None:
    """Show the server, schema revision and row counts; with -n, one namespace's tiers."""
    with open_store(ctx) as store:
        if namespace is not None:
            summary = store.namespace(namespace).summary(privacy_ceiling=privacy_ceiling)
            print_json(summary) if as_json else print(summary.text())
            return
        result = store.status(privacy_ceiling=privacy_ceiling)
    if as_json:
        print_json(result)
    else:
        _print_status(result)


@app.command()
def namespaces(
    ctx: typer.Context,
    privacy_ceiling: CeilingOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List the namespaces, with their node counts (an operator's command: a role that
    row-level security confines sees none)."""
    with open_store(ctx) as store:
        found = store.namespaces(privacy_ceiling=privacy_ceiling)
    if as_json:
        print_json(found)
        return
    table = Table("namespace", "nodes", "created", title="namespaces", title_justify="left")
    for info in found:
        table.add_row(info.name, str(info.nodes), f"{info.created_at:%Y-%m-%d %H:%M:%S %Z}")
    out.print(table)


@app.command()
def demo(ctx: typer.Context) -> None:
    """Remember a short scripted agent conversation; show hybrid recall with provenance."""
    settings = settings_of(ctx)
    where = "the configured database" if settings.database_url else str(settings.data_dir)
    out.print(f"memstore demo: opening the store in {where}")
    from memstore.cli.demo import run_demo

    with open_store(ctx) as store:
        _print_status(store.status())
        run_demo(store, out)


def main() -> None:
    """Entry point of the ``memstore`` console script."""
    try:
        app()
    except MemstoreError as exc:
        err.print(f"error: {exc}", highlight=False)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
