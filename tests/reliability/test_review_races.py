"""Review decisions racing each other and an erasure (the review of stop 28).

A proposal moves pending → accepted/rejected once (sql/02_lineage.sql). Deciders
that race must each get a clear answer — one wins, the others a memstore error —
and the operation is applied at most once; an erasure racing an acceptance leaves
no erased words in the queue whichever commits first.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import psycopg
import pytest

from memstore.errors import DatabaseError, MemstoreError
from memstore.store import MemoryStore
from tests.proposals import propose

DECIDERS = 6
SECRET = "zqxracesecret"


def _race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run ``calls`` at once (a barrier releases them together); each one's result or
    the exception it raised."""
    barrier = threading.Barrier(len(calls))
    out: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = calls[i]()
        except Exception as exc:  # collected: the test judges each
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return out


def _rows(database_url: str, query: str, *params: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(query.encode(), params).fetchall()


def _judged(outcomes: list[Any]) -> tuple[list[Any], list[Exception]]:
    """The successes and the failures; no failure may be a raw database error."""
    failures = [o for o in outcomes if isinstance(o, Exception)]
    raw = [f for f in failures if not isinstance(f, MemstoreError) or type(f) is DatabaseError]
    assert not raw, f"racing deciders got unclear errors: {raw!r}"
    return [o for o in outcomes if not isinstance(o, Exception)], failures


@pytest.mark.parametrize("mix", ["accepts", "accepts and rejects"])
def test_racing_decisions_of_one_proposal_decide_it_once(store, database_url, mix):
    ns = store.namespace(f"race-{uuid.uuid4().hex[:8]}")
    target = ns.remember("the ferry leaves at nine").id
    proposal = propose(ns, {"op": "forget", "target_id": target, "reason": "old"})

    def accept(i: int) -> tuple[str, object]:
        return "accepted", ns.review.accept(proposal, reviewer=f"r{i}")

    def reject(i: int) -> tuple[str, object]:
        return "rejected", ns.review.reject(proposal, reviewer=f"r{i}", reason="no")

    calls: list[Callable[[], Any]] = [
        partial(accept if mix == "accepts" or i % 2 == 0 else reject, i) for i in range(DECIDERS)
    ]
    wins, failures = _judged(_race(calls))
    assert len(wins) == 1, (wins, failures)
    decided = ns.review.get(proposal)
    assert decided.status == wins[0][0]
    tombstones = _rows(
        database_url,
        "SELECT count(*) FROM memstore.tombstones WHERE node_id = %s",
        target,
    )[0][0]
    assert tombstones == (1 if decided.status == "accepted" else 0)


def test_an_erasure_racing_an_acceptance_leaves_no_erased_words_in_the_queue(store, database_url):
    for _ in range(3):
        _erase_while_accepting(store, database_url)


def _erase_while_accepting(store: MemoryStore, database_url: str) -> None:
    """One acceptance of a revision and one erasure of its memory, at once."""
    ns = store.namespace(f"race-{uuid.uuid4().hex[:8]}")
    target = ns.remember(f"{SECRET} the vault opens at nine").id
    proposal = propose(
        ns, {"op": "revise", "node_id": target, "content": f"{SECRET} at ten", "reason": "r"}
    )
    _judged(
        _race(
            [
                lambda: ns.review.accept(proposal, reviewer="bob"),
                lambda: ns.redact(target, reason="erasure request", actor="dpo"),
            ]
        )
    )
    leftovers = _rows(
        database_url,
        "SELECT p.id FROM memstore.proposals p WHERE p::text LIKE %s"
        " UNION ALL SELECT n.id FROM memstore.nodes n WHERE n.content LIKE %s",
        f"%{SECRET}%",
        f"%{SECRET}%",
    )
    # Accepted first: the revision wrote a new version, which the erasure reaches
    # (every version of the lineage). Erased first: the proposal was rejected.
    assert leftovers == [], leftovers
    assert ns.review.get(proposal).status in ("accepted", "rejected")


def test_a_store_of_the_same_database_sees_the_decision(database_url):
    """Deciders in two processes' worth of stores: one wins there too."""
    name = f"race-{uuid.uuid4().hex[:8]}"
    from memstore.embedding import HashingEmbedder

    with (
        MemoryStore.open(database_url, embedder=HashingEmbedder()) as one,
        MemoryStore.open(database_url, embedder=HashingEmbedder()) as two,
    ):
        first = one.namespace(name)
        target = first.remember("a memory to forget").id
        proposal = propose(first, {"op": "forget", "target_id": target, "reason": "old"})
        second = two.namespace(name)
        wins, _ = _judged(
            _race(
                [
                    lambda: first.review.accept(proposal, reviewer="one"),
                    lambda: second.review.accept(proposal, reviewer="two"),
                ]
            )
        )
        assert len(wins) == 1


def test_erasures_of_memories_sharing_a_session_and_a_log_row_race_cleanly(store, database_url):
    """Two erasures at once whose memories share what an erasure rewrites beyond
    them: one activation session, the one log row of the batch that wrote both, and
    a pending proposal that names both."""
    for _ in range(4):
        ns = store.namespace(f"race-{uuid.uuid4().hex[:8]}")
        batch = ns.apply(
            [
                {"op": "remember", "content": f"{SECRET} alpha harbour"},
                {"op": "remember", "content": f"{SECRET} beta harbour"},
            ],
            phase="wake",
            actor="agent",
        )
        one, two = (result.nodes[0] for result in batch.results)
        ns.activate("harbour", session_id="shared-session")
        propose(ns, {"op": "link", "src": one, "dst": two, "relation": "related_to"})
        wins, _ = _judged(
            _race(
                [
                    partial(ns.redact, one, reason="erasure", actor="dpo"),
                    partial(ns.redact, two, reason="erasure", actor="dpo"),
                ]
            )
        )
        assert len(wins) == 2
        leftovers = _rows(
            database_url,
            "SELECT o.id FROM memstore.operations o WHERE o::text LIKE %s"
            " UNION ALL SELECT p.id FROM memstore.proposals p WHERE p::text LIKE %s",
            f"%{SECRET}%",
            f"%{SECRET}%",
        )
        assert leftovers == [], leftovers
