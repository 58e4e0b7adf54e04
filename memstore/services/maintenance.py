"""A maintenance pass over one namespace: decay, then telemetry retention (docs/operations.md).

``ns.maintain()`` runs, in one transaction under the namespace's maintenance
lock (a second pass waits for the first, then finds nothing due):

1. lesson decay: never-applied lessons lose confidence, the faint are retired;
2. Hebbian decay: learned weights of edges not fired within the period fade;
3. telemetry retention: activation-log rows older than the retention are
   summarised per day and node into ``activation_summaries``, then removed.
   Truth tables are never touched.

Decay comes in whole steps, one per ``maintain_decay_period_hours`` since the
last step (the first pass takes one step). The pass records how far it has
decayed (``maintenance_runs``), so a second pass at once takes no step and
changes nothing; a pass a week later than the last takes seven daily steps at
once (factor ** 7). A pass that changed nothing records nothing.
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field

from memstore.activation import learning
from memstore.graph import maintenance as maintenance_sql
from memstore.graph.entries import now as transaction_time

if TYPE_CHECKING:
    from memstore.services.scope import Scope
    from memstore.tiers.lessons import Lessons

# A pass that finds years due does not compute factor ** 10^6: past this many
# steps every factor below 1 has reached the floor anyway.
MAX_STEPS = 100_000


class MaintenanceReport(BaseModel):
    """What one maintenance pass of one namespace changed (or, with ``dry_run``, would)."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    dry_run: bool
    decay_steps: int
    """Decay periods applied at once (0: none was due)."""
    decayed_through: datetime | None
    """How far decay has now been applied (None: the namespace was never decayed)."""
    lessons_decayed: int
    lessons_retired: list[int]
    """Ids of lessons that fell below the minimum confidence and were tombstoned."""
    edges_decayed: int
    """Edges whose learned weight faded."""
    retention_cutoff: datetime | None
    """Activation-log rows older than this were summarised and removed."""
    activations_summarised: int
    summary_rows: int
    """Rows of ``activation_summaries`` written or merged into."""
    timings_ms: dict[str, float] = Field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """Whether the pass changed anything."""
        return bool(
            self.decay_steps
            or self.lessons_decayed
            or self.edges_decayed
            or self.activations_summarised
        )

    def text(self) -> str:
        """One line for the CLI."""
        head = f"{self.namespace}: " + ("would change" if self.dry_run else "changed")
        if not self.changed:
            return f"{self.namespace}: nothing due"
        return (
            f"{head} — decay steps {self.decay_steps}, lessons decayed"
            f" {self.lessons_decayed} (retired {len(self.lessons_retired)}), edges decayed"
            f" {self.edges_decayed}, activations summarised {self.activations_summarised}"
            f" into {self.summary_rows} summary rows"
            f" ({sum(self.timings_ms.values()):.1f} ms)"
        )


class MaintainRequest(BaseModel):
    """What :meth:`memstore.namespace.Namespace.maintain` accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    dry_run: bool
    retention: Annotated[timedelta, Field(ge=timedelta(0), le=timedelta(days=36500))]
    """Activation-log rows older than this are summarised and removed."""
    decay_period: Annotated[timedelta, Field(gt=timedelta(0), le=timedelta(days=3650))]
    """One decay step per this much time since the last one."""


class _DryRun(Exception):
    """Raised inside a dry run's transaction so that it rolls back, carrying the report."""

    def __init__(self, report: MaintenanceReport):
        super().__init__("dry run")
        self.report = report


def due_steps(last: datetime | None, now: datetime, period: timedelta) -> tuple[int, datetime]:
    """Decay steps due at ``now`` and the new mark; the first pass takes one step.

    >>> from datetime import datetime, timedelta, timezone
    >>> t = datetime(2026, 1, 8, 12, tzinfo=timezone.utc)
    >>> due_steps(t - timedelta(days=7, hours=3), t, timedelta(days=1))[0]
    7
    >>> due_steps(t, t, timedelta(days=1)) == (0, t)
    True
    """
    if last is None:
        return 1, now
    if now <= last:
        return 0, last
    steps = min(math.floor((now - last) / period), MAX_STEPS)
    return steps, last + steps * period


class Maintainer:
    """The maintenance pass of one namespace (:meth:`memstore.namespace.Namespace.maintain`)."""

    def __init__(self, scope: Scope, lessons: Lessons):
        self.scope = scope
        self.lessons = lessons

    def run(
        self,
        *,
        dry_run: bool,
        retention: timedelta,
        period: timedelta,
        lesson_decay: float,
        lesson_min_confidence: float,
        hebbian_decay: float,
    ) -> MaintenanceReport:
        """One pass; see the module docstring. Arguments are checked by the caller."""
        if not self.scope.exists():
            return self._empty(dry_run)  # nothing written yet: nothing to maintain
        try:
            with self.scope.transaction() as tx:
                timings: dict[str, float] = {}
                started = time.perf_counter()
                maintenance_sql.lock(tx.conn, tx.id)
                timings["lock"] = _ms(started)
                now = transaction_time(tx.conn)
                last = maintenance_sql.decayed_through(tx.conn, tx.id)
                steps, through = due_steps(last, now, period)

                started = time.perf_counter()
                decayed, retired = 0, []
                if steps:
                    result = self.lessons._decay_in(tx, lesson_decay**steps, lesson_min_confidence)
                    decayed, retired = result.decayed, result.retired
                timings["lessons"] = _ms(started)

                started = time.perf_counter()
                edges = 0
                if steps:
                    edges = learning.decay_hebbian(tx.conn, tx.id, hebbian_decay**steps, period)
                timings["hebbian"] = _ms(started)

                started = time.perf_counter()
                cutoff = now - retention
                summarised, summaries = maintenance_sql.summarise_activations(
                    tx.conn, tx.id, cutoff
                )
                timings["retention"] = _ms(started)

                report = MaintenanceReport(
                    namespace=self.scope.name,
                    dry_run=dry_run,
                    decay_steps=steps,
                    decayed_through=through if steps else last,
                    lessons_decayed=decayed,
                    lessons_retired=retired,
                    edges_decayed=edges,
                    retention_cutoff=cutoff,
                    activations_summarised=summarised,
                    summary_rows=summaries,
                    timings_ms=timings,
                )
                if dry_run:
                    raise _DryRun(report)
                if report.changed:
                    maintenance_sql.record_run(
                        tx.conn,
                        tx.id,
                        steps=steps,
                        through=through if steps else None,
                        report=report.model_dump(mode="json", exclude={"timings_ms"}),
                    )
                return report
        except _DryRun as rolled_back:
            return rolled_back.report

    def _empty(self, dry_run: bool) -> MaintenanceReport:
        return MaintenanceReport(
            namespace=self.scope.name,
            dry_run=dry_run,
            decay_steps=0,
            decayed_through=None,
            lessons_decayed=0,
            lessons_retired=[],
            edges_decayed=0,
            retention_cutoff=None,
            activations_summarised=0,
            summary_rows=0,
        )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


__all__ = ["MaintainRequest", "Maintainer", "MaintenanceReport", "due_steps"]
