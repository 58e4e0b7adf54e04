"""Graph reads the seeds name (issue 21 item 4): edges, neighbours, similarity, recall by a
raw vector, an explicit strengthening, and the procedures' count and last use."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memstore.errors import (
    DimensionMismatchError,
    InvalidInputError,
    NodeNotFoundError,
    NodeStateError,
    NodeTombstonedError,
)
from tests.conftest import row_counts


@pytest.fixture
def graph(ns):
    """alice -lives_in-> lisbon -in-> portugal; bob -knows-> alice; alice -likes-> tea."""
    alice = ns.remember("Alice is a violinist", kind="semantic")
    lisbon = ns.remember("Lisbon is a city by the sea", kind="semantic")
    portugal = ns.remember("Portugal is a country in Europe", kind="semantic")
    bob = ns.remember("Bob plays the cello", kind="semantic")
    tea = ns.remember("Green tea with mint", kind="semantic")
    ns.link(alice.id, lisbon.id, relation="lives_in", weight=0.9)
    ns.link(lisbon.id, portugal.id, relation="in", weight=0.8)
    ns.link(bob.id, alice.id, relation="knows", weight=0.6)
    ns.link(alice.id, tea.id, relation="likes", weight=0.3)
    return {"alice": alice.id, "lisbon": lisbon.id, "portugal": portugal.id, "bob": bob.id,
            "tea": tea.id}  # fmt: skip


def test_edges_by_direction_and_relation(ns, graph):
    out = ns.edges(graph["alice"], direction="out")
    assert [(e.relation, e.dst) for e in out] == [
        ("lives_in", graph["lisbon"]),
        ("likes", graph["tea"]),
    ]  # heaviest first
    assert [(e.relation, e.src) for e in ns.edges(graph["alice"], direction="in")] == [
        ("knows", graph["bob"])
    ]
    both = ns.edges(graph["alice"])
    assert {e.relation for e in both} == {"lives_in", "likes", "knows"}
    assert [e.relation for e in ns.edges(graph["alice"], relation="likes")] == ["likes"]
    assert ns.edges(graph["alice"], limit=1)[0].relation == "lives_in"
    assert all(e.learned_weight == 0 for e in both)


def test_edges_follow_revisions_and_leave_out_forgotten_ends(ns, graph):
    newer = ns.revise(graph["alice"], "Alice is a violinist in an orchestra", reason="more")
    # The edges written on the old version are the memory's own, by either id.
    assert {e.relation for e in ns.edges(newer.id)} == {"lives_in", "likes", "knows"}
    assert {e.relation for e in ns.edges(graph["alice"])} == {"lives_in", "likes", "knows"}
    # An edge into a revised end leads to its current version.
    lisbon2 = ns.revise(graph["lisbon"], "Lisbon is the capital of Portugal", reason="more")
    assert graph["alice"] in {e.src for e in ns.edges(lisbon2.id, direction="in")}
    ns.forget(graph["tea"], reason="not about her")
    assert {e.relation for e in ns.edges(newer.id)} == {"lives_in", "knows"}
    knows = next(e for e in ns.edges(newer.id) if e.relation == "knows")
    ns.forget(knows.id, target="edge", reason="wrong")
    assert [e.relation for e in ns.edges(newer.id)] == ["lives_in"]
    with pytest.raises(NodeTombstonedError):
        ns.edges(graph["tea"])


def test_neighbours_with_distance_depth_and_relation(ns, graph):
    near = ns.neighbours(graph["alice"])
    assert {(n.node.id, n.distance) for n in near} == {
        (graph["lisbon"], 1), (graph["bob"], 1), (graph["tea"], 1),
    }  # fmt: skip
    two = ns.neighbours(graph["alice"], depth=2, direction="out")
    assert [(n.node.id, n.distance) for n in two] == sorted(
        [(graph["lisbon"], 1), (graph["tea"], 1), (graph["portugal"], 2)],
        key=lambda pair: (pair[1], pair[0]),
    )
    assert [n.node.id for n in ns.neighbours(graph["alice"], depth=3, relation="lives_in")] == [
        graph["lisbon"]
    ]
    assert [n.node.id for n in ns.neighbours(graph["portugal"], depth=3, direction="in")] == [
        graph["lisbon"], graph["alice"], graph["bob"],
    ]  # fmt: skip
    assert len(ns.neighbours(graph["alice"], depth=2, limit=2)) == 2
    # A revised neighbour is answered by its current version.
    newer = ns.revise(graph["lisbon"], "Lisbon, capital of Portugal", reason="more")
    assert newer.id in {n.node.id for n in ns.neighbours(graph["alice"])}
    assert graph["lisbon"] not in {n.node.id for n in ns.neighbours(graph["alice"])}


def test_graph_reads_keep_the_privacy_ceiling(ns, graph):
    secret = ns.remember("Alice's bank PIN hint", kind="semantic", privacy=3)
    ns.link(graph["alice"], secret.id, relation="has", weight=1.0)
    assert secret.id in {e.dst for e in ns.edges(graph["alice"])}
    assert secret.id not in {e.dst for e in ns.edges(graph["alice"], privacy_ceiling=1)}
    assert secret.id not in {n.node.id for n in ns.neighbours(graph["alice"], privacy_ceiling=1)}
    with pytest.raises(NodeNotFoundError):
        ns.edges(secret.id, privacy_ceiling=1)
    with pytest.raises(NodeNotFoundError):
        ns.similarity(graph["alice"], secret.id, privacy_ceiling=1)


@pytest.mark.parametrize(
    "call",
    [
        lambda ns, g: ns.edges(g["alice"], direction="sideways"),
        lambda ns, g: ns.edges(g["alice"], limit=0),
        lambda ns, g: ns.edges("1"),
        lambda ns, g: ns.edges(g["alice"], relation=""),
        lambda ns, g: ns.neighbours(g["alice"], depth=4),
        lambda ns, g: ns.neighbours(g["alice"], depth=0),
        lambda ns, g: ns.neighbours(g["alice"], limit=10_001),
        lambda ns, g: ns.similarity(g["alice"], True),
        lambda ns, g: ns.strengthen(g["alice"], g["lisbon"], 1.5),
        lambda ns, g: ns.strengthen(g["alice"], g["lisbon"], math.nan),
        lambda ns, g: ns.strengthen(g["alice"], g["lisbon"], 0),
        lambda ns, g: ns.strengthen(g["alice"], g["lisbon"], True),
        lambda ns, g: ns.strengthen(g["alice"], g["portugal"], 0.2),  # no edge between them
        lambda ns, g: ns.strengthen(g["alice"], g["alice"], 0.2),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(ns, graph, database_url, call):
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError):
        call(ns, graph)
    assert row_counts(database_url) == before


def test_similarity_is_the_cosine_of_the_stored_vectors(ns, graph):
    vectors = ns.embedder.embed(["Alice is a violinist", "Bob plays the cello"])
    expected = float(
        np.dot(vectors[0], vectors[1]) / (np.linalg.norm(vectors[0]) * np.linalg.norm(vectors[1]))
    )
    assert ns.similarity(graph["alice"], graph["bob"]) == pytest.approx(expected, abs=1e-6)
    assert ns.similarity(graph["alice"], graph["alice"]) == pytest.approx(1.0, abs=1e-6)


def test_similarity_without_a_vector_says_how_to_fix_it(ns, graph, database_url):
    import psycopg

    with psycopg.connect(database_url) as conn:
        conn.execute(
            "DELETE FROM memstore.embeddings WHERE node_id = %s AND namespace_id ="
            " (SELECT id FROM memstore.namespaces WHERE name = %s)",
            (graph["bob"], ns.name),
        )
    with pytest.raises(NodeStateError, match=r"no vector .*memstore embed rebuild") as exc:
        ns.similarity(graph["alice"], graph["bob"])
    assert exc.value.node_id == graph["bob"]


def test_recall_by_a_raw_vector(ns, graph):
    vector = ns.embedder.embed(["Bob plays the cello"])[0]
    hits = ns.recall(vector=vector, k=2)
    assert hits[0].node.id == graph["bob"]
    assert hits[0].parts.lexical is None  # semantic only without text
    assert hits[0].parts.similarity == pytest.approx(1.0, abs=1e-5)
    as_list = ns.recall(vector=[float(x) for x in vector], k=1)
    assert as_list[0].node.id == graph["bob"]
    # With text too, the given vector replaces the text's own on the semantic side.
    mixed = ns.recall("violinist", vector=vector, k=5)
    assert {graph["alice"], graph["bob"]} <= {hit.node.id for hit in mixed}
    bob = next(hit for hit in mixed if hit.node.id == graph["bob"])
    assert bob.parts.similarity == pytest.approx(1.0, abs=1e-5)


def test_recall_by_vector_is_validated(ns, graph):
    with pytest.raises(DimensionMismatchError):
        ns.recall(vector=[0.1, 0.2])
    with pytest.raises(InvalidInputError, match="zeros"):
        ns.recall(vector=np.zeros(ns.embedder.dims))
    with pytest.raises(InvalidInputError, match="needs query text"):
        ns.recall(vector=np.ones(ns.embedder.dims), mode="lexical")
    with pytest.raises(InvalidInputError, match="query text, a vector, or both"):
        ns.recall()


def test_strengthen_moves_the_learned_weight_within_bounds(ns, graph):
    edges = ns.strengthen(graph["lisbon"], graph["alice"], 0.3)  # either order
    assert [(e.relation, e.learned_weight) for e in edges] == [("lives_in", pytest.approx(0.3))]
    again = ns.strengthen(graph["alice"], graph["lisbon"], 0.9)
    assert again[0].learned_weight == pytest.approx(1.0)  # capped at 1
    lives_in = next(e for e in ns.edges(graph["alice"]) if e.relation == "lives_in")
    assert lives_in.learned_weight == pytest.approx(1.0)
    assert lives_in.weight == pytest.approx(0.9)  # authored weight unchanged
    weaker = ns.strengthen(graph["alice"], graph["lisbon"], -0.25)
    assert weaker[0].learned_weight == pytest.approx(0.75)
    assert ns.decay_hebbian(0.5) == 1  # the same learned weight decay fades
    lives_in = next(e for e in ns.edges(graph["alice"]) if e.relation == "lives_in")
    assert lives_in.learned_weight == pytest.approx(0.375)


def test_strengthened_edges_lead_activation(ns, graph):
    before = ns.activate(seeds=[graph["alice"]], depth=1, both_directions=True)
    ns.strengthen(graph["alice"], graph["tea"], 1.0)
    after = ns.activate(seeds=[graph["alice"]], depth=1, both_directions=True)
    score = {item.node.id: item.score for item in after.working_memory}
    old = {item.node.id: item.score for item in before.working_memory}
    assert score[graph["tea"]] > old.get(graph["tea"], 0.0)


def test_procedures_count_and_last_use(ns):
    procedures = ns.procedures
    assert procedures.count() == 0
    steps = [{"tool": "git", "purpose": "tag it", "instruction": "git tag v1"}]
    procedures.add("release", description="Ship a version.", steps=steps)
    procedures.add("rollback", description="Undo a release.", steps=steps)
    assert procedures.count() == 2
    assert procedures.last_used("release") is None
    assert procedures.stats("release").last_used_at is None
    used = procedures.use("release")
    assert used.label == "release"
    first = procedures.last_used("release")
    assert first is not None
    stats = procedures.record_success("release", success=True)
    assert stats.last_used_at is not None and stats.last_used_at >= first
    assert procedures.last_used("release") == stats.last_used_at
    # A refined procedure keeps its history: the last use of any version.
    newer = procedures.refine("release", [{"tool": "git", "purpose": "t", "instruction": "x"}])
    assert procedures.last_used("release") == stats.last_used_at
    assert procedures.stats("release").last_used_at is None  # the new version's own
    assert procedures.last_used(newer.id) == stats.last_used_at
    assert procedures.last_used("rollback") is None
    assert procedures.count() == 2
    procedures.remove("rollback")
    assert procedures.count() == 1


def test_the_docs_example_runs(ns):
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "recall.md").read_text()
    marker = text.index("<!-- graph-reads example")
    start = text.index("```python\n", marker) + len("```python\n")
    block = text[start : text.index("```", start)]
    exec(compile(block, "docs/recall.md", "exec"), {"ns": ns})
