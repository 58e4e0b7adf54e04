"""ns.maintain(): decay and telemetry retention as one idempotent pass, on real PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, timedelta

import psycopg
import pytest

from memstore.errors import InvalidInputError
from memstore.models import NodeStatus
from memstore.services.maintenance import due_steps
from tests.conftest import row_counts

TRUTH = (
    "nodes",
    "edges",
    "tombstones",
    "supersessions",
    "operations",
    "redactions",
    "proposals",
    "procedure_outcomes",
    "procedure_roles",
)


def _activated(ns) -> None:
    a = ns.remember("Alice lives in Lisbon", kind="semantic")
    b = ns.remember("Lisbon is in Portugal", kind="semantic")
    ns.link(a.id, b.id, relation="located_in")
    ns.activate("where does Alice live?", seeds=[a.id], learn=True)
    ns.activate("Alice Lisbon Portugal", seeds=[a.id], learn=True)


def _count(url: str, table: str, namespace_id: int) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            psycopg.sql.SQL("SELECT count(*) FROM memstore.{} WHERE namespace_id = %s").format(
                psycopg.sql.Identifier(table)
            ),
            (namespace_id,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_pass_decays_lessons_and_weights_and_summarises_old_activations(ns, database_url):
    _activated(ns)
    lesson = ns.lessons.add("Test before you ship", source="review", confidence=0.5)
    applied = ns.lessons.add("Write the changelog", source="review", confidence=0.5)
    ns.lessons.record_applied(applied.id)
    logged = _count(database_url, "activations", ns.id)
    assert logged > 0
    truth_before = {t: _count(database_url, t, ns.id) for t in TRUTH}

    report = ns.maintain(retention=timedelta(0))

    assert report.decay_steps == 1 and report.changed and not report.dry_run
    assert report.lessons_decayed == 1 and report.lessons_retired == []
    assert ns.lessons.get(lesson.id).confidence == pytest.approx(0.5 * 0.95, rel=1e-6)
    assert ns.lessons.get(applied.id).confidence == pytest.approx(0.5)
    assert report.edges_decayed == 0  # fired within the period: still in use
    assert report.activations_summarised == logged
    assert _count(database_url, "activations", ns.id) == 0
    with psycopg.connect(database_url) as conn:
        total = conn.execute(
            "SELECT sum(activations) FROM memstore.activation_summaries WHERE namespace_id = %s",
            (ns.id,),
        ).fetchone()
    assert total == (logged,)
    # Truth tables are never touched (the run's own record aside).
    assert {t: _count(database_url, t, ns.id) for t in TRUTH} == truth_before
    assert _count(database_url, "maintenance_runs", ns.id) == 1


def test_a_second_pass_at_once_changes_nothing(ns, database_url):
    _activated(ns)
    ns.lessons.add("Test before you ship", source="review", confidence=0.5)
    ns.maintain(retention=timedelta(0))
    before = row_counts(database_url)
    with psycopg.connect(database_url) as conn:
        state = conn.execute(
            "SELECT array_agg(current_confidence ORDER BY node_id) FROM memstore.node_state"
            " WHERE namespace_id = %s",
            (ns.id,),
        ).fetchone()
        weights = conn.execute(
            "SELECT array_agg(hebbian_weight ORDER BY edge_id) FROM memstore.edge_state"
            " WHERE namespace_id = %s",
            (ns.id,),
        ).fetchone()

    again = ns.maintain(retention=timedelta(0))

    assert not again.changed and again.decay_steps == 0
    assert again.text() == f"{ns.name}: nothing due"
    assert row_counts(database_url) == before
    with psycopg.connect(database_url) as conn:
        assert (
            conn.execute(
                "SELECT array_agg(current_confidence ORDER BY node_id) FROM memstore.node_state"
                " WHERE namespace_id = %s",
                (ns.id,),
            ).fetchone()
            == state
        )
        assert (
            conn.execute(
                "SELECT array_agg(hebbian_weight ORDER BY edge_id) FROM memstore.edge_state"
                " WHERE namespace_id = %s",
                (ns.id,),
            ).fetchone()
            == weights
        )


def test_decay_is_due_in_whole_periods(ns):
    _activated(ns)
    ns.lessons.add("Test before you ship", source="review", confidence=0.8)
    assert ns.maintain().decay_steps == 1
    # A period shorter than the time since the first pass: many steps at once,
    # and the edges last fired more than a period ago fade.
    later = ns.maintain(decay_period=timedelta(microseconds=1))
    assert later.decay_steps >= 1
    assert later.lessons_decayed == 1
    assert later.edges_decayed >= 1


def test_due_steps_counts_whole_periods():
    from datetime import datetime

    t = datetime(2026, 1, 8, 12, tzinfo=UTC)
    day = timedelta(days=1)
    assert due_steps(None, t, day) == (1, t)
    assert due_steps(t - timedelta(hours=23), t, day) == (0, t - timedelta(hours=23))
    assert due_steps(t - timedelta(days=2, hours=1), t, day) == (2, t - timedelta(hours=1))
    assert due_steps(t + day, t, day) == (0, t + day)


def test_a_faint_unused_lesson_is_retired_with_a_reason(ns):
    faint = ns.lessons.add("Always use tabs", source="old habit", confidence=0.1)
    report = ns.maintain()
    assert report.lessons_retired == [faint.id]
    assert ns.get(faint.id).status is NodeStatus.TOMBSTONED


def test_a_dry_run_reports_and_changes_nothing(ns, database_url):
    _activated(ns)
    ns.lessons.add("Test before you ship", source="review", confidence=0.5)
    before = row_counts(database_url)
    dry = ns.maintain(dry_run=True, retention=timedelta(0))
    assert dry.dry_run and dry.changed and dry.activations_summarised > 0
    assert row_counts(database_url) == before
    real = ns.maintain(retention=timedelta(0))
    assert real.activations_summarised == dry.activations_summarised
    assert real.lessons_decayed == dry.lessons_decayed


def test_retention_keeps_recent_telemetry(ns, database_url):
    _activated(ns)
    logged = _count(database_url, "activations", ns.id)
    report = ns.maintain()  # the default retention: 30 days
    assert report.activations_summarised == 0
    assert _count(database_url, "activations", ns.id) == logged


def test_a_namespace_nobody_wrote_is_not_created(store, database_url):
    before = row_counts(database_url)
    report = store.namespace("never-written-maintain").maintain()
    assert not report.changed
    assert row_counts(database_url) == before


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"dry_run": "yes"}, "dry_run"),
        ({"retention": timedelta(days=-1)}, "retention"),
        ({"retention": 30}, "retention"),
        ({"decay_period": timedelta(0)}, "decay_period"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(ns, database_url, arguments, field):
    ns.remember("something to keep")
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError) as caught:
        ns.maintain(**arguments)
    assert caught.value.field == field
    assert row_counts(database_url) == before


def test_concurrent_passes_take_turns_and_decay_once(ns, database_url):
    lesson = ns.lessons.add("Test before you ship", source="review", confidence=0.5)
    ns.remember("warm up the namespace")
    reports = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            reports.append(ns.maintain())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert sorted(r.decay_steps for r in reports) == [0, 0, 1]
    assert ns.lessons.get(lesson.id).confidence == pytest.approx(0.5 * 0.95, rel=1e-6)


def test_the_activation_log_refuses_a_direct_delete_but_not_the_pass(ns, conn):
    _activated(ns)
    with pytest.raises(psycopg.Error) as caught:
        conn.execute("DELETE FROM memstore.activations WHERE namespace_id = %s", (ns.id,))
    assert "ns.maintain()" in (caught.value.diag.message_primary or "")
    assert ns.maintain(retention=timedelta(0)).activations_summarised > 0


def test_the_service_role_runs_a_pass(app_url, store, database_url):
    from memstore import MemoryStore
    from memstore.embedding.hashing import HashingEmbedder

    with MemoryStore.open(app_url, embedder=HashingEmbedder()) as app:
        ns = app.namespace("maintained-by-the-app")
        _activated(ns)
        report = ns.maintain(retention=timedelta(0))
        assert report.activations_summarised > 0
        assert _count(database_url, "activations", ns.id) == 0
        with psycopg.connect(app_url) as conn, pytest.raises(psycopg.Error):
            conn.execute("DELETE FROM memstore.activations WHERE namespace_id = %s", (ns.id,))
