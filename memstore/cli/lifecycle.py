"""Lifecycle commands: apply a batch of operations, sleep, the review queue (docs/lifecycle.md)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from memstore.cli.common import (
    CeilingOption,
    JsonOption,
    NamespaceOption,
    open_store,
    out,
    parse_json,
    print_json,
    read_input,
)

if TYPE_CHECKING:
    from memstore.law.receipt import Receipt

review_app = typer.Typer(help="The human review queue of proposed writes.", no_args_is_help=True)

ActorOption = Annotated[
    str | None,
    typer.Option("--actor", envvar="MEMSTORE_ACTOR", help="Who acts (recorded in the audit log)."),
]


# The largest batch file `memstore apply` reads (refused before it is read or parsed).
APPLY_MAX_BYTES = 64 * 1024 * 1024


def _read_ops(source: str) -> list[Any]:
    """A JSON list of operations (or one operation) from a file, or '-' for stdin."""
    text = read_input(source, max_bytes=APPLY_MAX_BYTES)
    loaded = parse_json(text, where="stdin" if source == "-" else source, field="file")
    return loaded if isinstance(loaded, list) else [loaded]


def _print_receipt(receipt: Receipt) -> None:
    table = Table("#", "op", "outcome", "written / reason", title_justify="left")
    for r in receipt.results:
        detail = r.reason or ", ".join(
            part
            for part in (
                f"nodes {r.nodes}" if r.nodes else "",
                f"accounted {r.accounted}" if r.accounted else "",
                f"proposal {r.proposal_id}" if r.proposal_id else "",
            )
            if part
        )
        table.add_row(str(r.index), r.op or "?", r.outcome, detail)
    out.print(table)
    verdict = "applied" if receipt.applied else "NOT applied: nothing was written"
    out.print(f"batch {receipt.batch_id} ({receipt.phase}, {receipt.actor}): {verdict}")
    if receipt.residue:
        out.print(f"still under pressure: {receipt.residue}")


def apply(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="A JSON file of operations, or '-' for stdin.")],
    phase: Annotated[str, typer.Option(help="wake, rumination, sleep or review.")] = "wake",
    namespace: NamespaceOption = "default",
    actor: ActorOption = None,
    partial: Annotated[
        bool, typer.Option(help="Apply the accepted operations even if some are rejected.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Judge a batch of typed operations by the law and apply it; print the receipt."""
    ops = _read_ops(source)
    with open_store(ctx) as store:
        receipt = store.namespace(namespace).apply(
            ops,
            phase=phase,  # type: ignore[arg-type]  # the library validates it
            actor=actor,
            atomic=not partial,
        )
    print_json(receipt) if as_json else _print_receipt(receipt)
    if not receipt.applied:
        raise typer.Exit(1)


def operations_schema() -> None:
    """Print the JSON Schema of an operation (for a model that emits them)."""
    from memstore.law.ops import operation_schema

    print(json.dumps(operation_schema(), indent=2))


def sleep(
    ctx: typer.Context,
    namespace: NamespaceOption = "default",
    actor: ActorOption = None,
    forced: Annotated[
        bool, typer.Option(help="Fail, writing nothing, unless every short-term memory is settled.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Consolidate short-term memory with the model-free consolidator."""
    with open_store(ctx) as store:
        receipt = store.namespace(namespace).sleep(forced=forced, actor=actor)
    print_json(receipt) if as_json else _print_receipt(receipt)


@review_app.command("list")
def review_list(
    ctx: typer.Context,
    namespace: NamespaceOption = "default",
    privacy_ceiling: CeilingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Pending proposals, oldest first (none about a memory above the ceiling)."""
    with open_store(ctx) as store:
        pending = store.namespace(namespace).review.pending(privacy_ceiling=privacy_ceiling)
    if as_json:
        print_json(pending)
        return
    table = Table("id", "op", "proposed by", "at", "rationale", title="pending proposals")
    for p in pending:
        at = p.proposed_at.isoformat(timespec="seconds")
        table.add_row(str(p.id), p.op, p.proposed_by or "", at, p.rationale or "")
    out.print(table)


@review_app.command("show")
def review_show(
    ctx: typer.Context,
    proposal_id: Annotated[int, typer.Argument(help="The proposal's id.")],
    namespace: NamespaceOption = "default",
    privacy_ceiling: CeilingOption = None,
) -> None:
    """One proposal with its operation and evidence (JSON)."""
    with open_store(ctx) as store:
        ns = store.namespace(namespace)
        print_json(ns.review.get(proposal_id, privacy_ceiling=privacy_ceiling))


@review_app.command("accept")
def review_accept(
    ctx: typer.Context,
    proposal_id: Annotated[int, typer.Argument(help="The proposal's id.")],
    reviewer: Annotated[str, typer.Option(help="Who decides (recorded).")],
    note: Annotated[str | None, typer.Option(help="Why (recorded).")] = None,
    namespace: NamespaceOption = "default",
) -> None:
    """Accept a proposal: its operation is judged again and applied."""
    with open_store(ctx) as store:
        receipt = store.namespace(namespace).review.accept(
            proposal_id, reviewer=reviewer, note=note
        )
    _print_receipt(receipt)


@review_app.command("reject")
def review_reject(
    ctx: typer.Context,
    proposal_id: Annotated[int, typer.Argument(help="The proposal's id.")],
    reviewer: Annotated[str, typer.Option(help="Who decides (recorded).")],
    reason: Annotated[str, typer.Option(help="Why (recorded).")],
    namespace: NamespaceOption = "default",
) -> None:
    """Reject a proposal with the reason."""
    with open_store(ctx) as store:
        store.namespace(namespace).review.reject(proposal_id, reviewer=reviewer, reason=reason)
    out.print(f"proposal {proposal_id} rejected")


def register(app: typer.Typer) -> None:
    """Add the lifecycle commands to the ``memstore`` app."""
    app.command()(apply)
    app.command()(sleep)
    app.command("operations-schema")(operations_schema)
    app.add_typer(review_app, name="review")


__all__ = ["register"]
