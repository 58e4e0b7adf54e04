"""Hostile operations JSON: whatever an LLM (or an attacker) emits, apply answers with a
receipt or a MemstoreError, and a batch that is not applied changes nothing."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.errors import MemstoreError
from memstore.law.ops import OP_NAMES
from memstore.models import NodeStatus
from tests.conftest import row_counts

JUNK_TEXT = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()), max_size=40
) | st.sampled_from(["", " ", "\x00", "\ud800", "x" * 70_000, "anchor:missing", 'say "hi there"'])
JUNK_NUMBER = st.sampled_from(
    [0, -1, 1, 2**63, 2**64, -(2**63), float("nan"), float("inf"), -float("inf"), 0.5, 1e308]
)
JUNK = st.recursive(
    st.none() | st.booleans() | JUNK_NUMBER | st.integers() | JUNK_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(JUNK_TEXT, inner, max_size=4),
    max_leaves=12,
)
FIELDS = [
    "anatomy", "content", "ids", "sources", "node_id", "target_id", "target", "reason",
    "salience", "confidence", "key", "pressure", "rationale", "operation", "evidence",
    "proposal_id", "src", "dst", "kind", "tier", "protected", "changes", "data",
]  # fmt: skip


@st.composite
def hostile_op(draw: Any) -> Any:
    shape = draw(st.sampled_from(["op", "junk", "json"]))
    if shape == "junk":
        return draw(JUNK)
    op: dict[str, Any] = {"op": draw(st.sampled_from([*OP_NAMES, "drop_table", ""]))}
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=6, unique=True)):
        op[field] = draw(JUNK)
    if shape == "json":
        return json.dumps(op, allow_nan=True)
    return op


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=st.lists(hostile_op(), max_size=4),
    phase=st.sampled_from(["wake", "rumination", "sleep", "review"]),
    atomic=st.booleans(),
)
def test_hostile_batches_get_a_receipt_or_a_memstore_error(store, database_url, ops, phase, atomic):
    ns = store.namespace("hostile")
    before = row_counts(database_url)
    try:
        receipt = ns.apply(ops, phase=phase, actor="fuzz", atomic=atomic)
    except MemstoreError:
        assert row_counts(database_url) == before
        return
    assert len(receipt.results) == len(ops)
    for result in receipt.rejected:
        assert result.reason
    if not receipt.applied:
        assert row_counts(database_url) == before


def test_a_valid_op_among_hostile_ones_is_applied_only_when_partial(store, database_url):
    ns = store.namespace(f"hostile-{uuid.uuid4().hex[:8]}")
    good = {"op": "remember", "content": "Maya is allergic to peanuts", "kind": "semantic"}
    bad = {"op": "remember", "content": "x", "importance": float("nan")}
    before = row_counts(database_url)
    assert not ns.apply([good, bad], phase="wake").applied
    assert row_counts(database_url) == before
    receipt = ns.apply([good, bad], phase="wake", atomic=False)
    assert [r.outcome for r in receipt.results] == ["accepted", "rejected"]


# --- concurrent sleeps ------------------------------------------------------------------------


def test_concurrent_sleeps_account_for_each_memory_once(store, database_url):
    ns = store.namespace(f"sleepers-{uuid.uuid4().hex[:8]}")
    anatomy = {
        "target": "t",
        "claim_or_question": "c",
        "tension": "x",
        "action_implication": "y",
        "anchors": ["a"],
    }
    ops = [
        {"op": "record_short_term", "anatomy": {**anatomy, "target": f"t{i % 7}"},
         "content": f"memory {i}", "salience": (i % 10) / 10}
        for i in range(120)
    ]  # fmt: skip
    receipt = ns.apply(ops, phase="rumination", actor="agent")
    ids = [r.nodes[0] for r in receipt.results]
    errors: list[BaseException] = []

    def sleeper() -> None:
        try:
            store.namespace(ns.name).sleep(actor="sleeper")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=sleeper) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    with psycopg.connect(database_url) as conn:
        counts: dict[int, int] = dict(
            conn.execute(
                "SELECT (jsonb_array_elements_text(receipt->'accounted'))::bigint, count(*)"
                " FROM memstore.operations WHERE namespace_id = %s GROUP BY 1",
                (ns.id,),
            ).fetchall()
        )
    assert sorted(counts) == sorted(ids) and set(counts.values()) == {1}
    assert all(ns.get(i).status is NodeStatus.TOMBSTONED for i in ids)


@pytest.mark.parametrize("ops", [None, "not a list", {"op": "remember"}, b"[]"])
def test_apply_refuses_what_is_not_a_batch(ns, database_url, ops):
    before = row_counts(database_url)
    with pytest.raises(MemstoreError):
        ns.apply(ops, phase="wake")
    assert row_counts(database_url) == before
