"""Round trips per read verb, kept from growing (issue 23: many tenants; issue 21 item 4).

A round trip is the client sending and then waiting for the server's answer
(tests/round_trips.py counts them from psycopg's own steps: a pipelined
transaction's BEGIN, ``SET LOCAL``s, statement and COMMIT are one). On a warm
store (the namespace's object kept, its statistics read, the connection's
statements prepared) every read verb has a budget of round trips, and so does
its first read of a namespace the store has not seen yet (since stop 27 the
store keeps what it knows of 16,384 namespaces, so a tenant whose handle it no
longer keeps costs no more than a warm one). The budgets are what the verbs cost
now (docs/benchmark-notes.md, "Round trips per read (stop 27)"): recall, edges
and the searches are at one (two on a namespace the store meets for the first
time); the rest open a transaction of several statements (BEGIN and the scope
one trip, then each statement, then COMMIT). A future extra round trip on any
read path fails here, naming the statements of every trip; lower a budget when
a verb gets cheaper.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from memstore.errors import NodeNotFoundError
from memstore.namespace import Namespace
from tests.bypass import rename_namespace
from tests.round_trips import Trips, counting

Read = Callable[[Namespace, dict[str, int]], Any]

NOW = datetime.now(UTC)

# verb -> (the call, round trips on a warm store, on a namespace the store has not seen)
READS: dict[str, tuple[Read, int, int]] = {
    "recall hybrid": (lambda ns, w: ns.recall("harbour ferry", k=5), 1, 2),
    "recall semantic": (lambda ns, w: ns.recall("harbour ferry", k=5, mode="semantic"), 1, 2),
    "recall lexical": (lambda ns, w: ns.recall("harbour ferry", k=5, mode="lexical"), 1, 2),
    "recall vector": (lambda ns, w: ns.recall(vector=[0.1] * 384, k=5), 1, 2),
    "recall as_of": (lambda ns, w: ns.recall("harbour ferry", k=5, as_of=NOW), 1, 2),
    "recall tags": (lambda ns, w: ns.recall("harbour", k=5, tags=["port"]), 1, 2),
    "activate query": (lambda ns, w: ns.activate("harbour ferry"), 4, 6),
    "activate seeds": (lambda ns, w: ns.activate(seeds=[w["harbour"]]), 2, 3),
    "activate as_of": (lambda ns, w: ns.activate(seeds=[w["harbour"]], as_of=NOW), 2, 3),
    "recall_context": (lambda ns, w: ns.recall_context("harbour ferry", 500), 6, 8),
    "get": (lambda ns, w: ns.get(w["harbour"]), 1, 2),
    "lineage": (lambda ns, w: ns.lineage(w["plan"]), 2, 3),
    "edges": (lambda ns, w: ns.edges(w["harbour"]), 1, 2),
    "edges of an old version": (lambda ns, w: ns.edges(w["plan"]), 1, 2),
    "neighbours depth 1": (lambda ns, w: ns.neighbours(w["harbour"]), 3, 4),
    "neighbours depth 3": (lambda ns, w: ns.neighbours(w["harbour"], depth=3), 3, 4),
    "similarity": (lambda ns, w: ns.similarity(w["harbour"], w["ferry"]), 1, 2),
    "list_memories": (lambda ns, w: ns.list_memories(limit=10), 3, 4),
    "timeline.recent": (lambda ns, w: ns.timeline.recent(5), 1, 2),
    "timeline.search": (lambda ns, w: ns.timeline.search("ferry"), 1, 2),
    "lessons.all": (lambda ns, w: ns.lessons.all(), 3, 4),
    "lessons.get": (lambda ns, w: ns.lessons.get(w["lesson"]), 4, 5),
    "lessons.search": (lambda ns, w: ns.lessons.search("harbour code"), 1, 2),
    "procedures.all": (lambda ns, w: ns.procedures.all(), 1, 2),
    "procedures.find_by_name": (lambda ns, w: ns.procedures.find_by_name("ferry"), 3, 4),
}


# Writes (reads first, issue 23): what they cost on a warm store, kept from growing too.
# remember is one pipelined statement; link and ingest_turn still check and write in
# several statements of one transaction (memstore/tx.py, memstore/tiers/timeline.py).
WRITES: dict[str, tuple[Read, int]] = {
    "remember": (lambda ns, w: ns.remember(f"note {uuid.uuid4().hex}"), 1),
    "link": (
        lambda ns, w: ns.link(w["harbour"], w["ferry"], relation=f"r{uuid.uuid4().hex[:8]}"),
        7,
    ),
    "timeline.ingest_turn": (
        lambda ns, w: ns.timeline.ingest_turn("user", f"turn {uuid.uuid4().hex}", "s1"),
        13,
    ),
}


def fill(ns: Namespace) -> dict[str, int]:
    """A small namespace with every kind of thing the reads read."""
    harbour = ns.remember("The harbour opens at dawn", kind="semantic", tags=["port"])
    ferry = ns.remember("The ferry leaves the harbour at noon", kind="semantic")
    plan = ns.remember("Plan: take the early ferry", kind="semantic")
    newer = ns.revise(plan.id, "Plan: take the noon ferry", reason="changed")
    ns.link(harbour.id, ferry.id, relation="serves", weight=0.8)
    ns.link(ferry.id, newer.id, relation="supports", weight=0.5)
    ns.timeline.ingest_turn("user", "When does the ferry leave?", "s1")
    lesson = ns.lessons.add("Check the ferry times first", source="test", confidence=0.9)
    ns.procedures.add(
        "ferry",
        description="Take the ferry",
        steps=[{"tool": "clock", "purpose": "time", "instruction": "be early"}],
    )
    return {
        "harbour": harbour.id,
        "ferry": ferry.id,
        "plan": plan.id,
        "newer": newer.id,
        "lesson": lesson.id,
    }


@pytest.fixture(scope="module")
def world(database_url: str) -> dict[str, Any]:
    """Two namespaces of the same content, written by a store of their own: the measuring
    store warms its connections on one and meets the other for the first time."""
    names = [f"trips-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as writer:
        ids = [fill(writer.namespace(name)) for name in names]
    return {"names": names, "ids": ids}


def measured(call: Callable[[], Any]) -> Trips:
    with counting() as trips:
        call()
    return trips


def _on(read: Read, store: MemoryStore, name: str, ids: dict[str, int]) -> Any:
    return read(store.namespace(name), ids)


def table(database_url: str, world: dict[str, Any]) -> dict[str, tuple[Trips, Trips]]:
    """Per verb: the round trips on a warm store and on a namespace the store has not seen."""
    (warm_name, cold_name), (warm_ids, cold_ids) = world["names"], world["ids"]
    found: dict[str, tuple[Trips, Trips]] = {}
    for verb, (read, _, _) in READS.items():
        with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
            warm = store.namespace(warm_name)
            for _ in range(3):
                read(warm, warm_ids)  # statements prepared, statistics read
            hot = measured(partial(_on, read, store, warm_name, warm_ids))
            cold = measured(partial(_on, read, store, cold_name, cold_ids))
        found[verb] = (hot, cold)
    return found


def test_every_read_verb_keeps_its_round_trip_budget(database_url, world):
    found = table(database_url, world)
    print("\nverb | warm trips (statements) | first touch trips (statements)")
    for verb, (hot, cold) in found.items():
        print(
            f"{verb} | {len(hot)} ({len(hot.statements())}, work {len(hot.work())})"
            f" | {len(cold)} ({len(cold.statements())}, work {len(cold.work())})"
        )
    over = []
    for verb, (hot, cold) in found.items():
        _, warm_budget, cold_budget = READS[verb]
        if len(hot) > warm_budget:
            over.append(
                f"{verb}: {len(hot)} round trips warm (budget {warm_budget})\n" + hot.describe()
            )
        if len(cold) > cold_budget:
            over.append(
                f"{verb}: {len(cold)} round trips on a new namespace"
                f" (budget {cold_budget})\n" + cold.describe()
            )
    assert not over, "\n".join(over)


def test_a_handle_made_anew_for_a_known_namespace_reads_in_one_round_trip(database_url, world):
    """The store keeps the id and sizes of namespaces whose handles it let go."""
    name, ids = world["names"][0], world["ids"][0]
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        store.namespace(name).recall("harbour ferry", k=5)
        store._namespaces.clear()  # the handle let go, as past NAMESPACES_KEPT tenants
        again = store.namespace(name)
        assert len(measured(lambda: again.recall("harbour ferry", k=5))) == 1
        assert len(measured(lambda: again.edges(ids["harbour"]))) == 1


def test_a_kept_id_never_reads_a_namespace_that_lost_its_name(database_url):
    """A namespace is never renamed, but if an owner did it anyway, the id a store kept for
    the old name must not read the renamed namespace's rows: every read that uses a kept
    id carries the namespace's name beside its rows, and drops them when it differs."""
    name = f"kept-{uuid.uuid4().hex[:8]}"
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(name)
        ids = fill(ns)
        assert ns.recall("harbour ferry", k=5)  # the id and sizes kept
        assert ns.edges(ids["harbour"])
        rename_namespace(store, name, name + " (moved)")
        assert list(ns.recall("harbour ferry", k=5)) == []
        with pytest.raises(NodeNotFoundError, match="does not exist in namespace"):
            ns.edges(ids["harbour"])
        with pytest.raises(NodeNotFoundError, match="does not exist in namespace"):
            ns.neighbours(ids["harbour"])
        # Another tenant takes the old name: the handle now reads the new namespace only.
        newcomer = MemoryStore.open(database_url, embedder=HashingEmbedder())
        with newcomer:
            fresh = newcomer.namespace(name).remember("A lighthouse on the cliff")
        hits = ns.recall("harbour ferry lighthouse", k=10)
        assert [hit.node.id for hit in hits] == [fresh.id]
        moved = store.namespace(name + " (moved)")
        assert {hit.node.id for hit in moved.recall("harbour ferry", k=5)} >= {ids["harbour"]}


def test_writes_keep_their_round_trip_budget(database_url, world):
    name, ids = world["names"][0], world["ids"][0]
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(name)
        over = []
        for verb, (write, budget) in WRITES.items():
            for _ in range(3):
                write(ns, ids)
            trips = measured(partial(write, ns, ids))
            print(f"{verb}: {len(trips)} round trips ({len(trips.statements())} statements)")
            if len(trips) > budget:
                over.append(f"{verb}: {len(trips)} (budget {budget})\n" + trips.describe())
    assert not over, "\n".join(over)


def test_a_let_go_handle_keeps_its_id_and_sizes_but_not_its_term_counts(
    database_url, world, monkeypatch
):
    """Term counts (up to 2,000 terms) live only as long as the store keeps the handle."""
    import memstore.store

    monkeypatch.setattr(memstore.store, "NAMESPACES_KEPT", 1)
    first, second = world["names"]
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(first)
        ns.recall("harbour ferry", k=5)
        state = ns._scope.state
        state.term_counts.learn({"harbour": 500})
        assert state.id is not None and state.stats is not None and len(state.term_counts)
        store.namespace(second)  # the first handle is let go
        assert state.id is not None and state.stats is not None
        assert len(state.term_counts) == 0
        assert store.namespace(first)._scope.state is state
