"""Links keep the rules docs/recall.md states (issue 21 item 13).

Both ends must be current: a superseded end is refused with the current
version's id, a forgotten or redacted one is refused, and nothing is written.
The same link twice (same ends, relation and every field) is one edge: the
second call returns the first edge. The race of two identical links is in
tests/reliability/test_link_races.py.
"""

from __future__ import annotations

import psycopg
import pytest

from memstore.errors import NodeSupersededError, NodeTombstonedError
from tests.conftest import row_counts


def edge_rows(database_url: str, namespace_id: int) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM memstore.edges WHERE namespace_id = %s", (namespace_id,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_ends_that_are_not_current_are_refused_and_nothing_is_written(ns, database_url):
    here = ns.remember("Maya lives in Lisbon")
    old = ns.remember("Maya works at a bakery")
    new = ns.revise(old.id, "Maya works at a bike-sharing startup", reason="new job")
    gone = ns.remember("Maya likes satay")
    ns.forget(gone.id, reason="she is allergic to peanuts")
    erased = ns.remember("Maya's phone number is 555-0100")
    ns.redact(erased.id, reason="erasure request")
    before = row_counts(database_url)
    for src, dst in ((here.id, old.id), (old.id, here.id)):
        with pytest.raises(NodeSupersededError, match=f"current version is node {new.id}") as exc:
            ns.link(src, dst, relation="about")
        assert exc.value.current_id == new.id
    with pytest.raises(NodeTombstonedError, match=f"node {gone.id} is tombstoned"):
        ns.link(here.id, gone.id)
    with pytest.raises(NodeTombstonedError, match=f"node {erased.id} is redacted"):
        ns.link(erased.id, here.id)
    assert row_counts(database_url) == before
    assert ns.link(here.id, new.id, relation="about").dst == new.id


def test_the_same_link_twice_is_one_edge(ns, database_url):
    a, b = ns.remember("Team dinner on Friday"), ns.remember("Maya is allergic to peanuts")
    # 0.3 is not exactly representable: a real column holds another 0.3 than a double.
    fields = {"relation": "constrained_by", "weight": 0.3, "confidence": 0.7, "actor": "agent"}
    first = ns.link(a.id, b.id, **fields)
    before = row_counts(database_url)
    again = ns.link(a.id, b.id, **fields)
    assert again == first
    assert row_counts(database_url) == before
    with ns.transaction() as tx:
        assert tx.link(a.id, b.id, **fields).id == first.id
    assert row_counts(database_url) == before
    assert edge_rows(database_url, ns.id) == 1


def test_the_same_link_after_an_end_was_revised_or_forgotten_is_still_its_edge(ns, database_url):
    """A script that remembers, links and revises runs twice (docs/recall.md's first
    example): the second run's link names ends that are no longer current, and gets
    the edge it made the first time; a *new* link to such an end is still refused."""
    moved, home = ns.remember("Alice moved in May"), ns.remember("Alice lives in Lisbon")
    edge = ns.link(moved.id, home.id, relation="supports", weight=0.9)
    porto = ns.revise(home.id, "Alice lives in Porto", reason="she moved again")
    ns.forget(moved.id, reason="wrong month")
    before = row_counts(database_url)
    assert ns.link(moved.id, home.id, relation="supports", weight=0.9) == edge
    assert row_counts(database_url) == before
    with pytest.raises(NodeSupersededError, match=f"current version is node {porto.id}"):
        ns.link(porto.id, home.id, relation="supports", weight=0.9)
    with pytest.raises(NodeTombstonedError):
        ns.link(moved.id, home.id, relation="supports", weight=0.8)
    assert row_counts(database_url) == before


@pytest.mark.parametrize(
    "change",
    [
        {"relation": "mentions"},
        {"weight": 0.31},
        {"inhibitory": True},
        {"confidence": 0.71},
        {"layer": 2},
        {"source": "chat:7"},
        {"actor": "alice"},
        {"run_id": "run-2"},
    ],
)
def test_a_link_that_differs_in_any_field_is_a_new_edge(ns, database_url, change):
    a, b = ns.remember("Team dinner on Friday"), ns.remember("Maya is allergic to peanuts")
    fields = {"relation": "constrained_by", "weight": 0.3, "confidence": 0.7, "actor": "agent"}
    first = ns.link(a.id, b.id, **fields)
    other = ns.link(a.id, b.id, **{**fields, **change})
    assert other.id != first.id
    assert ns.link(b.id, a.id, **fields).id not in (first.id, other.id)  # the other direction
    assert edge_rows(database_url, ns.id) == 3


def test_a_forgotten_link_made_again_is_a_new_edge(ns, database_url):
    a, b = ns.remember("cause"), ns.remember("effect")
    first = ns.link(a.id, b.id, relation="causes")
    ns.forget(first.id, target="edge", reason="wrong")
    again = ns.link(a.id, b.id, relation="causes")
    assert again.id != first.id and not again.tombstoned
    assert ns.link(a.id, b.id, relation="causes").id == again.id
    assert edge_rows(database_url, ns.id) == 2


def test_the_law_link_operation_is_idempotent_too(ns, database_url):
    a, b = ns.remember("cause"), ns.remember("effect")
    op = {"op": "link", "src": a.id, "dst": b.id, "relation": "causes", "weight": 0.9}
    first = ns.apply([op], phase="wake", actor="agent")
    second = ns.apply([op], phase="wake", actor="agent")
    assert first.applied and second.applied
    assert first.results[0].edges == second.results[0].edges
    assert edge_rows(database_url, ns.id) == 1
