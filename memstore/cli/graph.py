"""Graph reads: ``memstore edges`` and ``memstore neighbours`` (docs/recall.md, "Graph reads")."""

from __future__ import annotations

from typing import Annotated, Any, cast

import typer
from rich.table import Table

from memstore.cli.common import (
    CeilingOption,
    JsonOption,
    NamespaceOption,
    open_store,
    out,
    print_json,
)
from memstore.errors import InvalidInputError

DirectionOption = Annotated[str, typer.Option(help="both, out (from it) or in (to it).")]
RelationOption = Annotated[str | None, typer.Option(help="Only this relation.")]


def _direction(direction: str) -> str:
    if direction not in ("both", "out", "in"):
        raise InvalidInputError(f"unknown direction {direction!r}: use both, out or in")
    return direction


def edges(
    ctx: typer.Context,
    node_id: Annotated[int, typer.Argument(help="A memory's id (any version).")],
    namespace: NamespaceOption = "default",
    direction: DirectionOption = "both",
    relation: RelationOption = None,
    limit: Annotated[int, typer.Option(help="At most this many edges.")] = 100,
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """A memory's live edges, heaviest first, with their learned weight."""
    with open_store(ctx) as store:
        found = store.namespace(namespace).edges(
            node_id,
            direction=cast("Any", _direction(direction)),
            relation=relation,
            limit=limit,
            privacy_ceiling=privacy_ceiling,
        )
    if as_json:
        print_json(found)
        return
    if not found:
        out.print("no edges")
        return
    table = Table("edge", "src", "relation", "dst", "weight", "learned", "inhibitory")
    for edge in found:
        table.add_row(
            str(edge.id),
            str(edge.src),
            edge.relation,
            str(edge.dst),
            f"{edge.weight:.2f}",
            f"{edge.learned_weight or 0:.2f}",
            "yes" if edge.inhibitory else "",
        )
    out.print(table)


def neighbours(
    ctx: typer.Context,
    node_id: Annotated[int, typer.Argument(help="A memory's id (any version).")],
    namespace: NamespaceOption = "default",
    depth: Annotated[int, typer.Option(help="Edges to follow, 1 to 3.")] = 1,
    direction: DirectionOption = "both",
    relation: RelationOption = None,
    limit: Annotated[int, typer.Option(help="At most this many memories.")] = 50,
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """The memories within a few live edges of one, nearest first, with their distance."""
    with open_store(ctx) as store:
        found = store.namespace(namespace).neighbours(
            node_id,
            depth=depth,
            direction=cast("Any", _direction(direction)),
            relation=relation,
            limit=limit,
            privacy_ceiling=privacy_ceiling,
        )
    if as_json:
        print_json(found)
        return
    if not found:
        out.print("no memories matched")
        return
    table = Table("distance", "id", "kind", "content")
    for near in found:
        table.add_row(str(near.distance), str(near.node.id), near.node.kind, near.node.content)
    out.print(table)


def register(app: typer.Typer) -> None:
    """Add the graph reads to the ``memstore`` app."""
    app.command()(edges)
    app.command()(neighbours)
