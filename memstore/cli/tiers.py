"""Tier commands: context packets, pins, lessons and procedures (docs/tiers.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from memstore.cli.common import (
    CeilingOption,
    FilterTagOption,
    JsonOption,
    NamespaceOption,
    open_store,
    out,
    parse_json,
    print_json,
)
from memstore.errors import InvalidInputError

lessons_app = typer.Typer(help="Lessons: rules learned from experience.", no_args_is_help=True)
procedures_app = typer.Typer(help="Procedures: named, versioned skills.", no_args_is_help=True)


def context(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What the agent is about to do.")],
    namespace: NamespaceOption = "default",
    budget: Annotated[int, typer.Option(help="Token budget of the packet.")] = 2000,
    session: Annotated[str | None, typer.Option(help="Recent turns of this session.")] = None,
    privacy_ceiling: CeilingOption = None,
    tag: FilterTagOption = None,
    as_json: JsonOption = False,
    role: Annotated[
        str | None, typer.Option(help="Serve only procedures for this role (or for any).")
    ] = None,
) -> None:
    """Print the token-budgeted context packet for a query (prompt-ready text, or --json)."""
    with open_store(ctx) as store:
        packet = store.namespace(namespace).recall_context(
            query,
            budget_tokens=budget,
            session_id=session,
            privacy_ceiling=privacy_ceiling,
            role=role,
            tags=tag or None,
        )
    if as_json:
        print_json(packet)
    else:
        print(packet.render())
        out.print(f"{packet.tokens_used} of {packet.budget_tokens} tokens", style="dim")


def pin(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The fact's key.")],
    value: Annotated[str, typer.Argument(help="Its value (replaces the current one).")],
    namespace: NamespaceOption = "default",
    as_json: JsonOption = False,
) -> None:
    """Pin a fact to the scratchpad; pinning a key again keeps the old value as history."""
    with open_store(ctx) as store:
        node = store.namespace(namespace).scratchpad.pin(key, value)
    print_json(node) if as_json else out.print(f"pinned {key!r} (node {node.id})")


def unpin(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The fact's key.")],
    namespace: NamespaceOption = "default",
    reason: Annotated[str, typer.Option(help="Why (kept with the tombstone).")] = "unpinned",
) -> None:
    """Retire a pinned fact (a tombstone: its history stays)."""
    with open_store(ctx) as store:
        store.namespace(namespace).scratchpad.unpin(key, reason=reason)
    out.print(f"unpinned {key!r}")


def pins(
    ctx: typer.Context,
    namespace: NamespaceOption = "default",
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the pinned facts."""
    with open_store(ctx) as store:
        found = store.namespace(namespace).scratchpad.all(privacy_ceiling=privacy_ceiling)
    if as_json:
        print_json(found)
        return
    table = Table("key", "value", "id", "since")
    for node in found:
        table.add_row(
            node.label or "",
            str(node.data.get("value", "")),
            str(node.id),
            f"{node.recorded_at:%Y-%m-%d %H:%M}",
        )
    out.print(table)


@lessons_app.command("add")
def lessons_add(
    ctx: typer.Context,
    rule: Annotated[str, typer.Argument(help="The lesson.")],
    source: Annotated[str, typer.Option(help="Where it was learned.")],
    confidence: Annotated[float, typer.Option(help="0 to 1.")] = 0.5,
    namespace: NamespaceOption = "default",
    as_json: JsonOption = False,
) -> None:
    """Add a lesson unless a near-duplicate exists (then show that one)."""
    with open_store(ctx) as store:
        node = store.namespace(namespace).lessons.add_if_new(
            rule, source=source, confidence=confidence
        )
    print_json(node) if as_json else out.print(f"lesson {node.id}: {node.content}")


@lessons_app.command("list")
def lessons_list(
    ctx: typer.Context,
    namespace: NamespaceOption = "default",
    min_confidence: Annotated[float, typer.Option(help="Only lessons at least this sure.")] = 0.0,
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """List current lessons, strongest first."""
    with open_store(ctx) as store:
        found = store.namespace(namespace).lessons.high_confidence(
            min_confidence, privacy_ceiling=privacy_ceiling
        )
    if as_json:
        print_json(found)
        return
    table = Table("id", "confidence", "applied", "rule", "source")
    for lesson in found:
        table.add_row(
            str(lesson.id),
            f"{lesson.confidence:.2f}",
            str(lesson.times_applied),
            lesson.rule,
            lesson.node.source or "",
        )
    out.print(table)


@lessons_app.command("remove")
def lessons_remove(
    ctx: typer.Context,
    lesson_id: Annotated[int, typer.Argument(help="Lesson node id.")],
    reason: Annotated[str, typer.Option(help="Why.")] = "removed",
    namespace: NamespaceOption = "default",
) -> None:
    """Retire a lesson (a tombstone)."""
    with open_store(ctx) as store:
        store.namespace(namespace).lessons.remove(lesson_id, reason=reason)
    out.print(f"lesson {lesson_id} retired")


@procedures_app.command("add")
def procedures_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The procedure's name.")],
    steps: Annotated[str, typer.Option(help='JSON list of {"tool", "purpose", "instruction"}.')],
    description: Annotated[str, typer.Option(help="What it does.")] = "",
    namespace: NamespaceOption = "default",
    as_json: JsonOption = False,
) -> None:
    """Add a procedure, or refine it (a new version) if the name exists."""
    parsed = _steps(steps)
    with open_store(ctx) as store:
        procedures = store.namespace(namespace).procedures
        if procedures.find_by_name(name) is None:
            node = procedures.add(name, description=description or name, steps=parsed)
        else:
            node = procedures.refine(name, parsed, description=description or None)
    print_json(node) if as_json else out.print(f"procedure {name!r}: node {node.id}")


@procedures_app.command("list")
def procedures_list(
    ctx: typer.Context,
    namespace: NamespaceOption = "default",
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """List current procedures."""
    with open_store(ctx) as store:
        found = store.namespace(namespace).procedures.all(privacy_ceiling=privacy_ceiling)
    if as_json:
        print_json(found)
        return
    table = Table("name", "id", "steps", "description")
    for node in found:
        table.add_row(
            node.label or "",
            str(node.id),
            str(len(node.data.get("steps", []))),
            str(node.data.get("description", "")),
        )
    out.print(table)


@procedures_app.command("show")
def procedures_show(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The procedure's name.")],
    namespace: NamespaceOption = "default",
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show every version of a procedure, oldest first."""
    with open_store(ctx) as store:
        versions = store.namespace(namespace).procedures.versions(
            name, privacy_ceiling=privacy_ceiling
        )
    if as_json:
        print_json(versions)
        return
    for node in versions:
        out.print(
            Text.assemble((f"node {node.id}", "bold"), f" ({node.status.value})\n{node.content}\n")
        )


@procedures_app.command("outcome")
def procedures_outcome(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The procedure's name (its current version).")],
    success: Annotated[
        bool, typer.Option("--success/--failure", help="Whether it worked.", show_default=False)
    ],
    namespace: NamespaceOption = "default",
    episode: Annotated[
        str | None, typer.Option(help="The episode: a node id (digits) or a run id.")
    ] = None,
    note: Annotated[str | None, typer.Option(help="What happened.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Record that a procedure worked or failed, with the episode that showed it."""
    episode_of: int | str | None = episode
    if episode is not None and episode.isascii() and episode.isdigit():
        episode_of = int(episode)
    with open_store(ctx) as store:
        outcome = store.namespace(namespace).procedures.record_outcome(
            name, success, episode=episode_of, note=note
        )
    if as_json:
        print_json(outcome)
        return
    verdict = "success" if outcome.success else "failure"
    out.print(f"recorded {verdict} #{outcome.id} of {name!r} (version {outcome.node_id})")


@procedures_app.command("outcomes")
def procedures_outcomes(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The procedure's name.")],
    namespace: NamespaceOption = "default",
    only: Annotated[
        str | None,
        typer.Option(help="'golden' (successes) or 'rejected' (failures); unset: both."),
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 100,
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """List a procedure's recorded outcomes over all its versions, newest first."""
    if only not in (None, "golden", "rejected"):
        raise InvalidInputError("--only must be 'golden' or 'rejected'", field="only")
    success = None if only is None else only == "golden"
    with open_store(ctx) as store:
        found = store.namespace(namespace).procedures.outcomes(
            name, success=success, limit=limit, privacy_ceiling=privacy_ceiling
        )
    if as_json:
        print_json(found)
        return
    table = Table("id", "version", "outcome", "episode", "note", "at")
    for item in found:
        episode = item.episode_run or (
            "" if item.episode_node_id is None else f"node {item.episode_node_id}"
        )
        table.add_row(
            str(item.id),
            str(item.node_id),
            "success" if item.success else "failure",
            episode,
            item.note or "",
            f"{item.recorded_at:%Y-%m-%d %H:%M}",
        )
    out.print(table)


def _steps(text: str) -> list[dict[str, str]]:
    steps = parse_json(text, where="--steps", field="steps")
    if not isinstance(steps, list):
        raise InvalidInputError("--steps must be a JSON list", field="steps")
    return steps


def register(app: typer.Typer) -> None:
    """Add the tier commands to the ``memstore`` app."""
    for command in (context, pin, unpin, pins):
        app.command()(command)
    app.add_typer(lessons_app, name="lessons")
    app.add_typer(procedures_app, name="procedures")
