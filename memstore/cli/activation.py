"""``memstore activate``: spreading activation from the command line."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from memstore.cli.common import (
    CeilingOption,
    FilterTagOption,
    JsonOption,
    NamespaceOption,
    err,
    open_store,
    out,
)
from memstore.cli.memory import utc

if TYPE_CHECKING:
    from memstore.activation import Activation


def _print_activation(activation: Activation) -> None:
    if not activation.working_memory:
        out.print("no memories matched")
    table = Table("#", "score", "id", "type", "layer", "path", "content")
    for rank, item in enumerate(activation.working_memory, start=1):
        path = " → ".join(
            str(step.node_id) if step.edge_id is None else f"{step.relation} {step.node_id}"
            for step in item.path
        )
        table.add_row(
            str(rank),
            f"{item.score:.3f}",
            str(item.node.id),
            item.node.node_type,
            str(item.node.layer),
            path,
            item.node.content,
        )
    if activation.working_memory:
        out.print(table)
    stats = activation.stats
    timings = ", ".join(f"{stage} {ms:.1f} ms" for stage, ms in stats.timings_ms.items())
    out.print(
        f"{stats.seeds} seeds, {stats.nodes} nodes reached, {stats.edges} edges pulled ({timings})"
    )


def activate(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="What to activate from.")] = None,
    namespace: NamespaceOption = "default",
    seed: Annotated[list[int] | None, typer.Option(help="A seed node id (repeat).")] = None,
    depth: Annotated[int, typer.Option(help="Hops from the seeds.")] = 2,
    fanout: Annotated[int, typer.Option(help="Heaviest edges followed per node.")] = 16,
    limit: Annotated[int, typer.Option(help="Working-memory size.")] = 20,
    both_directions: Annotated[bool, typer.Option(help="Follow edges backwards too.")] = False,
    learn: Annotated[bool, typer.Option(help="Record accesses and co-activation.")] = False,
    privacy_ceiling: CeilingOption = None,
    as_of: Annotated[datetime | None, typer.Option(help="What the store knew then (UTC).")] = None,
    max_bytes: Annotated[int, typer.Option(help="Cap of the --json output.")] = 32768,
    tag: FilterTagOption = None,
    as_json: JsonOption = False,
) -> None:
    """Spread activation from a query's recall hits (or seed ids) through the memory graph.

    --json prints the compact projection (the top items with snippets, the rest
    as pointer stubs, never more than --max-bytes) plus the run's statistics.
    """
    with open_store(ctx) as store:
        activation = store.namespace(namespace).activate(
            query,
            seeds=seed or None,
            depth=depth,
            fanout=fanout,
            limit=limit,
            both_directions=both_directions,
            learn=learn,
            privacy_ceiling=privacy_ceiling,
            as_of=utc(as_of),
            tags=tag or None,
        )
    if as_json:
        projected = activation.project(max_bytes=max_bytes)
        print(json.dumps({**projected, "stats": activation.stats.model_dump()}, indent=2))
    else:
        _print_activation(activation)
    from memstore.models import missing_vectors_notice

    notice = missing_vectors_notice(
        activation.missing_vectors, activation.missing_ids, store.embedder.name, namespace
    )
    if notice:
        err.print(f"note: {notice}")  # stderr: --json's stdout stays one JSON document


def register(app: typer.Typer) -> None:
    """Add ``activate`` to the ``memstore`` app."""
    app.command()(activate)
