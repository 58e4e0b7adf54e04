"""A memory's last_confirmed_at: set when a later observation confirms it (issue 21, item 7).

``ns.confirm(node_id)`` and ``ns.remember`` of content already stored as a
current memory each append a row to memstore.confirmations; every read of a
node carries the newest row's time (docs/recall.md, "Confirmation").
"""

from __future__ import annotations

import re

import psycopg
import pytest

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder
from memstore.errors import (
    InvalidInputError,
    NodeNotFoundError,
    NodeSupersededError,
    NodeTombstonedError,
)
from tests.conftest import row_counts


def confirmations(url: str, node_id: int) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM memstore.confirmations WHERE node_id = %s", (node_id,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_new_memory_is_unconfirmed_and_remembering_it_again_confirms_it(ns, database_url):
    first = ns.remember("The office moved to Porto", node_type="Fact")
    assert first.last_confirmed_at is None
    assert ns.get(first.id).last_confirmed_at is None

    again = ns.remember("The office moved to Porto", node_type="Fact")
    assert again.id == first.id  # still one memory ...
    assert again.last_confirmed_at is not None  # ... observed twice
    assert again.last_confirmed_at >= first.recorded_at
    assert ns.get(first.id).last_confirmed_at == again.last_confirmed_at
    third = ns.remember("The office moved to Porto", node_type="Fact")
    assert third.last_confirmed_at >= again.last_confirmed_at
    assert confirmations(database_url, first.id) == 2


def test_confirm_records_a_confirmation_every_read_shows(ns, database_url):
    node = ns.remember("Maya is allergic to peanuts", node_type="Safety")
    other = ns.remember("Rui likes Thai food", node_type="Fact")
    ns.link(other.id, node.id, relation="related_to", weight=0.9)
    confirmed = ns.confirm(node.id)
    assert confirmed.id == node.id and confirmed.content == node.content
    when = confirmed.last_confirmed_at
    assert when is not None and when >= node.recorded_at

    assert ns.get(node.id).last_confirmed_at == when
    assert [n.last_confirmed_at for n in ns.lineage(node.id)] == [when]
    (hit,) = [h for h in ns.recall("peanuts allergy", k=5) if h.node.id == node.id]
    assert hit.node.last_confirmed_at == when
    page = ns.list_memories(limit=10)
    assert {n.id: n.last_confirmed_at for n in page.items}[node.id] == when
    activated = ns.activate(seeds=[other.id, node.id], depth=1)
    reached = {i.node.id: i.node for i in activated.working_memory}
    assert reached[node.id].last_confirmed_at == when
    assert reached[other.id].last_confirmed_at is None
    assert confirmations(database_url, node.id) == 1


def test_the_newest_confirmation_wins(ns):
    node = ns.remember("The standup is at 9:30", node_type="Fact")
    first = ns.confirm(node.id).last_confirmed_at
    second = ns.confirm(node.id).last_confirmed_at
    assert first is not None and second is not None and second >= first
    assert ns.get(node.id).last_confirmed_at == second


def test_only_a_current_memory_is_confirmed_and_a_refusal_writes_nothing(ns, database_url):
    old = ns.remember("The team has four people", node_type="Fact")
    new = ns.revise(old.id, "The team has five people", reason="Ana joined")
    gone = ns.remember("The printer is broken", node_type="Fact")
    ns.forget(gone.id, reason="fixed")
    before = row_counts(database_url)
    with pytest.raises(NodeSupersededError) as superseded:
        ns.confirm(old.id)
    assert superseded.value.current_id == new.id
    with pytest.raises(NodeTombstonedError):
        ns.confirm(gone.id)
    with pytest.raises(NodeNotFoundError):
        ns.confirm(2**62)
    for bad in ("12", True, None, 2**64):
        with pytest.raises(InvalidInputError, match="node_id"):
            ns.confirm(bad)
    assert row_counts(database_url) == before

    # Remembering a superseded version's content finds that version, which
    # stays unconfirmed: the observation matches history, not the memory.
    found = ns.remember("The team has four people", node_type="Fact")
    assert found.id == old.id and found.last_confirmed_at is None
    assert confirmations(database_url, old.id) == 0
    assert ns.confirm(new.id).last_confirmed_at is not None


def test_the_remember_operation_confirms_as_the_verb_does(ns):
    node = ns.remember("Deploys need two reviewers", node_type="Fact")
    receipt = ns.apply(
        [{"op": "remember", "content": "Deploys need two reviewers", "node_type": "Fact"}],
        phase="wake",
    )
    assert receipt.applied and receipt.accepted[0].nodes == [node.id]
    assert ns.get(node.id).last_confirmed_at is not None


def test_confirmations_are_append_only(ns, database_url):
    node = ns.remember("Lisbon is the capital of Portugal", node_type="Fact")
    ns.confirm(node.id)
    with psycopg.connect(database_url) as conn:
        for statement in (
            "UPDATE memstore.confirmations SET at = now() - interval '1 year' WHERE node_id = %s",
            "DELETE FROM memstore.confirmations WHERE node_id = %s",
        ):
            with pytest.raises(psycopg.Error) as refused:
                conn.execute(statement, (node.id,))
            assert "confirmations are append-only" in str(refused.value)
            conn.rollback()
    assert confirmations(database_url, node.id) == 1


def test_a_memory_above_the_ceiling_is_not_found_and_not_confirmed(ns, database_url):
    secret = ns.remember("Ana's diagnosis is private", node_type="Fact", privacy=3)
    low = Settings(privacy_ceiling=0)
    with MemoryStore.open(database_url, settings=low, embedder=HashingEmbedder()) as store:
        confined = store.namespace(ns.name)
        with pytest.raises(NodeNotFoundError) as hidden:
            confined.confirm(secret.id)
        with pytest.raises(NodeNotFoundError) as never:
            confined.confirm(2**62)

    # The same words as for an id never used: the error must not tell it exists.
    # The id as a whole word: its digits may also occur inside the namespace's name.
    def without(message: object, node_id: int) -> str:
        return re.sub(rf"(?<!\w){node_id}(?!\w)", "N", str(message))

    assert without(hidden.value, secret.id) == without(never.value, 2**62)
    assert confirmations(database_url, secret.id) == 0
