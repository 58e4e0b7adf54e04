"""Citus readiness at run time: every statement the service sends during a workload
that touches every verb keeps the namespace condition in every table reference
(the rules of tests/citus.py), including the SQLAlchemy Core statements no
file holds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import event

from tests.citus import violations


@pytest.fixture
def captured(store):
    statements: list[str] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", capture)
    yield statements
    event.remove(store.engine, "before_cursor_execute", capture)


def test_every_statement_of_a_workload_filters_on_the_namespace(store, captured):
    ns = store.namespace("citus-workload")
    a = ns.remember("Alice lives in Lisbon", kind="semantic", privacy=1)
    b = ns.remember("Alice likes green tea")
    a2 = ns.revise(a.id, "Alice lives in Porto", reason="moved")
    edge = ns.link(a2.id, b.id, relation="related", weight=0.7)
    ids = ns.remember_many([f"bulk {i} about Alice" for i in range(20)])
    for mode in ("semantic", "lexical", "hybrid"):
        ns.recall("where does Alice live", mode=mode, privacy_ceiling=2)
    ns.recall("Alice", as_of=a2.recorded_at, include_superseded=True, include_tombstoned=True)
    ns.activate("Alice", learn=True, both_directions=True)
    ns.activate(seeds=[a.id], depth=3)
    ns.decay_hebbian(0.5, unused_for=timedelta(0))
    ns.forget(ids[0], reason="noise")
    ns.forget(edge.id, target="edge", reason="wrong link")
    ns.redact(b.id, reason="erasure request", actor="dpo")
    ns.get(a.id)
    ns.lineage(a2.id)
    ns.summary()
    ns.embedding_status()
    ns.rebuild_embeddings()
    ns.scratchpad.pin("city", "Porto")
    ns.scratchpad.pin("city", "Braga")
    ns.scratchpad.history("city")
    ns.timeline.ingest_turn("user", "hello from Alice", "s1")
    ns.timeline.ingest_turn("assistant", "hello Alice", "s1")
    ns.timeline.recent(5, session_id="s1")
    lesson = ns.lessons.add("check the city before booking", source="test", confidence=0.9)
    ns.lessons.record_applied(lesson.id)
    ns.lessons.decay_unused(0.9, 0.1)
    ns.lessons.enforce_cap(10)
    ns.recall_context("where does Alice live", 500)
    lifecycle_workload(ns)
    ns.clear(reason="end of test")

    memstore_statements = [s for s in captured if "memstore." in s]
    assert len(memstore_statements) > 40
    found = sorted({str(v) for s in memstore_statements for v in violations(s, "runtime")})
    assert found == []


def lifecycle_workload(ns):
    """Every lifecycle verb: apply in each phase, sleep, review, cultivate, the policy."""
    anatomy = {
        "target": "Alice",
        "claim_or_question": "Alice may move again",
        "tension": "her lease ends",
        "action_implication": "ask before booking",
        "anchors": ["turn:1"],
    }
    ns.set_policy({"refused_kinds": ["procedural"]}, reason="test")
    ns.policy()
    ns.apply(
        [
            {"op": "record_short_term", "anatomy": anatomy},
            {"op": "record_short_term", "anatomy": {**anatomy, "claim_or_question": "Or not"}},
            {"op": "queue_candidate_intervention", "anatomy": anatomy, "content": "Ask Alice"},
            {"op": "upsert_agency_pressure", "key": "k", "target": "Alice", "pressure": 0.5,
             "rationale": "lease"},
        ],
        phase="rumination",
    )  # fmt: skip
    ns.sleep(forced=True)
    identity = {"op": "crystallize_identity", "anatomy": anatomy, "content": "I ask first"}
    proposed = ns.apply(
        [{"op": "propose", "operation": identity, "rationale": "r", "evidence": ["e"]}],
        phase="wake",
    )
    ns.review.pending()
    accepted = ns.review.accept(proposed.results[0].proposal_id, reviewer="alice")
    ns.cultivate(accepted.written[0], "I ask first, kindly", reason="grew", actor="alice")
    ns.apply([{"op": "retire_agency_pressure", "key": "k", "reason": "done"}], phase="wake")


def test_the_runtime_walk_would_notice_a_statement_without_its_filter(store, captured):
    ns = store.namespace("citus-negative")
    ns.remember("something to count")
    with store.transaction() as conn:
        conn.exec_driver_sql("SELECT count(*) FROM memstore.nodes")
    assert [str(v) for s in captured for v in violations(s, "runtime")] == [
        "runtime: memstore.nodes without a namespace_id condition: FROM memstore.nodes"
    ]
