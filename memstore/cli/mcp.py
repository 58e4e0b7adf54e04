"""``memstore mcp``: the MCP server over stdio, the command a desktop client launches."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from memstore.cli.common import NamespaceOption, open_store


def register(app: typer.Typer) -> None:
    """Add the ``mcp`` command to ``app``."""

    @app.command()
    def mcp(
        ctx: typer.Context,
        namespace: NamespaceOption,
        tools: Annotated[
            str,
            typer.Option(
                "--tools",
                envvar="MEMSTORE_MCP_TOOLS",
                help="default (eight memory tools) or all (adds activate, propose, review"
                " and status).",
            ),
        ] = "default",
        scopes: Annotated[
            list[str] | None,
            typer.Option(
                "--scope",
                envvar="MEMSTORE_MCP_SCOPES",
                help="What the client may do: read, write, review, erase, admin (repeat it)."
                " Default: read and write (review_decide needs review).",
                show_default=False,
            ),
        ] = None,
        actor: Annotated[
            str,
            typer.Option(
                "--actor", envvar="MEMSTORE_MCP_ACTOR", help="Recorded as the actor of writes."
            ),
        ] = "mcp",
    ) -> None:
        """Serve one namespace to an MCP client over stdio (Claude Desktop, Cursor, VS Code).

        The namespace is fixed here: no tool can name another one. Logs go to
        stderr; stdout carries only the protocol.
        """
        try:
            from memstore.server.mcp import STDIO_SCOPES, stdio_server
        except ImportError as exc:  # the server extra is not installed
            raise typer.BadParameter(
                f"memstore mcp needs the server extra: pip install 'memstore[server]' ({exc})"
            ) from None
        if tools not in ("default", "all"):
            raise typer.BadParameter("--tools must be default or all")
        chosen: Literal["default", "all"] = "all" if tools == "all" else "default"
        with open_store(ctx) as store:
            server = stdio_server(
                store, namespace, tools=chosen, scopes=scopes or STDIO_SCOPES, actor=actor
            )
            server.run("stdio")
