"""Memory commands: remember, import, link, recall, get, revise, forget, lineage, embed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.table import Table

from memstore.cli.common import (
    CeilingOption,
    FilterTagOption,
    JsonOption,
    NamespaceOption,
    TagOption,
    err,
    open_store,
    out,
    parse_json,
    print_json,
    read_input,
)
from memstore.errors import InvalidInputError

if TYPE_CHECKING:
    from memstore.models import Hit, Kind, Node, RecallMode, TargetKind

embed_app = typer.Typer(help="The embeddings cache: freshness and rebuild.", no_args_is_help=True)


def _print_nodes(nodes: list[Node]) -> None:
    table = Table("id", "status", "kind", "content", "tags", "source", "recorded")
    for node in nodes:
        table.add_row(
            str(node.id),
            node.status.value,
            node.kind,
            node.content,
            ", ".join(node.tags),
            node.source or "",
            f"{node.recorded_at:%Y-%m-%d %H:%M}",
        )
    out.print(table)


def _print_hits(hits: list[Hit]) -> None:
    if not hits:
        out.print("no memories matched")
        return
    table = Table("#", "score", "sim", "lex", "id", "content", "tags", "provenance")
    for hit in hits:
        parts, node = hit.parts, hit.node
        provenance = ", ".join(
            str(v)
            for v in (node.actor, node.source, node.observed_at and f"{node.observed_at:%Y-%m-%d}")
            if v
        )
        table.add_row(
            str(parts.fused_rank),
            f"{hit.score:.3f}",
            "" if parts.similarity is None else f"{parts.similarity:.3f}",
            f"{parts.lexical:.3f}" if parts.lexical else "",
            str(node.id),
            _flagged(node.content, hit.instruction_signals),
            ", ".join(node.tags),
            provenance,
        )
    out.print(table)


def _flagged(content: str, signals: tuple[str, ...]) -> str:
    """Content, prefixed with a warning when it reads like instructions to the agent."""
    if not signals:
        return content
    return f"⚠ reads as instructions ({', '.join(signals)}): {content}"


def remember(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="What to remember.")],
    namespace: NamespaceOption = "default",
    kind: Annotated[str, typer.Option(help="working, episodic, semantic or procedural.")] = (
        "episodic"
    ),
    node_type: Annotated[str, typer.Option("--type", help="Free node type.")] = "Memory",
    label: Annotated[str | None, typer.Option(help="A short label.")] = None,
    importance: Annotated[float, typer.Option(help="0..1")] = 0.5,
    source: Annotated[str | None, typer.Option(help="Where it came from.")] = None,
    actor: Annotated[str | None, typer.Option(help="Who said or wrote it.")] = None,
    privacy: Annotated[
        int, typer.Option(min=0, max=3, help="0 public, 1 internal, 2 private, 3 secret.")
    ] = 0,
    tag: TagOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remember one memory (idempotent: the same content is stored once)."""
    with open_store(ctx) as store:
        node = store.namespace(namespace).remember(
            content,
            kind=cast("Kind", kind),  # checked by MemoryInput, like every field
            node_type=node_type,
            label=label,
            importance=importance,
            source=source,
            actor=actor,
            privacy=privacy,
            tags=tag or [],
        )
    print_json(node) if as_json else _print_nodes([node])


def import_(
    ctx: typer.Context,
    path: Annotated[
        str,
        typer.Argument(help="JSON Lines (.jsonl or .json: one memory object per line) or text."),
    ],
    namespace: NamespaceOption = "default",
    batch_size: Annotated[int, typer.Option(help="Memories embedded per batch.")] = 1000,
    as_json: JsonOption = False,
    timeline: Annotated[
        bool,
        typer.Option(
            "--timeline",
            help="The file is a transcript: JSON Lines of {role, content, session_id, at?},"
            " ingested as timeline turns (ns.timeline.ingest_turns).",
        ),
    ] = False,
) -> None:
    """Bulk-load memories (binary COPY), all or nothing, with a progress bar."""
    from rich.progress import Progress

    if timeline:
        _import_timeline(ctx, path, namespace, batch_size, as_json)
        return
    items: list[Any] = []
    as_json_lines = Path(path).suffix in (".jsonl", ".json")
    for number, line in enumerate(read_input(path).splitlines(), start=1):
        if not line.strip():
            continue
        if as_json_lines:
            items.append(parse_json(line, where=f"{path}:{number}", field="file"))
        else:
            items.append(line)
    with open_store(ctx) as store, Progress(console=out, transient=True) as bar:
        task = bar.add_task("remembering", total=len(items))
        ids = store.namespace(namespace).remember_many(
            items, batch_size=batch_size, progress=lambda n: bar.advance(task, n)
        )
    if as_json:
        print(json.dumps(ids))
    else:
        out.print(f"{len(ids)} memories, {len(set(ids))} distinct nodes in {namespace!r}")


def _import_timeline(
    ctx: typer.Context, path: str, namespace: str, batch_size: int, as_json: bool
) -> None:
    """``memstore import --timeline``: a transcript's turns, parsed as they are written."""
    from rich.progress import Progress

    from memstore.graph.content import checked_content
    from memstore.inputs import validated
    from memstore.tiers.timeline import TurnInput

    lines = [
        (number, line)
        for number, line in enumerate(read_input(path).splitlines(), start=1)
        if line.strip()
    ]

    def turns() -> Iterator[TurnInput]:
        for number, line in lines:
            where = f"{path}:{number}"
            turn = parse_json(line, where=where, field="file")
            if not isinstance(turn, dict):
                raise InvalidInputError(
                    f"{where} is not a JSON object of role, content, session_id and at",
                    field="file",
                )
            try:
                checked = validated(TurnInput, **turn)
                checked_content(checked.content, limit=limit)  # to name the line
            except InvalidInputError as exc:
                raise InvalidInputError(f"{where}: {exc}", field=exc.field) from None
            yield checked

    with open_store(ctx) as store, Progress(console=out, transient=True) as bar:
        limit = store.settings.max_content_bytes
        task = bar.add_task("ingesting turns", total=len(lines))
        report = store.namespace(namespace).timeline.ingest_turns(
            turns(), batch_size=batch_size, progress=lambda n: bar.advance(task, n)
        )
    if as_json:
        print(report.model_dump_json())
    else:
        out.print(
            f"{report.turns} turns: {report.created} new, {report.existing} already stored,"
            f" {report.linked} next links, {report.sessions} sessions in {namespace!r}"
        )


def link(
    ctx: typer.Context,
    src: Annotated[int, typer.Argument(help="Source node id.")],
    dst: Annotated[int, typer.Argument(help="Destination node id.")],
    namespace: NamespaceOption = "default",
    relation: Annotated[str, typer.Option(help="Edge type.")] = "related",
    weight: Annotated[float, typer.Option(help="Authored weight 0..1.")] = 0.5,
    inhibitory: Annotated[bool, typer.Option(help="The edge suppresses its target.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Link two current nodes of one namespace (the same link again: the existing edge)."""
    with open_store(ctx) as store:
        edge = store.namespace(namespace).link(
            src, dst, relation=relation, weight=weight, inhibitory=inhibitory
        )
    if as_json:
        print_json(edge)
    else:
        out.print(f"edge {edge.id}: {edge.src} -[{edge.relation} {edge.weight:.2f}]-> {edge.dst}")


def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    namespace: NamespaceOption = "default",
    k: Annotated[int, typer.Option("-k", help="How many hits.")] = 10,
    mode: Annotated[str, typer.Option(help="hybrid, semantic or lexical.")] = "hybrid",
    kind: Annotated[list[str] | None, typer.Option(help="Only these kinds (repeat).")] = None,
    as_of: Annotated[datetime | None, typer.Option(help="What the store knew then (UTC).")] = None,
    include_superseded: Annotated[bool, typer.Option(help="Old versions too.")] = False,
    privacy_ceiling: CeilingOption = None,
    tag: FilterTagOption = None,
    as_json: JsonOption = False,
) -> None:
    """Recall the memories most relevant to a query, with score parts and provenance."""
    with open_store(ctx) as store:
        hits = store.namespace(namespace).recall(
            query,
            k=k,
            mode=_mode(mode),
            kinds=_kinds(kind),
            as_of=utc(as_of),
            include_superseded=include_superseded,
            privacy_ceiling=privacy_ceiling,
            tags=tag or None,
        )
    print_json(hits) if as_json else _print_hits(hits)
    if hits.notice:
        # On stderr: --json's stdout stays one JSON document.
        err.print(f"note: {hits.notice}")


def get(
    ctx: typer.Context,
    node_id: Annotated[int, typer.Argument(help="Node id.")],
    namespace: NamespaceOption = "default",
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one node with its status (current, superseded, tombstoned, redacted)."""
    with open_store(ctx) as store:
        node = store.namespace(namespace).get(node_id, privacy_ceiling=privacy_ceiling)
    print_json(node) if as_json else _print_nodes([node])


def revise(
    ctx: typer.Context,
    node_id: Annotated[int, typer.Argument(help="The current version's id.")],
    content: Annotated[str, typer.Argument(help="The new content.")],
    reason: Annotated[str, typer.Option(help="Why it changed (required).")],
    namespace: NamespaceOption = "default",
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="The new version's tags (repeat); default: the old ones."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Write a new version of a memory; the old one stays, linked as superseded."""
    changes: dict[str, Any] = {} if tag is None else {"tags": tag}
    with open_store(ctx) as store:
        node = store.namespace(namespace).revise(node_id, content, reason=reason, **changes)
    print_json(node) if as_json else _print_nodes([node])


def forget(
    ctx: typer.Context,
    target_id: Annotated[int, typer.Argument(help="Node (or, with --edge, edge) id.")],
    reason: Annotated[str, typer.Option(help="Why (required).")],
    namespace: NamespaceOption = "default",
    edge: Annotated[bool, typer.Option("--edge", help="Forget an edge, not a node.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Tombstone a node or edge: hidden from reads, never deleted."""
    target: TargetKind = "edge" if edge else "node"
    with open_store(ctx) as store:
        tombstone = store.namespace(namespace).forget(target_id, reason=reason, target=target)
    if as_json:
        print(json.dumps({"tombstone": tombstone, "target": target, "id": target_id}))
    else:
        out.print(f"{target} {target_id} forgotten (tombstone {tombstone})")


def redact(
    ctx: typer.Context,
    node_id: Annotated[int, typer.Argument(help="Any version's id.")],
    reason: Annotated[str, typer.Option(help="Why (required; recorded, so no personal data).")],
    actor: Annotated[
        str | None, typer.Option(help="Who erases (recorded); default: the configured actor.")
    ] = None,
    versions: Annotated[
        str,
        typer.Option(help="'all': every version of the memory (the default); 'one': this one."),
    ] = "all",
    namespace: NamespaceOption = "default",
    as_json: JsonOption = False,
) -> None:
    """Erase a memory for good: its text everywhere in the store (docs/security.md, "Erasure")."""
    with open_store(ctx) as store:
        node = store.namespace(namespace).redact(
            node_id,
            reason=reason,
            actor=actor,
            versions=versions,  # type: ignore[arg-type]  # the API validates it
        )
    if as_json:
        print_json(node)
    else:
        which = "this version" if versions == "one" else "every version of its lineage"
        out.print(f"node {node.id} redacted ({which})")


def lineage(
    ctx: typer.Context,
    node_id: Annotated[int, typer.Argument(help="Any version's id.")],
    namespace: NamespaceOption = "default",
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every version of a memory, oldest first."""
    with open_store(ctx) as store:
        versions = store.namespace(namespace).lineage(node_id, privacy_ceiling=privacy_ceiling)
    print_json(versions) if as_json else _print_nodes(versions)


@embed_app.command("status")
def embed_status(
    ctx: typer.Context,
    namespace: NamespaceOption = "default",
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fresh, missing and stale vectors of a namespace for the configured embedder."""
    with open_store(ctx) as store:
        status = store.namespace(namespace).embedding_status(privacy_ceiling=privacy_ceiling)
    if as_json:
        print_json(status)
    else:
        out.print(
            f"{status.namespace}: model {status.model} ({status.dims} dims), {status.nodes} nodes:"
            f" {status.fresh} fresh, {status.missing} missing, {status.stale} stale;"
            f" index {'present' if status.index else 'absent'}"
        )


@embed_app.command("rebuild")
def embed_rebuild(
    ctx: typer.Context,
    namespace: NamespaceOption = "default",
    batch_size: Annotated[int, typer.Option(help="Texts embedded per batch.")] = 256,
    as_json: JsonOption = False,
) -> None:
    """Compute every missing or stale vector (and the model's index), with a progress bar."""
    from rich.progress import Progress

    with open_store(ctx) as store:
        ns = store.namespace(namespace)
        todo = ns.embedding_status()
        with Progress(console=out, transient=True) as bar:
            task = bar.add_task("embedding", total=todo.missing + todo.stale)
            written = ns.rebuild_embeddings(
                batch_size=batch_size, progress=lambda n: bar.advance(task, n)
            )
    if as_json:
        print(json.dumps({"namespace": namespace, "written": written}))
    else:
        out.print(f"{written} vectors written in {namespace!r}")


def _mode(mode: str) -> RecallMode:
    if mode not in ("hybrid", "semantic", "lexical"):
        raise InvalidInputError(f"unknown mode {mode!r}: use hybrid, semantic or lexical")
    return mode  # type: ignore[return-value]


def _kinds(kinds: list[str] | None) -> list[Kind] | None:
    return kinds or None  # type: ignore[return-value]  # validated by recall


def utc(moment: datetime | None) -> datetime | None:
    return moment.replace(tzinfo=UTC) if moment and moment.tzinfo is None else moment


def register(app: typer.Typer) -> None:
    """Add the memory commands to the ``memstore`` app."""
    for command in (remember, link, recall, get, revise, forget, redact, lineage):
        app.command()(command)
    app.command("import")(import_)
    app.add_typer(embed_app, name="embed")
