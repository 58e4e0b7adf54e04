"""The operator views agree with what the service layer reports (docs/operators.md)."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from memstore.db.roles import VIEWS
from memstore.models import NodeStatus


@pytest.fixture(scope="module")
def world(store, database_url):
    """One namespace with a node in every status, learned edges, stale and missing vectors."""
    ns = store.namespace("views-world")
    home = ns.remember("Alice lives in Lisbon", kind="semantic", tier="facts")
    moved = ns.revise(home.id, "Alice lives in Porto", reason="she moved")
    again = ns.revise(moved.id, "Alice lives in Braga", reason="moved again")
    tea = ns.remember("Alice likes green tea", tags=["alice", "drinks"])
    phone = ns.remember("Alice's phone is 555 0100", tier="facts")
    noise = ns.remember("a passing remark", tier="chatter")
    stale = ns.remember("Bob plays chess")
    lost = ns.remember("Bob collects stamps")
    ns.link(again.id, tea.id, weight=0.6)
    ns.link(tea.id, stale.id, weight=0.4)
    ns.link(again.id, lost.id, weight=0.2)
    ns.forget(noise.id, reason="noise")
    ns.redact(phone.id, reason="erasure request", actor="dpo")
    runs = [ns.activate("Alice tea", learn=True), ns.activate("Alice lives", learn=True)]
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(
            "UPDATE memstore.embeddings SET source_hash = '\\x00'"
            " WHERE namespace_id = %s AND node_id = %s",
            (ns.id, stale.id),
        )
        admin.execute(
            "DELETE FROM memstore.embeddings WHERE namespace_id = %s AND node_id = %s",
            (ns.id, lost.id),
        )
        # Proposals enter pending at the server's time (sql/09): one statement
        # each, oldest first, then the first is decided.
        for proposed in ("distill", "retire", "revise"):
            admin.execute(
                "INSERT INTO memstore.proposals (namespace_id, operation)"
                " VALUES (%s, jsonb_build_object('op', %s::text))",
                (ns.id, proposed),
            )
        admin.execute(
            "UPDATE memstore.proposals SET status = 'accepted', decided_by = 'me'"
            " WHERE namespace_id = %s AND operation ->> 'op' = 'distill'",
            (ns.id,),
        )
        admin.execute(
            "INSERT INTO memstore.operations (namespace_id, batch_id, op, outcome, actor) VALUES"
            " (%(ns)s, 'b1', 'distill', 'accepted', 'agent'),"
            " (%(ns)s, 'b1', 'distill', 'accepted', 'agent'),"
            " (%(ns)s, 'b2', 'distill', 'rejected', 'agent'),"
            " (%(ns)s, 'b2', 'revise', 'accepted', 'human')",
            {"ns": ns.id},
        )
    ids = {
        "home": home.id, "moved": moved.id, "again": again.id, "tea": tea.id,
        "phone": phone.id, "noise": noise.id, "stale": stale.id, "lost": lost.id,
    }  # fmt: skip
    return ns, ids, runs


def _rows(url, query, *params):
    with psycopg.connect(url) as conn:
        return conn.execute(query, params).fetchall()


def test_views_exist_and_are_security_invoker(database_url):
    rows = _rows(
        database_url,
        "SELECT relname, reloptions FROM pg_class"
        " WHERE relnamespace = 'memstore'::regnamespace AND relkind = 'v' ORDER BY 1",
    )
    assert {name for name, _ in rows} == set(VIEWS)
    assert all(options == ["security_invoker=true"] for _, options in rows)


def test_namespace_and_tier_stats_match_the_summary(world, database_url):
    ns, _, _ = world
    summary = ns.summary()
    (stats,) = _rows(
        database_url,
        "SELECT namespace, nodes, current, superseded, tombstoned, redacted"
        " FROM memstore.v_namespace_stats WHERE namespace_id = %s",
        ns.id,
    )
    assert stats == (ns.name, sum(summary.by_status.values()), *summary.by_status.values())
    assert summary.by_status == {"current": 4, "superseded": 2, "tombstoned": 1, "redacted": 1}
    tiers = _rows(
        database_url,
        "SELECT tier, current, superseded, tombstoned, redacted FROM memstore.v_tier_stats"
        " WHERE namespace_id = %s",
        ns.id,
    )
    assert {tier: dict(zip(summary.by_status, counts, strict=True)) for tier, *counts in tiers} == (
        summary.by_tier
    )


def test_current_nodes_are_the_nodes_the_service_calls_current(world, database_url):
    ns, ids, _ = world
    current = {i for i in ids.values() if ns.get(i).status is NodeStatus.CURRENT}
    rows = _rows(
        database_url, "SELECT id FROM memstore.v_current_nodes WHERE namespace_id = %s", ns.id
    )
    assert {r[0] for r in rows} == current
    statuses = _rows(
        database_url, "SELECT id, status FROM memstore.v_node_status WHERE namespace_id = %s", ns.id
    )
    assert {i: s for i, s in statuses} == {i: ns.get(i).status.value for i in ids.values()}


def test_lineage_matches_the_service(world, database_url):
    ns, ids, _ = world
    versions = [n.id for n in ns.lineage(ids["home"])]
    assert versions == [ids["home"], ids["moved"], ids["again"]]
    rows = _rows(
        database_url,
        "SELECT node_id, superseded_by, current_id, earlier_versions FROM memstore.v_node_lineage"
        " WHERE namespace_id = %s AND current_id = %s ORDER BY earlier_versions",
        ns.id,
        ids["again"],
    )
    assert rows == [
        (versions[0], versions[1], versions[2], 0),
        (versions[1], versions[2], versions[2], 1),
        (versions[2], None, versions[2], 2),
    ]


def test_embedding_freshness_matches_the_service(world, database_url):
    ns, _, _ = world
    status = ns.embedding_status()
    assert (status.stale, status.missing) == (1, 1)
    (row,) = _rows(
        database_url,
        "SELECT nodes, fresh, stale, missing FROM memstore.v_embedding_freshness"
        " WHERE namespace_id = %s AND model = %s",
        ns.id,
        ns.embedder.name,
    )
    assert row == (status.nodes, status.fresh, status.stale, status.missing)


def test_activation_history_and_learned_edges_match_the_activations(world, database_url):
    ns, _, runs = world
    working = [item.node.id for run in runs for item in run.working_memory]
    (day,) = _rows(
        database_url,
        "SELECT activations, nodes, day = (now() AT TIME ZONE 'UTC')::date"
        " FROM memstore.v_activation_daily WHERE namespace_id = %s",
        ns.id,
    )
    assert day == (len(working), len(set(working)), True)
    # Hebbian learning strengthens the edges whose ends were both in working memory.
    co_active = set()
    for run in runs:
        inside = {item.node.id for item in run.working_memory}
        for item in run.working_memory:
            for step in item.path:
                if step.edge_id is not None and step.node_id in inside:
                    co_active.add(step.edge_id)
    edges = _rows(
        database_url,
        "SELECT edge_id, rank, effective_weight >= weight FROM memstore.v_strongest_edges"
        " WHERE namespace_id = %s ORDER BY rank",
        ns.id,
    )
    assert co_active and co_active <= {e[0] for e in edges}
    assert [e[1] for e in edges] == sorted(e[1] for e in edges) and edges[0][1] == 1
    assert all(e[2] for e in edges)


def test_review_queue_puts_pending_first_oldest_first(world, database_url):
    ns, _, _ = world
    rows = _rows(
        database_url,
        "SELECT operation ->> 'op', status, waiting IS NOT NULL FROM memstore.v_review_queue"
        " WHERE namespace_id = %s ORDER BY queue_position",
        ns.id,
    )
    assert rows == [("retire", "pending", True), ("revise", "pending", True),
                    ("distill", "accepted", False)]  # fmt: skip


def test_operations_by_day_and_outcome(world, database_url):
    ns, _, _ = world
    rows = _rows(
        database_url,
        "SELECT op, outcome, operations, batches, actors FROM memstore.v_operations_daily"
        " WHERE namespace_id = %s ORDER BY op, outcome",
        ns.id,
    )
    assert rows == [
        ("distill", "accepted", 2, 1, 1),
        ("distill", "rejected", 1, 1, 1),
        ("revise", "accepted", 1, 1, 1),
    ]


DOCS = Path(__file__).resolve().parents[2] / "docs" / "operators.md"
EXAMPLES = re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.S)


def test_the_guide_has_a_dozen_examples():
    assert len(EXAMPLES) >= 12


@pytest.mark.parametrize("query", EXAMPLES, ids=[f"example-{i + 1}" for i in range(len(EXAMPLES))])
def test_every_example_in_the_operators_guide_runs(world, database_url, query):
    ns, _, _ = world
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(re.sub(r"\b42\b", str(ns.id), query)).fetchall()
    assert rows, "each example answers something in a namespace that has every kind of row"
