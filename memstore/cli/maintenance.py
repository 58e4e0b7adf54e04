"""``memstore maintain``: one maintenance pass per namespace, for cron or a systemd timer."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from memstore.cli.common import JsonOption, err, open_store, out


def maintain(
    ctx: typer.Context,
    namespace: Annotated[
        list[str] | None,
        typer.Option(
            "--namespace",
            "-n",
            help="Maintain this namespace (repeat for more). Unset: every namespace.",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would change; change nothing.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Decay unused lessons and learned edge weights, and summarise the activation log
    past its retention (docs/operations.md, "Maintenance").

    Idempotent: a second run at once changes nothing. A run concurrent with another
    waits for it. Settings: MEMSTORE_ACTIVATION_RETENTION_DAYS,
    MEMSTORE_MAINTAIN_DECAY_PERIOD_HOURS, MEMSTORE_MAINTAIN_LESSON_DECAY,
    MEMSTORE_MAINTAIN_LESSON_MIN_CONFIDENCE, MEMSTORE_MAINTAIN_HEBBIAN_DECAY.
    Without -n it lists the namespaces, which needs an operator's role (the owner):
    memstore_app sees none and must name them.
    """
    with open_store(ctx) as store:
        names = namespace or [info.name for info in store.namespaces()]
        if not names:
            err.print("no namespace to maintain (none exists, or this role may not list them)")
        reports = [store.namespace(name).maintain(dry_run=dry_run) for name in names]
    if as_json:
        print(json.dumps([report.model_dump(mode="json") for report in reports], indent=2))
        return
    for report in reports:
        out.print(report.text())


def register(app: typer.Typer) -> None:
    """Add ``maintain`` to the ``memstore`` app."""
    app.command()(maintain)
