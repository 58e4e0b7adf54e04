"""The lifecycle law on a real store: apply, receipts, review, protected nodes, sleep."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.errors import (
    InvalidInputError,
    OperationRejectedError,
    ProposalNotFoundError,
    ProtectedNodeError,
    SleepResidueError,
)
from memstore.law.ops import Distill, PruneShortTerm
from memstore.models import NodeStatus
from tests.conftest import row_counts


def anatomy(target="Maya", claim="Maya is allergic to peanuts", anchors=("turn:12",)):
    return {
        "target": target,
        "claim_or_question": claim,
        "tension": "the team dinner is at a Thai place",
        "action_implication": "check the menu for peanuts",
        "anchors": list(anchors),
    }


def record(claim, *, target="Maya", salience=0.5, anchors=("turn:12",)):
    return {
        "op": "record_short_term",
        "anatomy": anatomy(target, claim, anchors),
        "salience": salience,
    }


def ruminate(ns, *claims, **kwargs):
    receipt = ns.apply([record(c, **kwargs) for c in claims], phase="rumination", actor="agent")
    assert receipt.applied, receipt.summary()
    return [r.nodes[0] for r in receipt.results]


def operations_rows(url, namespace_id):
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT op, phase, actor, outcome, reason, payload, receipt FROM memstore.operations"
            " WHERE namespace_id = %s ORDER BY id",
            (namespace_id,),
        ).fetchall()


def durable(ns, *, claim="Deploys fail on Fridays"):
    [source] = ruminate(ns, claim, target="deploys")
    receipt = ns.apply(
        [{"op": "distill", "sources": [source], "anatomy": anatomy("deploys", claim)}],
        phase="sleep",
        actor="sleeper",
    )
    assert receipt.applied, receipt.summary()
    return receipt.results[0].nodes[0]


def crystallized(ns, content="I tell the truth, even when it costs"):
    crystallize = {"op": "crystallize_identity", "anatomy": anatomy("self"), "content": content}
    proposed = ns.apply(
        [{"op": "propose", "operation": crystallize, "rationale": "r", "evidence": ["turn:3"]}],
        phase="wake",
        actor="agent",
    )
    receipt = ns.review.accept(proposed.results[0].proposal_id, reviewer="alice")
    return receipt.results[0].nodes[0]


# --- apply and receipts -----------------------------------------------------------------


def test_rumination_that_writes_durable_memory_is_rejected_and_writes_nothing(ns, database_url):
    [source] = ruminate(ns, "Maya is allergic to peanuts")
    before = row_counts(database_url)
    receipt = ns.apply(
        [
            record("Maya likes Thai food"),
            {"op": "distill", "sources": [source], "anatomy": anatomy()},
        ],
        phase="rumination",
        actor="agent",
    )
    assert not receipt.applied
    assert [r.outcome for r in receipt.results] == ["accepted", "rejected"]
    assert "does not permit distill" in receipt.rejected[0].reason
    assert row_counts(database_url) == before
    assert ns.get(source).status is NodeStatus.CURRENT


def test_an_applied_batch_is_audited_one_row_per_operation(ns, database_url):
    receipt = ns.apply(
        [json.dumps(record("Maya is allergic to peanuts")), record("Bo likes jazz", target="Bo")],
        phase="rumination",
        actor="agent-7",
    )
    assert receipt.applied and len(receipt.accepted) == 2 and receipt.rejected == []
    node = ns.get(receipt.written[0])
    assert (node.tier, node.node_type, node.kind) == ("short_term", "ShortTermMemory", "working")
    assert node.data["anatomy"]["tension"] == "the team dinner is at a Thai place"
    rows = operations_rows(database_url, ns.id)
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("record_short_term", "rumination", "agent-7", "accepted")
    ] * 2
    assert rows[0][6]["nodes"] == [receipt.written[0]]
    assert [r.operation_id for r in receipt.results] == sorted(
        r.operation_id for r in receipt.results
    )


def test_partial_batches_apply_the_accepted_and_record_the_rejected(ns, database_url):
    receipt = ns.apply(
        [record("Maya is allergic to peanuts"), {"op": "teleport"}, {"op": "remember"}],
        phase="rumination",
        actor="agent",
        atomic=False,
    )
    assert receipt.applied
    assert [r.outcome for r in receipt.results] == ["accepted", "rejected", "rejected"]
    assert "not a valid operation" in receipt.results[1].reason
    rows = operations_rows(database_url, ns.id)
    assert [r[3] for r in rows] == ["accepted", "rejected", "rejected"]
    assert rows[1][5]["unparsed"]["op"] == "teleport"


def test_the_audit_log_keeps_digests_of_memory_text_not_the_text(ns, database_url):
    secret = "Maya's diagnosis is confidential"
    receipt = ns.apply(
        [{"op": "record_short_term", "anatomy": anatomy(claim=secret), "content": secret}],
        phase="rumination",
        actor="agent",
    )
    node_id = receipt.written[0]
    ns.redact(node_id, reason="data-subject request", actor="dpo")
    with psycopg.connect(database_url) as conn:
        everywhere = conn.execute(
            "SELECT count(*) FROM memstore.operations"
            " WHERE namespace_id = %s AND (payload::text || receipt::text) LIKE %s",
            (ns.id, "%diagnosis%"),
        ).fetchone()
        payload = conn.execute(
            "SELECT payload FROM memstore.operations WHERE namespace_id = %s", (ns.id,)
        ).fetchone()[0]  # type: ignore[index]
    assert everywhere == (0,)
    assert payload["content"]["chars"] == len(secret)
    assert payload["salience"] == 0.5 and payload["op"] == "record_short_term"
    assert ns.get(node_id).content == ""


def test_bad_arguments_raise_before_anything_is_judged(ns, database_url):
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError, match="phase"):
        ns.apply([record("x")], phase="daydream", actor="agent")
    with pytest.raises(InvalidInputError, match="list of operations"):
        ns.apply(record("x"), phase="rumination", actor="agent")
    with pytest.raises(InvalidInputError, match="actor"):
        ns.apply([record("x")], phase="rumination", actor=" ")
    assert row_counts(database_url) == before


def test_an_empty_batch_is_applied_and_writes_nothing(ns, database_url):
    before = row_counts(database_url)
    receipt = ns.apply([], phase="wake")
    assert receipt.applied and receipt.results == []
    assert row_counts(database_url) == before


def test_generic_verbs_as_operations(ns):
    a = ns.remember("Maya is allergic to peanuts", kind="semantic")
    b = ns.remember("The dinner is at a Thai place", kind="semantic")
    receipt = ns.apply(
        [
            {"op": "link", "src": b.id, "dst": a.id, "relation": "constrained_by", "weight": 0.9},
            {
                "op": "revise",
                "node_id": b.id,
                "content": "The dinner moved to Friday",
                "reason": "r",
            },
            {"op": "remember", "content": "Bo likes jazz", "kind": "semantic"},
        ],
        phase="wake",
        actor="agent",
    )
    assert receipt.applied, receipt.summary()
    assert ns.get(b.id).status is NodeStatus.SUPERSEDED
    forget = ns.apply([{"op": "forget", "target_id": a.id, "reason": "wrong"}], phase="wake")
    assert forget.applied and ns.get(a.id).status is NodeStatus.TOMBSTONED
    edge_id = receipt.results[0].edges[0]
    again = ns.apply(
        [{"op": "forget", "target_id": edge_id, "target": "edge", "reason": "x"}] * 2,
        phase="wake",
    )
    assert not again.applied
    bad = ns.apply(
        [
            {
                "op": "revise",
                "node_id": a.id,
                "content": "x",
                "reason": "r",
                "changes": {"importance": 7},
            }
        ],
        phase="wake",
    )
    assert "tombstoned" in bad.rejected[0].reason


# --- durable memory --------------------------------------------------------------------------


def test_revision_retires_the_superseded_memory_with_its_reason(ns, database_url):
    node_id = durable(ns)
    receipt = ns.apply(
        [
            {
                "op": "revise_durable",
                "node_id": node_id,
                "reason": "seen on three more Fridays",
                "epistemic_tier": "lesson",
                "disposition": "provisional",
            }
        ],
        phase="sleep",
        actor="sleeper",
    )
    assert receipt.applied, receipt.summary()
    new = ns.get(receipt.written[0])
    assert ns.get(node_id).status is NodeStatus.SUPERSEDED
    assert ns.get(node_id).superseded_by == new.id
    assert new.content == ns.get(node_id).content
    assert (new.data["epistemic_tier"], new.data["disposition"]) == ("lesson", "provisional")
    with psycopg.connect(database_url) as conn:
        link = conn.execute(
            "SELECT reason, actor FROM memstore.supersessions"
            " WHERE namespace_id = %s AND old_id = %s",
            (ns.id, node_id),
        ).fetchone()
    assert link == ("seen on three more Fridays", "sleeper")


def test_an_illegal_disposition_transition_is_rejected(ns, database_url):
    node_id = durable(ns)
    before = row_counts(database_url)
    receipt = ns.apply(
        [{"op": "revise_durable", "node_id": node_id, "reason": "r", "disposition": "stable"}],
        phase="sleep",
        actor="sleeper",
    )
    assert not receipt.applied
    assert "cannot move from experimental to stable" in receipt.rejected[0].reason
    assert row_counts(database_url) == before


def test_distilling_cites_its_sources_and_unions_their_anchors(ns, database_url):
    first, second = ruminate(
        ns, "Deploys fail on Fridays", "Friday deploys broke twice", target="deploys"
    )
    receipt = ns.apply(
        [
            Distill(
                sources=[first, second],
                anatomy=anatomy("deploys", "Do not deploy on Fridays", ["runbook"]),
                confidence=0.8,
            )
        ],
        phase="sleep",
        actor="sleeper",
    )
    assert receipt.applied, receipt.summary()
    memory = ns.get(receipt.written[0])
    assert (memory.tier, memory.kind, memory.data["support"]) == ("durable", "semantic", 2)
    assert memory.data["anatomy"]["anchors"] == ["runbook", "turn:12"]
    assert sorted(receipt.results[0].accounted) == sorted([first, second])
    with psycopg.connect(database_url) as conn:
        cited = conn.execute(
            "SELECT dst FROM memstore.edges WHERE namespace_id = %s AND src = %s"
            " AND relation = 'distills' ORDER BY dst",
            (ns.id, memory.id),
        ).fetchall()
    assert [dst for (dst,) in cited] == sorted([first, second])
    for source in (first, second):
        assert ns.get(source).status is NodeStatus.TOMBSTONED


def test_a_distilled_memory_is_as_private_as_its_most_private_source(ns):
    """It carries its sources' anchors: a secret's words must not become readable below it."""
    secret = {**record("Maya's diagnosis is private", anchors=("clinic letter",)), "privacy": 3}
    receipt = ns.apply(
        [record("Maya skipped the dinner"), secret], phase="rumination", actor="agent"
    )
    assert receipt.applied, receipt.summary()
    sources = [r.nodes[0] for r in receipt.results]
    distilled = ns.apply(
        [{"op": "distill", "sources": sources, "anatomy": anatomy("Maya", "Maya is unwell")}],
        phase="sleep",
        actor="sleeper",
    )
    assert distilled.applied, distilled.summary()
    memory = ns.get(distilled.written[0])
    assert "clinic letter" in memory.data["anatomy"]["anchors"]
    assert memory.privacy == 3
    assert distilled.written[0] not in {hit.node.id for hit in ns.recall("Maya", privacy_ceiling=0)}


# --- review and identity -----------------------------------------------------------------------


def test_crystallization_without_review_is_rejected(ns, database_url):
    before = row_counts(database_url)
    crystallize = {"op": "crystallize_identity", "anatomy": anatomy("self"), "content": "I am kind"}
    for phase in ("wake", "sleep", "review", "rumination"):
        receipt = ns.apply([crystallize], phase=phase, actor="agent")
        assert not receipt.applied and "needs review" in receipt.rejected[0].reason
    assert row_counts(database_url) == before


def test_review_queue_accepts_through_the_law_and_decides_once(ns):
    identity = crystallized(ns)
    node = ns.get(identity)
    assert (node.protected, node.layer, node.tier) == (True, 0, "identity")
    proposals = ns.review.pending()
    assert proposals == []
    crystallize = {"op": "crystallize_identity", "anatomy": anatomy("self"), "content": "I rest"}
    proposed = ns.apply(
        [{"op": "propose", "operation": crystallize, "rationale": "r", "evidence": ["turn:9"]}],
        phase="sleep",
        actor="sleeper",
    )
    proposal_id = proposed.results[0].proposal_id
    [pending] = ns.review.pending()
    assert (pending.id, pending.op, pending.evidence, pending.proposed_by) == (
        proposal_id,
        "crystallize_identity",
        ["turn:9"],
        "sleeper",
    )
    rejected = ns.review.reject(proposal_id, reviewer="alice", reason="not yet")
    assert (rejected.status, rejected.decided_by, rejected.decision_reason) == (
        "rejected",
        "alice",
        "not yet",
    )
    with pytest.raises(OperationRejectedError, match="already rejected"):
        ns.review.accept(proposal_id, reviewer="alice")
    with pytest.raises(ProposalNotFoundError):
        ns.review.get(10**12)


def test_the_same_operation_proposed_while_it_waits_is_one_proposal(ns, database_url):
    """A nightly sleep that sees the same pattern again does not queue it twice;
    once decided, proposing it again is a new proposal."""
    crystallize = {"op": "crystallize_identity", "anatomy": anatomy("self"), "content": "I rest"}

    def propose(rationale: str) -> int:
        proposed = ns.apply(
            [
                {
                    "op": "propose",
                    "operation": crystallize,
                    "rationale": rationale,
                    "evidence": ["t:1"],
                }
            ],
            phase="sleep",
            actor="sleeper",
        )
        assert proposed.applied, proposed.summary()
        return int(proposed.results[0].proposal_id)

    first = propose("seen on Monday")
    proposals_before = row_counts(database_url)["proposals"]
    assert propose("seen again on Tuesday") == first
    assert row_counts(database_url)["proposals"] == proposals_before
    assert [p.rationale for p in ns.review.pending()] == ["seen on Monday"]
    ns.review.reject(first, reviewer="alice", reason="not yet")
    assert propose("seen on Wednesday") != first


def test_accepting_a_proposal_the_law_now_rejects_leaves_it_pending(ns, database_url):
    node_id = durable(ns)
    retire = {"op": "retire_durable", "node_id": node_id, "reason": "obsolete"}
    proposed = ns.apply(
        [{"op": "propose", "operation": retire, "rationale": "r", "evidence": ["e"]}],
        phase="sleep",
        actor="sleeper",
    )
    ns.apply([retire], phase="sleep", actor="sleeper")  # retired meanwhile
    before = row_counts(database_url)
    with pytest.raises(OperationRejectedError, match="tombstoned"):
        ns.review.accept(proposed.results[0].proposal_id, reviewer="alice")
    assert row_counts(database_url) == before
    assert ns.review.get(proposed.results[0].proposal_id).status == "pending"


# --- protected nodes ------------------------------------------------------------------------------


def test_protected_nodes_refuse_every_door_but_cultivate(ns, database_url):
    identity = crystallized(ns)
    other = ns.remember("Bo likes jazz")
    before = row_counts(database_url)
    with pytest.raises(ProtectedNodeError):
        ns.revise(identity, "I lie when convenient", reason="drift")
    with pytest.raises(ProtectedNodeError):
        ns.forget(identity, reason="drift")
    with pytest.raises(ProtectedNodeError):
        ns.link(other.id, identity)
    receipt = ns.apply(
        [{"op": "revise", "node_id": identity, "content": "x", "reason": "r"}], phase="wake"
    )
    assert "protected" in receipt.rejected[0].reason
    assert ns.clear(reason="start over") == 1  # Bo, not the identity
    assert row_counts(database_url)["nodes"] == before["nodes"]

    new = ns.cultivate(identity, "I tell the truth kindly", reason="therapy", actor="alice")
    assert new.protected and ns.get(identity).superseded_by == new.id
    rows = operations_rows(database_url, ns.id)
    op, _phase, actor, outcome, reason, payload, _ = rows[-1]
    assert (op, actor, outcome, reason, payload["node_id"]) == (
        "cultivate",
        "alice",
        "accepted",
        "therapy",
        identity,
    )
    retired = ns.cultivate(new.id, retire=True, reason="no longer me", actor="alice")
    assert retired.status is NodeStatus.TOMBSTONED
    with pytest.raises(InvalidInputError, match="not protected"):
        ns.cultivate(ns.remember("Cy moved to Porto").id, "x", reason="r", actor="alice")


# --- the agent's intentions ----------------------------------------------------------------------


def test_agency_pressure_is_one_current_value_per_key_without_speech(ns):
    press = {"op": "upsert_agency_pressure", "key": "dinner", "target": "Maya"}
    first = ns.apply([{**press, "pressure": 0.4, "rationale": "soon"}], phase="rumination")
    second = ns.apply([{**press, "pressure": 0.9, "rationale": "tomorrow"}], phase="rumination")
    assert ns.get(first.written[0]).superseded_by == second.written[0]
    speech = ns.apply(
        [{**press, "pressure": 0.9, "rationale": 'say "see you tomorrow"'}], phase="rumination"
    )
    assert "no speech" in speech.rejected[0].reason
    retire = {"op": "retire_agency_pressure", "key": "dinner", "reason": "done"}
    assert ns.apply([retire], phase="wake").applied
    assert "no agency pressure" in ns.apply([retire], phase="wake").rejected[0].reason


def test_candidate_interventions_are_queued_spoken_once_and_retired(ns):
    queued = ns.apply(
        [{"op": "queue_candidate_intervention", "anatomy": anatomy(), "content": "Ask Maya"}],
        phase="rumination",
    )
    node_id = queued.written[0]
    spoken = ns.apply([{"op": "mark_candidate_spoken", "node_id": node_id}], phase="wake")
    new = ns.get(spoken.written[0])
    assert new.data["status"] == "spoken"
    again = ns.apply([{"op": "mark_candidate_spoken", "node_id": new.id}], phase="wake")
    assert "already spoken" in again.rejected[0].reason
    retire = {"op": "retire_candidate_intervention", "node_id": new.id, "reason": "done"}
    assert ns.apply([retire], phase="wake").applied


def test_namespace_policy_is_versioned_and_enforced(ns):
    assert ns.policy().refused_kinds == frozenset()
    ns.set_policy({"refused_kinds": ["episodic"]}, reason="facts only")
    refused = ns.apply([{"op": "remember", "content": "we met", "kind": "episodic"}], phase="wake")
    assert "refuses episodic" in refused.rejected[0].reason
    ns.set_policy({}, reason="anything goes")
    ns.set_policy({"refused_kinds": ["episodic"]}, reason="facts only, again")
    assert ns.policy().refused_kinds == {"episodic"}
    with pytest.raises(InvalidInputError, match="policy"):
        ns.set_policy({"refused_kinds": ["dreams"]}, reason="r")


# --- sleep --------------------------------------------------------------------------------------


def test_forced_sleep_with_residue_fails_and_leaves_the_store_unchanged(ns, database_url):
    ids = ruminate(ns, "Maya is allergic to peanuts", "Bo likes jazz", "Cy moved to Porto")
    before = row_counts(database_url)
    with pytest.raises(SleepResidueError) as caught:
        ns.sleep([PruneShortTerm(ids=[ids[0]], reason="noise")], forced=True, actor="sleeper")
    assert caught.value.residue == sorted(ids[1:])
    assert row_counts(database_url) == before
    unforced = ns.sleep([PruneShortTerm(ids=[ids[0]], reason="noise")], actor="sleeper")
    assert unforced.applied and unforced.residue == sorted(ids[1:])


def test_model_free_sleep_accounts_for_every_short_term_memory(ns, database_url):
    ids = ruminate(ns, "Maya is allergic to peanuts", "maya is allergic to peanuts.")
    ids += ruminate(ns, "Deploys fail on Fridays", target="deploys", salience=0.9)
    ids += ruminate(ns, "Bo might like jazz", target="Bo", salience=0.2)
    receipt = ns.sleep(forced=True, actor="sleeper")
    assert receipt.applied and receipt.residue == []
    accounted = sorted(i for r in receipt.results for i in r.accounted)
    assert accounted == sorted(ids)
    ops = [r.op for r in receipt.results]
    assert ops.count("prune_short_term") == 1 and "merge_into_incubation" in ops
    tiers = {ns.get(node).tier for r in receipt.results for node in r.nodes}
    assert {"durable", "incubation"} <= tiers
    assert ns.sleep(forced=True, actor="sleeper").results == []  # nothing left under pressure
    # A later weak memory of the same target joins the same incubation.
    later = ruminate(ns, "Bo hums jazz standards", target="Bo", salience=0.1)
    merged = ns.sleep(forced=True, actor="sleeper")
    incubation = merged.results[0].nodes[0]
    assert ns.get(incubation).label == "Bo" and merged.results[0].accounted == later


def test_a_plugged_in_distiller_goes_through_the_same_law(ns):
    [source] = ruminate(ns, "Maya is allergic to peanuts")

    def reckless(given):
        assert [r.id for r in given.records] == [source]
        return [{"op": "remember", "content": "anything", "kind": "semantic"}]

    with pytest.raises(SleepResidueError, match="does not permit remember"):
        ns.sleep(distiller=reckless, forced=True, actor="llm")

    def careful(given):
        return [{"op": "prune_short_term", "ids": [r.id for r in given.records], "reason": "x"}]

    assert ns.sleep(distiller=careful, forced=True, actor="llm").residue == []


# --- the property: nothing lost, nothing counted twice ------------------------------------------

CLAIMS = st.sampled_from(["peanuts", "jazz", "Porto", "Fridays", "Thai food", "tea"])


@st.composite
def batches(draw):
    kind = draw(st.sampled_from(["record", "prune", "distill", "merge", "bad"]))
    picks = draw(st.lists(st.integers(0, 30), min_size=1, max_size=4))
    return kind, draw(CLAIMS), picks, draw(st.booleans())


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(batches(), min_size=1, max_size=8))
def test_every_short_term_memory_is_alive_or_accounted_for_exactly_once(store, database_url, steps):
    ns = store.namespace(f"prop-{uuid.uuid4().hex[:10]}")
    known: list[int] = []
    for kind, claim, picks, atomic in steps:
        chosen = sorted({known[p % len(known)] for p in picks}) if known else [10**9]
        if kind == "record":
            ops = [record(f"{claim} {p}", target=claim) for p in picks]
            phase = "rumination"
        elif kind == "prune":
            ops = [{"op": "prune_short_term", "ids": chosen, "reason": "noise"}]
            phase = "sleep"
        elif kind == "distill":
            ops = [{"op": "distill", "sources": chosen, "anatomy": anatomy(claim)}]
            phase = "sleep"
        elif kind == "merge":
            ops = [{"op": "merge_into_incubation", "sources": chosen, "target": claim}]
            phase = "sleep"
        else:
            ops = [record(claim), {"op": "distill", "sources": chosen, "anatomy": anatomy()}]
            phase = "rumination"
        before = row_counts(database_url)
        receipt = ns.apply(ops, phase=phase, actor="prop", atomic=atomic)
        if not receipt.applied:
            assert row_counts(database_url) == before
        known += [
            n for r in receipt.results if r.applied and r.op == "record_short_term" for n in r.nodes
        ]
    with psycopg.connect(database_url) as conn:
        accounted = conn.execute(
            "SELECT (jsonb_array_elements_text(receipt->'accounted'))::bigint, count(*)"
            " FROM memstore.operations WHERE namespace_id = %s AND outcome = 'accepted'"
            " GROUP BY 1",
            (ns.id,),
        ).fetchall()
    times: dict[int, int] = dict(accounted)
    for node_id in set(known):
        alive = ns.get(node_id).status is NodeStatus.CURRENT
        assert alive != (times.get(node_id, 0) == 1), (node_id, times.get(node_id))
        assert times.get(node_id, 0) <= 1
