"""Every verb that takes an id, given an id of another namespace (the review of stop 28).

Namespace A's handle is given the ids of B's memory, edge, proposal and lesson. Each
verb must answer exactly as for an id never used (the same error class and message,
the id aside), write nothing, and never say a word of B's: an id's existence in
another tenant is not the caller's to learn. The REST routes and MCP tools are thin
shells over these verbs (tests/server/test_tenancy.py checks the routes' answers).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memstore.embedding import HashingEmbedder
from memstore.errors import MemstoreError
from memstore.namespace import Namespace
from memstore.store import MemoryStore
from tests.conftest import row_counts

SECRET = "zqxforeignsecret"
NEVER = 2**40  # an id nobody has


def _in_tx(ns: Namespace, read: Callable[[Any], Any]) -> Any:
    with ns.transaction() as tx:
        return read(tx)


# verb -> call(ns, ids), where ids has "node", "edge", "proposal", "lesson" of B.
VERBS: dict[str, Callable[[Namespace, dict[str, int]], Any]] = {
    "get": lambda ns, i: ns.get(i["node"]),
    "lineage": lambda ns, i: ns.lineage(i["node"]),
    "edges": lambda ns, i: ns.edges(i["node"]),
    "neighbours": lambda ns, i: ns.neighbours(i["node"]),
    "revise": lambda ns, i: ns.revise(i["node"], "intruder", reason="r"),
    "forget": lambda ns, i: ns.forget(i["node"], reason="r"),
    "forget an edge": lambda ns, i: ns.forget(i["edge"], reason="r", target="edge"),
    "redact": lambda ns, i: ns.redact(i["node"], reason="r", actor="a"),
    "link from": lambda ns, i: ns.link(i["node"], i["own"]),
    "link to": lambda ns, i: ns.link(i["own"], i["node"]),
    "confirm": lambda ns, i: ns.confirm(i["node"]),
    "activate seed": lambda ns, i: ns.activate(seeds=[i["node"]]),
    "review.get": lambda ns, i: ns.review.get(i["proposal"]),
    "review.accept": lambda ns, i: ns.review.accept(i["proposal"], reviewer="r"),
    "review.reject": lambda ns, i: ns.review.reject(i["proposal"], reviewer="r", reason="no"),
    "lessons.get": lambda ns, i: ns.lessons.get(i["lesson"]),
    "lessons.remove": lambda ns, i: ns.lessons.remove(i["lesson"]),
    "lessons.record_applied": lambda ns, i: ns.lessons.record_applied(i["lesson"]),
    "tx.node": lambda ns, i: _in_tx(ns, lambda tx: tx.node(i["node"])),
    "tx.lineage": lambda ns, i: _in_tx(ns, lambda tx: tx.lineage(i["node"])),
}

# Lifecycle operations naming B's ids: rejected by the law, with the unknown id's reason.
OPS: dict[str, Callable[[dict[str, int]], dict[str, Any]]] = {
    "revise": lambda i: {"op": "revise", "node_id": i["node"], "content": "x", "reason": "r"},
    "forget": lambda i: {"op": "forget", "target_id": i["node"], "reason": "r"},
    "forget an edge": lambda i: {
        "op": "forget",
        "target": "edge",
        "target_id": i["edge"],
        "reason": "r",
    },
    "link": lambda i: {"op": "link", "src": i["own"], "dst": i["node"], "relation": "related_to"},
    "accept_proposal": lambda i: {"op": "accept_proposal", "proposal_id": i["proposal"]},
    "reject_proposal": lambda i: {
        "op": "reject_proposal",
        "proposal_id": i["proposal"],
        "reason": "no",
    },
}


@pytest.fixture(scope="module", params=["owner", "memstore_app"])
def tenants(request, store) -> Iterator[tuple[Namespace, dict[str, int], dict[str, int]]]:
    """A's handle (as the owner, or as the service role under row-level security), B's
    ids and ids nobody has."""
    if request.param == "owner":
        yield _tenants(store)
        return
    with MemoryStore.open(
        request.getfixturevalue("app_url"), embedder=HashingEmbedder()
    ) as confined:
        yield _tenants(confined)


def _tenants(store: MemoryStore) -> tuple[Namespace, dict[str, int], dict[str, int]]:
    a = store.namespace(f"a-{uuid.uuid4().hex[:8]}")
    b = store.namespace(f"b-{uuid.uuid4().hex[:8]}")
    b_node = b.remember(f"{SECRET} harbour").id
    b_other = b.remember(f"{SECRET} ferry").id
    b_edge = b.link(b_node, b_other).id
    proposed = b.apply(
        [
            {
                "op": "propose",
                "operation": {"op": "forget", "target_id": b_node, "reason": "old"},
                "rationale": "r",
                "evidence": ["turn:1"],
            }
        ],
        phase="wake",
        actor="agent",
    )
    b_proposal = proposed.results[0].proposal_id
    assert b_proposal is not None
    b_lesson = b.lessons.add(f"{SECRET} rule", source="s", confidence=0.9).id
    own = a.remember("A's own memory").id
    foreign = {
        "node": b_node,
        "edge": b_edge,
        "proposal": int(b_proposal),
        "lesson": b_lesson,
        "own": own,
    }
    never = {"node": NEVER, "edge": NEVER, "proposal": NEVER, "lesson": NEVER, "own": own}
    return a, foreign, never


def _ids_out(text: str) -> str:
    """``text`` with every number (an id) as N: the two answers may differ by id only."""
    return re.sub(r"\b\d+\b", "N", text)


def _outcome(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        result = call()
    except MemstoreError as exc:
        return type(exc).__name__, str(exc)
    return "answered", repr(result)


@pytest.mark.parametrize("verb", list(VERBS))
def test_a_foreign_id_is_answered_as_an_id_never_used(tenants, database_url, verb):
    a, foreign, never = tenants
    before = row_counts(database_url)
    got = _outcome(lambda: VERBS[verb](a, foreign))
    expected = _outcome(lambda: VERBS[verb](a, never))
    assert row_counts(database_url) == before
    assert SECRET not in got[1]
    assert (got[0], _ids_out(got[1])) == (expected[0], _ids_out(expected[1]))


@pytest.mark.parametrize("op", list(OPS))
def test_an_operation_naming_a_foreign_id_is_rejected_as_for_an_id_never_used(
    tenants, database_url, op
):
    a, foreign, never = tenants
    receipts = []
    for ids in (foreign, never):
        receipt = a.apply([OPS[op](ids)], phase="review", actor="r", atomic=False)
        assert receipt.results[0].outcome == "rejected", receipt.summary()
        receipts.append(receipt.results[0].reason or "")
    got, expected = receipts
    assert SECRET not in got
    assert _ids_out(got) == _ids_out(expected)
