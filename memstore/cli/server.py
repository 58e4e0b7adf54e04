"""``memstore serve`` and ``memstore keys``: the HTTP server and its API keys (docs/server.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from memstore.cli.common import JsonOption, err, open_store, out, print_json, settings_of
from memstore.errors import InvalidInputError

keys_app = typer.Typer(
    help="API keys of `memstore serve`: create (the secret is shown once), list, revoke.",
    no_args_is_help=True,
)


def serve(
    ctx: typer.Context,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            envvar="MEMSTORE_SERVE_HOST",
            help="Address to listen on (default 127.0.0.1; 0.0.0.0: every interface).",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            envvar="MEMSTORE_SERVE_PORT",
            min=1,
            max=65535,
            help="Port to listen on (default 8750).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the REST API (/v1), MCP (/mcp), /healthz, /readyz and /docs over HTTP.

    Without MEMSTORE_DATABASE_URL it serves the embedded PostgreSQL. Requests
    need an API key (`memstore keys create`). SIGTERM stops it gracefully.
    """
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401

        from memstore.server.run import serve as run
    except ImportError as exc:
        raise InvalidInputError(
            f"memstore serve needs the server extra: pip install 'memstore[server]' ({exc.name})"
        ) from None
    settings = settings_of(ctx)
    run(settings, host=host or settings.serve_host, port=port or settings.serve_port)


@keys_app.command("create")
def keys_create(
    ctx: typer.Context,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="The one namespace the key reaches."),
    ] = None,
    namespace_prefix: Annotated[
        str | None,
        typer.Option(
            "--namespace-prefix",
            help="Reach every namespace whose name starts with this (e.g. tenant-42/).",
        ),
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            help="read, write, review, erase or admin; repeat for several (default read, write).",
        ),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="A label for the key.")] = None,
    expires_in: Annotated[
        float | None,
        typer.Option("--expires-in", help="Days until the key expires (default: never)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a key; its secret is printed once and stored only as a digest."""
    from memstore.keys import DEFAULT_SCOPES, create_key

    with open_store(ctx) as store:
        created = create_key(
            store.engine,
            namespace=namespace,
            namespace_prefix=namespace_prefix,
            scopes=tuple(scope) if scope else DEFAULT_SCOPES,
            name=name,
            expires_in_days=expires_in,
            actor=settings_of(ctx).actor,
        )
    if as_json:
        print_json(created)
        return
    reach = created.namespace or f"prefix {created.namespace_prefix}"
    err.print(f"key {created.id} for {reach}, scopes {', '.join(created.scopes)}")
    err.print("the secret below is shown once: store it now")
    print(created.key)


@keys_app.command("list")
def keys_list(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Every key, revoked ones included; never a secret."""
    from memstore.keys import list_keys

    with open_store(ctx) as store:
        found = list_keys(store.engine)
    if as_json:
        print_json(found)
        return
    table = Table(
        "id", "prefix", "reaches", "scopes", "name", "expires", "revoked", title="API keys"
    )
    for key in found:
        table.add_row(
            str(key.id),
            key.prefix,
            key.namespace or f"{key.namespace_prefix}*",
            ",".join(key.scopes),
            key.name or "",
            f"{key.expires_at:%Y-%m-%d %H:%M}" if key.expires_at else "never",
            f"{key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "",
        )
    out.print(table)


@keys_app.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[int, typer.Argument(help="The key's id (memstore keys list).")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why, for the record.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke a key from now on (a new row; the key's record stays)."""
    from memstore.keys import revoke_key

    with open_store(ctx) as store:
        revoked = revoke_key(store.engine, key_id, actor=settings_of(ctx).actor, reason=reason)
    if as_json:
        print_json(revoked)
        return
    out.print(f"key {revoked.id} revoked")


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``keys`` to the ``memstore`` app."""
    app.command()(serve)
    app.add_typer(keys_app, name="keys")
