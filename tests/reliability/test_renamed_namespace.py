"""An owner renamed (or removed) a namespace behind memstore's back: writes stay clear.

Namespaces are never renamed: their append-only trigger refuses it. An owner can
switch the trigger off (``memstore db check`` reports that). A store that kept the
namespace's id for the old name must then neither write into the namespace that
now carries another name, nor fail with the database's raw foreign-key error: a
write to the old name is a write to a name nobody has (it creates the namespace,
as for any new name); an id of the renamed namespace is not found.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from memstore.errors import DatabaseError, NodeNotFoundError
from memstore.models import Node
from memstore.namespace import Namespace
from tests.bypass import rename_namespace

# Writes that create memories: after the rename, they land in a new namespace of the name.
CREATING: dict[str, Callable[[Namespace], Any]] = {
    "remember": lambda ns: ns.remember("written after the rename"),
    "remember (a text the old namespace holds)": lambda ns: ns.remember("harbour ferry"),
    "remember_many": lambda ns: ns.remember_many(["after a", "after b"]),
    "transaction": lambda ns: _in_transaction(ns),
    "apply": lambda ns: ns.apply(
        [{"op": "remember", "content": "applied after the rename"}], phase="wake"
    ),
    "timeline.ingest_turn": lambda ns: ns.timeline.ingest_turn("s1", "user", "hello"),
    "scratchpad.pin": lambda ns: ns.scratchpad.pin("k", "v"),
    "lessons.add": lambda ns: ns.lessons.add("test the rename", source="review", confidence=0.9),
}

# Writes that name a memory of the renamed namespace: not found, nothing written.
NAMING: dict[str, Callable[[Namespace, Node], Any]] = {
    "revise": lambda ns, node: ns.revise(node.id, "revised", reason="r"),
    "forget": lambda ns, node: ns.forget(node.id, reason="r"),
    "redact": lambda ns, node: ns.redact(node.id, reason="r"),
    "link": lambda ns, node: ns.link(node.id, node.id + 1),
    "confirm": lambda ns, node: ns.confirm(node.id),
}


def _in_transaction(ns: Namespace) -> int:
    with ns.transaction() as tx:
        return tx.remember("written in a transaction after the rename").id


def _counts(store: MemoryStore) -> dict[str, int]:
    with store.transaction() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT ns.name, count(n.id) FROM memstore.namespaces ns"
                " LEFT JOIN memstore.nodes n ON n.namespace_id = ns.id GROUP BY ns.name"
            )
        ).all()
    return {str(name): int(count) for name, count in rows}


@pytest.fixture
def renamed(database_url: str):
    name = f"renamed-{uuid.uuid4().hex[:8]}"
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(name)
        first = ns.remember("harbour ferry")
        ns.remember("lighthouse keeper")
        assert ns.recall("harbour ferry", k=5)  # the id and sizes are kept
        rename_namespace(store, name, name + " (moved)")
        yield store, ns, first, name


@pytest.mark.parametrize("verb", list(CREATING))
def test_a_write_to_a_renamed_namespace_creates_the_name_anew(renamed, verb):
    store, ns, first, name = renamed
    before = _counts(store)
    try:
        CREATING[verb](ns)
    except DatabaseError as exc:  # the raw foreign-key error this test was written for
        pytest.fail(f"{verb} after a rename raised {exc!r}")
    after = _counts(store)
    assert after[name + " (moved)"] == before[name + " (moved)"], "wrote into the moved namespace"
    assert after.get(name, 0) >= 1
    fresh = store.namespace(name)
    assert fresh.id == ns.id != 0
    assert first.id not in {hit.node.id for hit in ns.recall("harbour ferry lighthouse")}


@pytest.mark.parametrize("verb", list(NAMING))
def test_an_id_of_the_renamed_namespace_is_not_found(renamed, verb):
    store, ns, first, _ = renamed
    before = _counts(store)
    with pytest.raises(NodeNotFoundError, match="does not exist in namespace"):
        NAMING[verb](ns, first)
    assert _counts(store) == before


def test_an_activation_by_query_reads_nothing_of_the_renamed_namespace(renamed):
    """Recall, edges and neighbours check a kept id's name beside their rows
    (test_round_trips.py); an activation by query did not, and answered with the renamed
    namespace's memories under the old name. Its first round trip now checks the name."""
    store, ns, first, name = renamed
    found = ns.activate("harbour ferry")
    assert [item.node.id for item in found.working_memory] == []
    fresh = store.namespace(name + " (moved)").activate("harbour ferry")
    assert first.id in [item.node.id for item in fresh.working_memory]
