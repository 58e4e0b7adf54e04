"""Direct verbs and the law agree (issue 17 §6): one door per kind of change.

- the cultivate override is sealed: no attribute of a transaction switches a
  rule off, and only memstore.lifecycle can grant rights;
- ``ns.remember / revise / forget`` refuse lifecycle records, protected
  memories and kinds the namespace policy refuses, naming what to use instead;
- a stale id (a superseded version) gets an error naming the current version.
"""

from __future__ import annotations

import psycopg
import pytest

from memstore.errors import (
    LifecycleRecordError,
    NodeSupersededError,
    PolicyRefusedError,
    ProtectedNodeError,
)
from memstore.tx import NamespaceTransaction, Rights, claim_sanction_key
from tests.conftest import row_counts

ANATOMY = {
    "target": "deploys",
    "claim_or_question": "Deploys fail on Fridays",
    "tension": "release day is Friday",
    "action_implication": "move releases to Thursday",
    "anchors": ["incident-12"],
}


def short_term(ns, claim="Deploys fail on Fridays"):
    receipt = ns.apply(
        [{"op": "record_short_term", "anatomy": {**ANATOMY, "claim_or_question": claim}}],
        phase="rumination",
    )
    return receipt.results[0].nodes[0]


def durable(ns):
    source = short_term(ns, "Rollbacks take an hour")
    receipt = ns.apply([{"op": "distill", "sources": [source], "anatomy": ANATOMY}], phase="sleep")
    return receipt.results[0].nodes[0]


def identity(ns):
    crystallize = {"op": "crystallize_identity", "anatomy": ANATOMY, "content": "I am careful"}
    proposed = ns.apply(
        [{"op": "propose", "operation": crystallize, "rationale": "r", "evidence": ["t:1"]}],
        phase="wake",
    )
    proposal = proposed.results[0].proposal_id
    return ns.review.accept(proposal, reviewer="alice").results[0].nodes[0]


def cultivate_rows(database_url, namespace_id):
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM memstore.operations WHERE namespace_id = %s AND op = 'cultivate'",
            (namespace_id,),
        ).fetchone()
    assert row is not None
    return row[0]


# --- the sealed override ---------------------------------------------------------------


def test_setting_attributes_on_a_transaction_does_not_open_protected_memories(ns, database_url):
    protected = identity(ns)
    before = row_counts(database_url)
    with ns.transaction() as tx:
        with pytest.raises(AttributeError):
            tx.cultivating = True  # the old public switch
        with pytest.raises(AttributeError):
            tx._rights = Rights.PROTECTED | Rights.LIFECYCLE
        with pytest.raises(ProtectedNodeError):
            tx.forget(protected, reason="drift")
        with pytest.raises(ProtectedNodeError):
            tx.revise(protected, "I am careless", reason="drift")
    assert row_counts(database_url) == before
    assert cultivate_rows(database_url, ns.id) == 0


def test_rights_are_granted_by_the_lifecycle_package_only(ns):
    with pytest.raises(RuntimeError, match=r"memstore\.lifecycle"):
        claim_sanction_key()  # memstore.lifecycle claimed it at import
    with ns.transaction() as tx:
        with pytest.raises(PermissionError):
            tx.sanctioned(Rights.PROTECTED, key=object(), audit=lambda *a: None)
        with pytest.raises(PermissionError):
            NamespaceTransaction(ns._scope, tx.conn, _rights=Rights.PROTECTED)
        with pytest.raises(PermissionError):
            NamespaceTransaction(ns._scope, tx.conn, _rights=Rights.LIFECYCLE, _key=object())


def test_cultivate_writes_its_audit_row_with_the_change(ns, database_url):
    protected = identity(ns)
    new = ns.cultivate(protected, "I am careful and kind", reason="growth", actor="alice")
    assert new.protected and cultivate_rows(database_url, ns.id) == 1
    ns.cultivate(new.id, retire=True, reason="no longer me", actor="alice")
    assert cultivate_rows(database_url, ns.id) == 2


# --- direct verbs refuse lifecycle records, naming the operation ---------------------------


def test_direct_verbs_refuse_lifecycle_records_and_name_the_operation(ns, database_url):
    record = short_term(ns)
    kept = durable(ns)
    before = row_counts(database_url)
    with pytest.raises(LifecycleRecordError, match="'distill'") as revised:
        ns.revise(record, "rewritten", reason="r")
    assert "phase='sleep'" in str(revised.value) and revised.value.node_id == record
    with pytest.raises(LifecycleRecordError, match="'prune_short_term'"):
        ns.forget(short_term(ns, "Another thought"), reason="r")
    before = row_counts(database_url)
    with pytest.raises(LifecycleRecordError, match="'revise_durable'"):
        ns.revise(kept, "rewritten", reason="r")
    with pytest.raises(LifecycleRecordError, match="'retire_durable'"):
        ns.forget(kept, reason="r")
    with pytest.raises(LifecycleRecordError, match="'record_short_term'"):
        ns.remember("a thought", tier="short_term")
    with pytest.raises(LifecycleRecordError, match="'distill'"):
        ns.remember("a lasting belief", tier="durable", kind="semantic")
    with pytest.raises(LifecycleRecordError, match="set_policy"):
        ns.remember("my own policy", tier="policy")
    with pytest.raises(LifecycleRecordError, match="crystallize_identity"):
        ns.remember("I am someone", protected=True)
    with pytest.raises(LifecycleRecordError, match="'record_short_term'"):
        ns.remember_many([{"content": "bulk thought", "tier": "short_term"}])
    with pytest.raises(LifecycleRecordError):
        with ns.transaction() as tx:
            tx.remember("a thought", tier="short_term")
    assert row_counts(database_url) == before
    # The law says the same for the generic operations.
    receipt = ns.apply(
        [{"op": "revise", "node_id": kept, "content": "x", "reason": "r"}], phase="wake"
    )
    assert "'revise_durable'" in (receipt.rejected[0].reason or "")


def test_remember_respects_the_policy_refused_kinds(ns, database_url):
    ns.set_policy({"refused_kinds": ["episodic"]}, reason="no diaries here")
    episodic = ns.remember("kept before? no: refused", kind="semantic")
    before = row_counts(database_url)
    with pytest.raises(PolicyRefusedError, match="refuses episodic"):
        ns.remember("Met Bo at the station")  # the default kind is episodic
    with pytest.raises(PolicyRefusedError):
        ns.remember_many(["one", "two"])
    with pytest.raises(PolicyRefusedError):
        with ns.transaction() as tx:
            tx.remember("Met Cy at the station")
    with pytest.raises(PolicyRefusedError):
        ns.revise(episodic.id, "now a diary entry", reason="r", kind="episodic")
    assert row_counts(database_url) == before
    assert ns.remember("Lisbon is in Portugal", kind="semantic").kind == "semantic"


# --- stale ids ----------------------------------------------------------------------------


def test_forget_and_link_of_a_superseded_version_name_the_current_one(ns, database_url):
    old = ns.remember("Alice lives in Porto")
    new = ns.revise(old.id, "Alice lives in Lisbon", reason="moved")
    other = ns.remember("Bo")
    before = row_counts(database_url)
    with pytest.raises(NodeSupersededError, match=f"current version is node {new.id}") as forgot:
        ns.forget(old.id, reason="wrong")
    assert forgot.value.current_id == new.id
    for src, dst in ((old.id, other.id), (other.id, old.id)):
        with pytest.raises(NodeSupersededError) as linked:
            ns.link(src, dst)
        assert linked.value.current_id == new.id
    assert row_counts(database_url) == before
    receipt = ns.apply([{"op": "link", "src": other.id, "dst": old.id}], phase="wake")
    assert f"current version is node {new.id}" in (receipt.rejected[0].reason or "")
    receipt = ns.apply([{"op": "forget", "target_id": old.id, "reason": "r"}], phase="wake")
    assert f"current version is node {new.id}" in (receipt.rejected[0].reason or "")
    assert ns.get(new.id).status.value == "current"


def test_the_lifecycle_packages_sanction_is_no_door_for_other_code(ns, database_url):
    """``memstore.lifecycle.rights.sanction`` is importable by anyone: called from
    outside the lifecycle package it must refuse, not hand out PROTECTED."""
    from memstore.lifecycle import rights

    protected = identity(ns)
    before = row_counts(database_url)
    with ns.transaction() as tx:
        for granted in (Rights.PROTECTED | Rights.LIFECYCLE, Rights.LIFECYCLE):
            with pytest.raises(PermissionError, match=r"memstore\.lifecycle"):
                rights.sanction(tx, granted, audit=lambda *a: None)
        with pytest.raises(ProtectedNodeError):
            tx.forget(protected, reason="drift")
    assert row_counts(database_url) == before
    assert cultivate_rows(database_url, ns.id) == 0
