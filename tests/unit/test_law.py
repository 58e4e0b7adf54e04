"""The lifecycle law, judged without a database: facts in, verdicts out."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from memstore.law import Facts, NodeFacts, Policy, ProposalFacts, judge, parse_operation
from memstore.law.consolidate import Consolidator, ShortTermRecord, SleepInput
from memstore.law.law import PERMITTED, transition_error
from memstore.law.ops import ANCHOR_MISSING, OP_NAMES, Anatomy, Distill, Unparsed, operation_schema
from memstore.models import NodeStatus

ANATOMY = {
    "target": "Maya",
    "claim_or_question": "Maya is allergic to peanuts",
    "tension": "the team dinner is at a Thai place",
    "action_implication": "check the menu for peanuts",
    "anchors": ["turn:12"],
}


def node(node_id, *, tier=None, status=NodeStatus.CURRENT, protected=False, **extra):
    return NodeFacts(
        id=node_id, status=status, tier=tier, node_type="X", protected=protected, **extra
    )


def verdicts(ops, *, phase="wake", facts=None, policy=None):
    parsed = [parse_operation(op) for op in ops]
    return judge(parsed, phase=phase, facts=facts or Facts(), policy=policy or Policy())


def reasons(ops, **kwargs):
    return [v.reason for v in verdicts(ops, **kwargs)]


def short_term(*ids):
    return Facts(nodes={i: node(i, tier="short_term") for i in ids})


# --- operations as JSON ----------------------------------------------------------------


def test_every_operation_parses_from_json_and_back():
    assert len(OP_NAMES) == 20
    op = parse_operation(json.dumps({"op": "record_short_term", "anatomy": ANATOMY}))
    assert not isinstance(op, Unparsed)
    assert parse_operation(op.model_dump_json()) == op


def test_malformed_operations_come_back_with_a_reason_instead_of_raising():
    for bad in ({"op": "teleport"}, {"op": "record_short_term"}, "not json", 42, None):
        parsed = parse_operation(bad)
        assert isinstance(parsed, Unparsed)
        assert parsed.reason
    assert reasons([{"op": "distill", "sources": []}])[0].startswith("not a valid operation")


def test_anchors_are_a_list_or_the_explicit_missing_marker():
    assert Anatomy(**{**ANATOMY, "anchors": ANCHOR_MISSING}).anchors == [ANCHOR_MISSING]
    assert not Anatomy(**{**ANATOMY, "anchors": ANCHOR_MISSING}).anchored
    for anchors in ([], [ANCHOR_MISSING, "turn:1"]):
        assert isinstance(
            parse_operation(
                {"op": "record_short_term", "anatomy": {**ANATOMY, "anchors": anchors}}
            ),
            Unparsed,
        )
    incomplete = {k: v for k, v in ANATOMY.items() if k != "tension"}
    assert isinstance(parse_operation({"op": "record_short_term", "anatomy": incomplete}), Unparsed)


# --- phases ------------------------------------------------------------------------------


def test_rumination_may_only_record_queue_and_press():
    allowed = [
        {"op": "record_short_term", "anatomy": ANATOMY},
        {"op": "queue_candidate_intervention", "anatomy": ANATOMY, "content": "Ask Maya"},
        {
            "op": "upsert_agency_pressure",
            "key": "maya-dinner",
            "target": "Maya",
            "pressure": 0.7,
            "rationale": "the dinner is tomorrow",
        },
    ]
    assert reasons(allowed, phase="rumination") == [None, None, None]
    durable = [
        {"op": "remember", "content": "Maya is allergic to peanuts", "kind": "semantic"},
        {"op": "distill", "sources": [1], "anatomy": ANATOMY},
    ]
    got = reasons(durable, phase="rumination", facts=short_term(1))
    assert all("phase 'rumination' does not permit" in r for r in got)


def test_each_phase_permits_exactly_its_operations():
    assert PERMITTED["review"] == {"accept_proposal", "reject_proposal"}
    assert "distill" in PERMITTED["sleep"] and "distill" not in PERMITTED["wake"]
    assert all("crystallize_identity" not in ops for ops in PERMITTED.values())


def test_crystallizing_identity_needs_an_accepted_proposal():
    crystallize = {"op": "crystallize_identity", "anatomy": ANATOMY, "content": "I am careful"}
    for phase in ("wake", "rumination", "sleep", "review"):
        assert "needs review" in reasons([crystallize], phase=phase)[0]
    proposal = ProposalFacts(id=5, status="pending", operation=crystallize)
    facts = Facts(proposals={5: proposal})
    accept = {"op": "accept_proposal", "proposal_id": 5}
    assert reasons([accept], phase="review", facts=facts) == [None]
    assert "already decided" in reasons([accept, accept], phase="review", facts=facts)[1]
    decided = Facts(proposals={5: proposal.model_copy(update={"status": "rejected"})})
    assert "already rejected" in reasons([accept], phase="review", facts=decided)[0]


def test_a_proposal_that_could_never_be_accepted_is_refused_early():
    revise = {"op": "revise_durable", "node_id": 9, "reason": "r", "disposition": "stable"}
    propose = {"op": "propose", "operation": revise, "rationale": "r", "evidence": ["e"]}
    facts = Facts(nodes={9: node(9, tier="durable", disposition="experimental")})
    assert "would be rejected" in reasons([propose], facts=facts)[0]
    nested = {"op": "propose", "operation": propose, "rationale": "r", "evidence": ["e"]}
    assert "cannot be proposed" in reasons([nested])[0]


# --- protected nodes -------------------------------------------------------------------------


def test_protected_nodes_are_not_revised_retired_forgotten_or_linked_into():
    facts = Facts(
        nodes={
            1: node(1, tier="durable", protected=True),
            2: node(2, protected=True),
            3: node(3),
        }
    )
    sleep_ops = [
        {"op": "revise_durable", "node_id": 1, "reason": "r", "content": "new"},
        {"op": "retire_durable", "node_id": 1, "reason": "r"},
    ]
    wake_ops = [
        {"op": "revise", "node_id": 2, "content": "new", "reason": "r"},
        {"op": "forget", "target_id": 2, "reason": "r"},
        {"op": "link", "src": 3, "dst": 2},
    ]
    for reason in reasons(sleep_ops, phase="sleep", facts=facts) + reasons(wake_ops, facts=facts):
        assert reason is not None and "protected" in reason
    assert reasons([{"op": "link", "src": 2, "dst": 3}], facts=facts) == [None]


def test_generic_verbs_cannot_write_or_change_lifecycle_records():
    facts = Facts(nodes={1: node(1, tier="durable"), 2: node(2, tier="short_term")})
    got = reasons(
        [
            {"op": "revise", "node_id": 1, "content": "x", "reason": "r"},
            {"op": "forget", "target_id": 2, "reason": "r"},
            {"op": "remember", "content": "x", "tier": "identity"},
            {"op": "remember", "content": "x", "protected": True},
        ],
        facts=facts,
    )
    assert all(r is not None for r in got), got


# --- state machines --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "legal"),
    [
        ("experimental", "provisional", True),
        ("provisional", "stable", True),
        ("experimental", "deprecated", True),
        ("stable", "deprecated", True),
        ("experimental", "stable", False),
        ("stable", "provisional", False),
        ("deprecated", "experimental", False),
        ("deprecated", "stable", False),
    ],
)
def test_disposition_moves_forward_one_step_or_to_deprecated(old, new, legal):
    facts = Facts(nodes={1: node(1, tier="durable", disposition=old, epistemic_tier="note")})
    op = {"op": "revise_durable", "node_id": 1, "reason": "evidence", "disposition": new}
    reason = reasons([op], phase="sleep", facts=facts)[0]
    assert (reason is None) == legal, reason


@pytest.mark.parametrize(
    ("old", "new", "legal"),
    [
        ("note", "lesson", True),
        ("lesson", "canonical", True),
        ("note", "canonical", False),
        ("canonical", "lesson", False),
        ("lesson", "note", False),
    ],
)
def test_epistemic_tier_moves_note_lesson_canonical(old, new, legal):
    assert (transition_error("tier", ("note", "lesson", "canonical"), old, new) is None) == legal


# --- short-term accounting -----------------------------------------------------------------


def test_a_short_term_memory_is_accounted_for_once_per_batch():
    ops = [
        {"op": "prune_short_term", "ids": [1], "reason": "noise"},
        {"op": "distill", "sources": [1, 2], "anatomy": ANATOMY},
        {"op": "merge_into_incubation", "sources": [2], "target": "Maya"},
    ]
    got = reasons(ops, phase="sleep", facts=short_term(1, 2))
    assert got[0] is None
    assert "already accounted for" in got[1]
    assert got[2] is None


def test_sleep_operations_need_alive_short_term_sources():
    facts = Facts(
        nodes={
            1: node(1, tier="durable"),
            2: node(2, tier="short_term", status=NodeStatus.TOMBSTONED),
        }
    )
    got = reasons(
        [
            {"op": "prune_short_term", "ids": [1], "reason": "x"},
            {"op": "prune_short_term", "ids": [2], "reason": "x"},
            {"op": "prune_short_term", "ids": [3], "reason": "x"},
        ],
        phase="sleep",
        facts=facts,
    )
    assert "not a short-term record" in got[0]
    assert "tombstoned" in got[1]
    assert "does not exist" in got[2]


# --- text, speech and policy ------------------------------------------------------------------


def test_agency_pressure_never_carries_speech():
    press = {"op": "upsert_agency_pressure", "key": "k", "target": "Maya", "pressure": 0.5}
    for speech in ('Say "happy birthday, Maya!"', "tell her the dinner moved", "“we should go”"):
        assert "no speech" in reasons([{**press, "rationale": speech}])[0]
    assert reasons([{**press, "rationale": "her birthday is tomorrow"}]) == [None]
    assert isinstance(parse_operation({**press, "rationale": "r", "speech": "hi"}), Unparsed)


def test_text_must_be_valid_unicode_without_nul_and_within_the_limit():
    record = {"op": "record_short_term", "anatomy": ANATOMY}
    assert "NUL" in reasons([{**record, "content": "a\x00b"}])[0]
    assert "unicode" in reasons([{**record, "content": "a\ud800b"}])[0].lower()
    assert "limit" in reasons([{**record, "content": "x" * 70_000}])[0]
    assert "blank" in reasons([{**record, "content": "   "}])[0]


def test_namespace_policy_refuses_kinds_and_operations():
    policy = Policy(refused_kinds=frozenset({"episodic"}), refused_ops=frozenset({"link"}))
    got = reasons(
        [
            {"op": "remember", "content": "a", "kind": "episodic"},
            {"op": "remember", "content": "b", "kind": "semantic"},
            {"op": "link", "src": 1, "dst": 2},
        ],
        facts=Facts(nodes={1: node(1), 2: node(2)}),
        policy=policy,
    )
    assert "refuses episodic" in got[0]
    assert got[1] is None
    assert "refuses link" in got[2]
    small = Policy(max_batch=1)
    assert all(
        "at most 1" in r for r in reasons([{"op": "link", "src": 1, "dst": 2}] * 2, policy=small)
    )


# --- the model-free consolidator ------------------------------------------------------------


def record(node_id, claim, *, target="Maya", salience=0.5, vector=None, anchors=("a",)):
    anatomy = Anatomy(
        **{**ANATOMY, "target": target, "claim_or_question": claim, "anchors": list(anchors)}
    )
    return ShortTermRecord(
        id=node_id, content=claim, anatomy=anatomy, salience=salience, confidence=0.5, vector=vector
    )


def test_consolidator_accounts_for_every_record_exactly_once():
    close = np.array([1.0, 0.0, 0.0])
    records = [
        record(1, "Maya is allergic to peanuts", vector=close, anchors=["t1"]),
        record(2, "maya is allergic to  PEANUTS.", vector=close),
        record(3, "Maya avoids peanut sauce", vector=close * 2 + 0.01, anchors=["t3"]),
        record(4, "Deploys fail on Fridays", target="deploys", salience=0.9, vector=-close),
        record(5, "Maybe Bo likes jazz", target="Bo", salience=0.2, vector=None),
    ]
    ops = Consolidator()(SleepInput(records=records, incubations={"bo": 77}))
    accounted: list[int] = []
    for op in ops:
        accounted += getattr(op, "ids", []) if op.op == "prune_short_term" else []
        accounted += getattr(op, "sources", [])
    assert sorted(accounted) == [1, 2, 3, 4, 5]
    by_op: dict[str, Any] = {op.op: op for op in ops if op.op != "distill"}
    assert by_op["prune_short_term"].ids == [2]
    assert by_op["cluster_short_term"].ids == [1, 3]
    assert by_op["merge_into_incubation"].incubation_id == 77
    maya = next(op for op in ops if isinstance(op, Distill) and op.sources == [1, 3])
    assert maya.anatomy.anchors == ["t1", "t3"]
    assert maya.confidence == pytest.approx(0.75)
    judged = judge(
        ops,
        phase="sleep",
        facts=short_term(1, 2, 3, 4, 5).model_copy(
            update={"nodes": {**short_term(1, 2, 3, 4, 5).nodes, 77: node(77, tier="incubation")}}
        ),
        policy=Policy(),
    )
    assert all(v.accepted for v in judged), judged


def test_the_operation_schema_lists_every_operation_for_a_model():
    schema = operation_schema()
    assert schema["discriminator"]["propertyName"] == "op"
    assert len(schema["oneOf"]) == len(OP_NAMES)
    assert json.loads(json.dumps(schema)) == schema  # plain JSON, ready for a prompt
