"""Two identical links racing write one edge (issue 21 item 13).

``ns.link`` takes both ends' lineage locks before it looks for the same edge,
so the second of two identical links waits for the first to commit and then
finds its edge. The first test pauses the first link just before its INSERT
(the hook of test_lineage_races.py) and shows the second waiting on the lock;
the second runs identical links from several threads at once.
"""

from __future__ import annotations

import threading
import uuid

import psycopg

from tests.reliability.test_lineage_races import (
    WAIT,
    Pause,
    engine_of,
    start,
    wait_until,
    waiting_on_lineage_lock,
)


def edge_ids(database_url: str, namespace_id: int) -> list[int]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT id FROM memstore.edges WHERE namespace_id = %s ORDER BY id", (namespace_id,)
        ).fetchall()
    return [row[0] for row in rows]


def test_a_paused_link_makes_its_twin_wait_and_both_return_one_edge(store, database_url):
    ns = store.namespace(f"link-race-{uuid.uuid4().hex[:8]}")
    a, b = ns.remember("Team dinner on Friday").id, ns.remember("Maya avoids peanuts").id
    fields = {"relation": "constrained_by", "weight": 0.3}
    with Pause(engine_of(ns)) as pause:
        one, first = start(lambda: ns.link(a, b, **fields))
        pause.thread = one
        one.start()
        wait_until(lambda: pause.reached.is_set() or first.done.is_set(), "the link's INSERT")
        assert first.error is None, first.error
        two, second = start(lambda: ns.link(a, b, **fields))
        two.start()
        wait_until(
            lambda: waiting_on_lineage_lock(database_url) or second.done.is_set(),
            "the twin waited for the lock",
        )
        assert not second.done.is_set(), (second.result, second.error)
        pause.release.set()
        one.join(WAIT)
        two.join(WAIT)
    assert first.error is None and second.error is None, (first.error, second.error)
    assert first.result == second.result
    assert edge_ids(database_url, ns.id) == [first.result.id]  # type: ignore[attr-defined]


def test_identical_links_from_many_threads_write_one_edge(store, database_url):
    ns = store.namespace(f"link-stress-{uuid.uuid4().hex[:8]}")
    a, b = ns.remember("cause").id, ns.remember("effect").id
    barrier = threading.Barrier(6)
    results: list[int] = []
    errors: list[BaseException] = []

    def link() -> None:
        try:
            barrier.wait(WAIT)
            for _ in range(5):
                results.append(ns.link(a, b, relation="causes", weight=0.9).id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=link) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert errors == []
    assert len(results) == 30 and len(set(results)) == 1
    assert edge_ids(database_url, ns.id) == results[:1]
