"""Export and restore commands: one namespace to a JSON-lines file and back
(docs/operations.md, "Export and restore")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from memstore.cli.common import JsonOption, NamespaceOption, err, open_store, out, print_json


def export(
    ctx: typer.Context,
    output: Annotated[
        str,
        typer.Option(
            "--output", "-o", help="The file to write ('-': stdout). Written whole or not at all."
        ),
    ],
    namespace: NamespaceOption = "default",
    with_vectors: Annotated[
        bool,
        typer.Option(
            "--with-vectors",
            help="Include the store's embedding vectors (default: restore re-embeds).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Write a namespace's every version, edge, tombstone, supersession, redaction record,
    learned state, confirmation, procedure outcome and role, proposal and audit row as JSON
    lines, from one snapshot."""
    with open_store(ctx) as store:
        ns = store.namespace(namespace)
        if output == "-":
            summary = ns.export(sys.stdout.buffer, with_vectors=with_vectors)
            sys.stdout.flush()
        else:
            summary = ns.export(Path(output), with_vectors=with_vectors)
    if as_json and output != "-":
        print_json(summary)
        return
    # With the file on stdout, the report goes to stderr.
    console = err if output == "-" else out
    rows = sum(summary.rows.values())
    console.print(
        f"exported namespace {summary.namespace!r}: {rows} rows"
        f" ({summary.rows['node']} memories, {summary.rows['edge']} edges),"
        f" {summary.bytes} bytes, as of {summary.exported_at:%Y-%m-%d %H:%M:%S %Z}",
        highlight=False,
    )


def restore(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="An export file ('-': stdin).")],
    namespace: NamespaceOption = "default",
    as_json: JsonOption = False,
) -> None:
    """Rebuild an export into an empty (or new) namespace, in one transaction; run it as
    the tables' owner (it keeps the file's transaction times)."""
    with open_store(ctx) as store:
        source = sys.stdin.buffer if file == "-" else Path(file)
        summary = store.restore(source, namespace=namespace)
    if as_json:
        print_json(summary)
        return
    out.print(
        f"restored {summary.rows['node']} memories, {summary.rows['edge']} edges and"
        f" {sum(summary.rows.values())} rows in all from namespace"
        f" {summary.source_namespace!r} into {summary.namespace!r};"
        f" vectors: {summary.vectors_restored} from the file,"
        f" {summary.vectors_embedded} computed",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Add ``export`` and ``restore`` to the ``memstore`` app."""
    app.command()(export)
    app.command()(restore)
