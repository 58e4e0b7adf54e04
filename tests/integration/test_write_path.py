"""The write verbs: remember, remember_many, link, revise, forget, redact, get, lineage."""

from __future__ import annotations

import math
import threading
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
import sqlalchemy as sa

from memstore.errors import (
    ContentTooLargeError,
    DimensionMismatchError,
    EdgeNotFoundError,
    InvalidInputError,
    MemstoreError,
    NodeNotFoundError,
    NodeSupersededError,
    NodeTombstonedError,
    TombstoneError,
)
from memstore.models import NodeStatus
from tests.conftest import row_counts


def test_remember_returns_the_stored_node_with_provenance(ns):
    seen = datetime(2026, 5, 3, 12, 0, tzinfo=UTC)
    node = ns.remember(
        "Alice moved to Lisbon in May",
        kind="episodic",
        source="chat:42",
        actor="agent",
        run_id="run-1",
        observed_at=seen,
        importance=0.9,
        data={"dia_id": "D1:3"},
    )
    assert isinstance(node.id, int)
    assert node.status is NodeStatus.CURRENT
    assert (node.content, node.source, node.actor, node.run_id) == (
        "Alice moved to Lisbon in May",
        "chat:42",
        "agent",
        "run-1",
    )
    assert node.observed_at == seen and node.data == {"dia_id": "D1:3"}
    assert node.importance == pytest.approx(0.9)
    assert ns.get(node.id) == node


def test_the_same_normalised_content_is_one_node(ns):
    first = ns.remember("Alice moved to Lisbon")
    again = ns.remember("  Alice   moved to\nLisbon ")
    other_kind = ns.remember("Alice moved to Lisbon", kind="semantic")
    assert again.id == first.id
    assert other_kind.id != first.id
    assert ns.embedding_status().stale == 0  # the variant did not overwrite the vector


def test_concurrent_writers_of_the_same_memory_store_one_node(ns):
    ids: list[int] = []
    errors: list[BaseException] = []

    def write() -> None:
        try:
            ids.append(ns.remember("Everyone says this at once").id)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(ids)) == 1 and len(ids) == 8


def test_remember_many_returns_ids_in_order_and_folds_duplicates(ns):
    existing = ns.remember("Bob likes tea")
    ids = ns.remember_many(
        ["Carol plays chess", {"content": "Bob likes tea"}, "Dan runs", "Carol  plays chess"],
        batch_size=2,
    )
    assert ids[1] == existing.id and ids[0] == ids[3]
    assert len(set(ids)) == 3
    assert [ns.get(i).content for i in ids] == [
        "Carol plays chess",
        "Bob likes tea",
        "Dan runs",
        "Carol plays chess",
    ]
    status = ns.embedding_status()
    assert (status.missing, status.stale, status.nodes) == (0, 0, 3)


def test_remember_many_stores_the_vector_of_the_text_each_node_keeps(ns, store):
    vectors = np.random.default_rng(7).normal(size=(5, 384)).astype(np.float32)
    kept = ns.remember("Erin sings", embedding=vectors[0])
    bare = ns.remember("Finn swims", embedding=vectors[0])
    with store.transaction() as conn:
        conn.execute(
            sa.text("DELETE FROM memstore.embeddings WHERE node_id = :id"), {"id": bare.id}
        )
    ids = ns.remember_many(
        [
            {"content": "Gail  reads", "embedding": vectors[1]},  # a new node's first item
            {"content": "Gail reads", "embedding": vectors[2]},  # the same node again
            {"content": "Erin sings", "embedding": vectors[3]},  # stored, has a vector
            {"content": "Finn  swims", "embedding": vectors[4]},  # stored, another text
            {"content": "Finn swims", "embedding": vectors[2]},  # stored, exactly its text
        ]
    )
    assert ids[0] == ids[1] and ids[2:] == [kept.id, bare.id, bare.id]
    with store.transaction() as conn:
        stored = dict(
            conn.execute(
                sa.text(
                    "SELECT node_id, embedding FROM memstore.embeddings WHERE node_id = ANY(:ids)"
                ),
                {"ids": [ids[0], kept.id, bare.id]},
            ).all()
        )
    assert set(stored) == {ids[0], kept.id, bare.id}
    np.testing.assert_array_equal(stored[ids[0]].to_numpy(), vectors[1])
    np.testing.assert_array_equal(stored[kept.id].to_numpy(), vectors[0])
    np.testing.assert_array_equal(stored[bare.id].to_numpy(), vectors[2])
    status = ns.embedding_status()
    assert (status.missing, status.stale) == (0, 0)


def test_remember_many_writes_all_or_nothing(ns, database_url):
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError, match=r"items\[2\]"):
        ns.remember_many(["fine", "also fine", {"content": "bad", "importance": 7}])
    with pytest.raises(InvalidInputError, match=r"items\[1\].content is empty"):
        ns.remember_many(["fine", "   "])
    assert row_counts(database_url) == before


BAD_REMEMBER = [
    ({"content": ""}, InvalidInputError, "empty"),
    ({"content": "   \n"}, InvalidInputError, "empty"),
    ({"content": "x" * (64 * 1024 + 1)}, ContentTooLargeError, "limit is 65536"),
    ({"content": "nul\x00byte"}, InvalidInputError, "NUL"),
    ({"content": "a", "importance": 1.5}, InvalidInputError, "importance"),
    ({"content": "a", "confidence": -0.1}, InvalidInputError, "confidence"),
    ({"content": "a", "importance": math.nan}, InvalidInputError, "importance"),
    ({"content": "a", "confidence": math.inf}, InvalidInputError, "confidence"),
    ({"content": "a", "layer": 5}, InvalidInputError, "layer"),
    ({"content": "a", "privacy": 9}, InvalidInputError, "privacy"),
    ({"content": "a", "kind": "dream"}, InvalidInputError, "kind"),
    ({"content": "a", "colour": "red"}, InvalidInputError, "colour"),
    ({"content": "a", "observed_at": datetime(2026, 1, 1)}, InvalidInputError, "timezone"),
    (
        {
            "content": "a",
            "valid_from": datetime(2026, 2, 1, tzinfo=UTC),
            "valid_to": datetime(2026, 1, 1, tzinfo=UTC),
        },
        InvalidInputError,
        "valid_to",
    ),
    ({"content": "a", "embedding": np.ones(3)}, DimensionMismatchError, "3 dimensions"),
    ({"content": "a", "embedding": np.full(384, np.nan)}, InvalidInputError, "NaN"),
    ({"content": "a", "embedding": np.zeros(384)}, InvalidInputError, "all zeros"),
    ({"content": 42}, InvalidInputError, "content"),
]


@pytest.mark.parametrize(("fields", "error", "message"), BAD_REMEMBER)
def test_bad_input_is_refused_clearly_and_changes_nothing(ns, database_url, fields, error, message):
    before = row_counts(database_url)
    content = fields.pop("content")
    with pytest.raises(error, match=message) as exc:
        ns.remember(content, **fields)
    assert isinstance(exc.value, MemstoreError)
    assert row_counts(database_url) == before


def test_a_given_vector_is_stored_as_is(ns):
    vector = np.random.default_rng(1).normal(size=384).astype(np.float32)
    node = ns.remember("carries its own vector", embedding=vector)
    hit = ns.recall("anything", mode="semantic", k=50)
    assert node.id in [h.node.id for h in hit]


def test_link_joins_two_current_nodes(ns):
    a, b = ns.remember("cause"), ns.remember("effect")
    edge = ns.link(a.id, b.id, relation="causes", weight=0.9, inhibitory=True, layer=0)
    assert (edge.src, edge.dst, edge.relation, edge.inhibitory, edge.layer) == (
        a.id,
        b.id,
        "causes",
        True,
        0,
    )
    assert edge.weight == pytest.approx(0.9)


def test_link_refusals_name_the_problem_and_change_nothing(ns, store, database_url):
    a, b = ns.remember("here"), ns.remember("also here")
    other = store.namespace(f"{ns.name}-other").remember("elsewhere")
    gone = ns.remember("forgotten soon")
    ns.forget(gone.id, reason="test")
    before = row_counts(database_url)
    # Another namespace's node is answered exactly like an id never used: the
    # error must not tell a caller that it exists (issue 17 §1).
    with pytest.raises(NodeNotFoundError) as elsewhere:
        ns.link(a.id, other.id)
    with pytest.raises(NodeNotFoundError) as missing:
        ns.link(a.id, 10**15)
    assert type(elsewhere.value) is type(missing.value)
    assert str(elsewhere.value) == str(missing.value).replace(str(10**15), str(other.id))
    with pytest.raises(NodeTombstonedError):
        ns.link(a.id, gone.id)
    with pytest.raises(InvalidInputError, match="weight"):
        ns.link(a.id, b.id, weight=2)
    with pytest.raises(InvalidInputError, match="two different nodes"):
        ns.link(a.id, a.id)
    assert row_counts(database_url) == before


def test_revise_writes_a_new_version_and_keeps_the_lineage(ns):
    old = ns.remember("Alice lives in Lisbon", kind="semantic", importance=0.7, source="chat")
    new = ns.revise(old.id, "Alice lives in Porto", reason="she moved", importance=0.8)
    assert new.id != old.id
    assert (new.kind, new.source) == ("semantic", "chat")  # carried over
    assert new.importance == pytest.approx(0.8)  # changed
    before = ns.get(old.id)
    assert before.status is NodeStatus.SUPERSEDED and before.superseded_by == new.id
    newest = ns.revise(new.id, "Alice lives in Faro", reason="moved again")
    assert [n.id for n in ns.lineage(old.id)] == [old.id, new.id, newest.id]
    assert [n.id for n in ns.lineage(newest.id)] == [old.id, new.id, newest.id]


def test_revise_refuses_old_forgotten_and_identical_versions(ns, database_url):
    old = ns.remember("v1 of a fact")
    new = ns.revise(old.id, "v2 of a fact", reason="update")
    gone = ns.remember("to forget")
    ns.forget(gone.id, reason="wrong")
    before = row_counts(database_url)
    with pytest.raises(NodeSupersededError, match=f"current version is node {new.id}") as exc:
        ns.revise(old.id, "v3 of a fact", reason="update")
    assert exc.value.current_id == new.id
    with pytest.raises(NodeTombstonedError):
        ns.revise(gone.id, "resurrected", reason="no")
    with pytest.raises(InvalidInputError, match="identical"):
        ns.revise(new.id, "v2  of a fact", reason="a label cannot ride on no change", label="x")
    with pytest.raises(InvalidInputError, match="reason"):
        ns.revise(new.id, "v3", reason=" ")
    with pytest.raises(NodeNotFoundError):
        ns.revise(10**15, "x", reason="r")
    assert row_counts(database_url) == before


def test_a_revision_the_memory_already_holds_is_done_not_refused(ns, database_url):
    """A script that remembers and revises runs twice (the README's quickstart)."""
    for _ in range(2):
        old = ns.remember("Alice lives in Lisbon", kind="semantic", source="chat:42")
        before = row_counts(database_url)
        new = ns.revise(old.id, "Alice lives in Porto", reason="she moved")
        assert new.content == "Alice lives in Porto" and new.status is NodeStatus.CURRENT
    # The second run revised a superseded version to what its current one says:
    # that version came back, and nothing was written.
    assert row_counts(database_url) == before
    assert [n.id for n in ns.lineage(old.id)] == [old.id, new.id]
    # Revising the current version to what it already says returns it, too.
    assert ns.revise(new.id, "Alice  lives in Porto", reason="again").id == new.id
    assert row_counts(database_url) == before
    # Anything else on a stale id is still refused, naming the current version.
    with pytest.raises(NodeSupersededError) as stale:
        ns.revise(old.id, "Alice lives in Braga", reason="moved again")
    assert stale.value.current_id == new.id
    with pytest.raises(NodeSupersededError):
        ns.revise(old.id, "Alice lives in Porto", reason="relabel", label="home")


def test_forget_hides_a_node_and_is_written_once(ns):
    node = ns.remember("an embarrassing typo")
    ns.forget(node.id, reason="typo")
    assert ns.get(node.id).status is NodeStatus.TOMBSTONED
    assert node.id not in [h.node.id for h in ns.recall("embarrassing typo")]
    assert node.id in [h.node.id for h in ns.recall("embarrassing typo", include_tombstoned=True)]
    with pytest.raises(TombstoneError, match="already tombstoned"):
        ns.forget(node.id, reason="again")


def test_forget_an_edge(ns):
    a, b = ns.remember("x1"), ns.remember("x2")
    edge = ns.link(a.id, b.id)
    ns.forget(edge.id, target="edge", reason="wrong link")
    with pytest.raises(EdgeNotFoundError):
        ns.forget(10**15, target="edge", reason="nothing")
    with pytest.raises(InvalidInputError):
        ns.forget(edge.id, target="graph", reason="bad target")


def test_redact_erases_content_and_recall_no_longer_finds_it(ns):
    node = ns.remember("Alice's phone is +351 555 0100")
    redacted = ns.redact(node.id, reason="erasure request", actor="dpo")
    assert redacted.status is NodeStatus.REDACTED and redacted.content == ""
    assert node.id not in [h.node.id for h in ns.recall("phone", include_tombstoned=True)]


def test_get_and_lineage_of_unknown_nodes(ns, store):
    with pytest.raises(NodeNotFoundError) as exc:
        ns.get(10**15)
    assert exc.value.namespace == ns.name
    foreign = store.namespace(f"{ns.name}-x").remember("not yours")
    with pytest.raises(NodeNotFoundError):
        ns.get(foreign.id)  # another namespace's node is not found, never returned
    with pytest.raises(NodeNotFoundError):
        ns.lineage(10**15)


@pytest.mark.parametrize(
    "pair",
    [
        ("john_doe", "john-doe"),
        ("100%", "100_"),
        ("a'b", "a\\b"),
        ("\uff21lice", "Alice"),
        ("café", "cafe\u0301"),
    ],
)
def test_namespace_names_are_compared_exactly(store, pair):
    suffix = datetime.now(UTC).timestamp()
    first, second = (store.namespace(f"{name}-{suffix}") for name in pair)
    first.remember("only in the first namespace")
    assert second.recall("first namespace") == []
    assert not second.exists()  # looking created nothing
    second.remember("only in the second namespace")
    assert first.id != second.id
    assert store.namespace(first.name).id == first.id


@pytest.mark.parametrize("name", ["", "x" * 2049, "nul\x00", 7])
def test_bad_namespace_names_are_refused(store, name):
    with pytest.raises(InvalidInputError, match="namespace name"):
        store.namespace(name)


def test_valid_period_and_observed_time_are_kept(ns):
    start = datetime.now(UTC) - timedelta(days=2)
    node = ns.remember("valid for a day", valid_from=start, valid_to=start + timedelta(days=1))
    assert node.valid_to - node.valid_from == timedelta(days=1)


def test_a_namespace_transaction_writes_everything_or_nothing(ns, database_url):
    before = row_counts(database_url)
    with pytest.raises(NodeNotFoundError), ns.transaction() as tx:
        a = tx.remember("Team dinner on Friday")
        b = tx.remember("Maya is allergic to peanuts")
        tx.link(a.id, b.id, relation="constrained_by")
        tx.link(a.id, 10**12)  # fails: the two memories and the edge go too
    assert row_counts(database_url) == before
    with ns.transaction() as tx:
        a = tx.remember("Team dinner on Friday")
        b = tx.remember("Maya is allergic to peanuts")
        edge = tx.link(a.id, b.id, relation="constrained_by")
    assert ns.get(b.id).status == "current" and edge.dst == b.id


def test_remember_again_returns_the_stored_node_with_its_status(ns):
    first = ns.remember("Gone by Friday")
    ns.forget(first.id, reason="test")
    again = ns.remember("Gone  by Friday")
    assert (again.id, again.status) == (first.id, NodeStatus.TOMBSTONED)
    assert again == ns.get(first.id)


def test_remember_waits_for_a_concurrent_writer_and_returns_its_node(ns):
    # The writer's uncommitted node holds the key: remember's INSERT … ON
    # CONFLICT waits for it, finds nothing in its own snapshot, and looks again.
    found: list[int] = []
    with ns.transaction() as tx:
        held = tx.remember("Written by two at once")
        reader = threading.Thread(target=lambda: found.append(ns.remember(held.content).id))
        reader.start()
        reader.join(timeout=0.5)
        assert reader.is_alive()  # blocked on the writer's key
    reader.join(timeout=10)
    assert found == [held.id]
    assert ns.embedding_status().nodes == 1


def test_a_refusal_inside_the_one_round_trip_changes_nothing(ns, database_url, caplog):
    from memstore.db.transaction import in_one_round_trip
    from memstore.graph.nodes import QUERIES, remember_params
    from memstore.models import MemoryInput

    before = row_counts(database_url)
    params = remember_params(ns.id, MemoryInput(content="x"), "x", ns.embedder.name, None)
    params["kind"] = "dream"  # past validation: the schema's check refuses it
    with pytest.raises(MemstoreError, match="kind_known"):
        in_one_round_trip(ns._scope.engine, ns.id, QUERIES["remember_node"], params)
    assert row_counts(database_url) == before
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]  # no stray log
    assert ns.remember("the pooled connection is usable again").status is NodeStatus.CURRENT


def test_an_invalid_item_in_a_late_batch_changes_nothing(ns, database_url):
    # Every item is validated before the first batch is written.
    before = row_counts(database_url)
    items: list[object] = [f"early memory {i}" for i in range(25)]
    items[22] = {"content": "late and bad", "privacy": 9}
    with pytest.raises(InvalidInputError, match=r"items\[22\]"):
        ns.remember_many(items, batch_size=5)
    items[22] = "  "
    with pytest.raises(InvalidInputError, match=r"items\[22\].content is empty"):
        ns.remember_many(iter(items), batch_size=5)
    assert row_counts(database_url) == before


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (np.full(384, np.nan), InvalidInputError, "NaN"),
        (np.zeros(384), InvalidInputError, "all zeros"),
        (np.ones(3), DimensionMismatchError, "3 dimensions"),
        (np.ones((1, 384)), DimensionMismatchError, "dimensions"),
        ("not a vector", InvalidInputError, "not a vector"),
    ],
)
def test_one_bad_given_vector_in_a_batch_raises_its_own_error(
    ns, database_url, bad, error, message
):
    # The batch's given vectors are checked at once; any failure falls back
    # to checking one by one, so the error is the one remember() raises.
    vectors = np.random.default_rng(3).normal(size=(6, 384)).astype(np.float32)
    items = [{"content": f"vector {i}", "embedding": v} for i, v in enumerate(vectors)]
    items[4]["embedding"] = bad
    before = row_counts(database_url)
    with pytest.raises(error, match=message):
        ns.remember_many(items)
    assert row_counts(database_url) == before
