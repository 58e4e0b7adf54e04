"""Spreading activation against a real PostgreSQL: the pull, the scores, learning, errors."""

from __future__ import annotations

import importlib
import json
import math
from datetime import timedelta

import psycopg
import pytest

from memstore.activation import ActivationParams
from memstore.errors import (
    InvalidInputError,
    NodeNotFoundError,
    NodeRedactedError,
    NodeTombstonedError,
)
from tests.conftest import row_counts

LATER = timedelta(hours=1)


def salience(node, as_of, importance_weight=0.5, tau=-5.0):
    """ACT-R recency of a never-accessed node, blended with importance (docs/activation.md)."""
    age = (as_of - node.recorded_at).total_seconds()
    b = -node.decay_rate * math.log(age)
    recency = 1 / (1 + math.exp(-(b - tau)))
    return importance_weight * node.importance + (1 - importance_weight) * recency


def expected(nodes, edges, seeds, depth, as_of):
    """Independent reference: max over paths (≤ depth hops) of Π weight × salience(dst)."""
    best = {node_id: 0.0 for node_id in nodes}
    for s in seeds:
        best[s] = 1.0

    def walk(node_id, value, hops):
        if hops == depth:
            return
        for src, dst, weight in edges:
            if src == node_id:
                reached = value * weight * salience(nodes[dst], as_of)
                best[dst] = max(best[dst], reached)
                walk(dst, reached, hops + 1)

    for s in seeds:
        walk(s, 1.0, 0)
    return best


def one(conn, query, params):
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row


def make(ns, *names, **fields):
    fields.setdefault("node_type", "Fact")
    return {name: ns.remember(f"memory {name}", **fields) for name in names}


def scores(activation):
    return {reached.id: reached.activation for reached in activation.background}


def test_scores_match_an_independent_computation_on_a_graph_with_a_cycle(ns):
    n = make(ns, "a", "b", "c", "d", "e")
    links = [("a", "b", 0.9), ("b", "c", 0.8), ("c", "a", 0.7), ("a", "d", 0.3), ("d", "c", 0.95),
             ("c", "e", 0.6)]  # fmt: skip
    for src, dst, weight in links:
        ns.link(n[src].id, n[dst].id, weight=weight)
    as_of = n["e"].recorded_at + LATER
    nodes = {node.id: ns.get(node.id) for node in n.values()}
    for depth in (1, 2, 3):
        activation = ns.activate(seeds=[n["a"].id], depth=depth, as_of=as_of)
        reference = expected(
            nodes, [(n[s].id, n[d].id, w) for s, d, w in links], [n["a"].id], depth, as_of
        )
        reached = {i: v for i, v in reference.items() if v > 0}
        assert scores(activation) == pytest.approx(reached)
    # The seed keeps its own activation: the cycle back to it is weaker.
    assert scores(activation)[n["a"].id] == 1.0
    by_id = {item.node.id: item for item in activation.working_memory}
    assert [step.node_id for step in by_id[n["e"].id].path] == [n[k].id for k in "abce"]


def test_each_node_is_expanded_once_at_its_least_depth(ns):
    # b is reached at depth 1 (a -> b) and again at depth 2 (a -> c -> b); x only
    # through an inhibitory edge, which is not walked through.
    n = make(ns, "a", "b", "c", "d", "e", "x", "y")
    links = [("a", "b", 0.9, False), ("a", "c", 0.8, False), ("c", "b", 0.7, False),
             ("b", "d", 0.6, False), ("d", "e", 0.5, False), ("a", "x", 0.4, True),
             ("x", "y", 0.9, False)]  # fmt: skip
    for src, dst, weight, inhibitory in links:
        ns.link(n[src].id, n[dst].id, weight=weight, inhibitory=inhibitory)
    for depth, edges, reached in ((1, 3, "abcx"), (2, 5, "abcdx"), (3, 6, "abcdex")):
        activation = ns.activate(seeds=[n["a"].id], depth=depth)
        # every edge once: b's edge to d is not read again for b's second depth
        assert activation.stats.edges == edges
        depths = {r.id: r.depth for r in activation.background}
        assert set(depths) == {n[k].id for k in reached}
        least = {"a": 0, "b": 1, "c": 1, "x": 1, "d": 2, "e": 3}
        assert depths == {n[k].id: least[k] for k in reached}


def test_a_hub_gives_only_its_heaviest_edges_up_to_the_fanout_cap(ns):
    hub = ns.remember("hub")
    spokes = ns.remember_many([f"spoke {i}" for i in range(40)])
    for i, spoke in enumerate(spokes):
        ns.link(hub.id, spoke, weight=round(0.01 + i * 0.02, 2))
    activation = ns.activate(seeds=[hub.id], depth=1, fanout=16)
    assert activation.stats.edges == 16
    reached = {r.id for r in activation.background} - {hub.id}
    assert reached == set(spokes[-16:])


def test_a_learned_weight_lifts_a_light_edge_into_the_cap(ns, database_url):
    hub = ns.remember("hub")
    spokes = ns.remember_many([f"spoke {i}" for i in range(20)])
    edges = [ns.link(hub.id, spoke, weight=0.5) for spoke in spokes[:-1]]
    light = ns.link(hub.id, spokes[-1], weight=0.05)
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO memstore.edge_state (namespace_id, edge_id, src, dst, hebbian_weight)"
            " VALUES (%s, %s, %s, %s, 0.9)",
            (ns.id, light.id, hub.id, spokes[-1]),
        )
    activation = ns.activate(seeds=[hub.id], depth=1, fanout=4)
    reached = {r.id: r for r in activation.background}
    assert spokes[-1] in reached  # w_eff = 1 - 0.95 * 0.1 = 0.905: the heaviest now
    assert reached[spokes[-1]].via_edge == light.id
    assert len(reached) == 5 and edges  # the hub and four spokes


def test_tombstoned_nodes_and_edges_are_not_followed(ns):
    n = make(ns, "a", "b", "c", "d")
    ns.link(n["a"].id, n["b"].id, weight=0.9)
    ns.link(n["b"].id, n["c"].id, weight=0.9)
    cut = ns.link(n["a"].id, n["d"].id, weight=0.9)
    ns.forget(n["b"].id, reason="wrong")
    ns.forget(cut.id, target="edge", reason="not related")
    activation = ns.activate(seeds=[n["a"].id], depth=3)
    assert {r.id for r in activation.background} == {n["a"].id}


def test_superseded_nodes_lead_to_their_current_version_and_keep_their_edges(ns):
    n = make(ns, "a", "b", "c")
    ns.link(n["a"].id, n["b"].id, weight=0.9)
    ns.link(n["b"].id, n["c"].id, weight=0.9)
    newer = ns.revise(n["b"].id, "memory b, corrected", reason="typo")
    activation = ns.activate(seeds=[n["a"].id], depth=2)
    reached = {r.id for r in activation.background}
    assert reached == {n["a"].id, newer.id, n["c"].id}
    # A seed given as an old version stands for the current one.
    again = ns.activate(seeds=[n["b"].id], depth=1)
    assert {r.id for r in again.background} == {newer.id, n["c"].id}


def test_a_node_revised_twice_is_reached_at_its_newest_version_with_all_its_edges(ns):
    n = make(ns, "a", "b", "c", "d")
    ns.link(n["a"].id, n["b"].id, weight=0.9)  # into the oldest version
    ns.link(n["b"].id, n["c"].id, weight=0.9)  # out of the oldest version
    second = ns.revise(n["b"].id, "memory b, second", reason="typo")
    ns.link(second.id, n["d"].id, weight=0.9)  # out of the middle version
    third = ns.revise(second.id, "memory b, third", reason="typo")
    activation = ns.activate(seeds=[n["a"].id], depth=2)
    assert {r.id for r in activation.background} == {n["a"].id, third.id, n["c"].id, n["d"].id}
    again = ns.activate(seeds=[second.id], depth=1)
    assert {r.id for r in again.background} == {third.id, n["c"].id, n["d"].id}


def test_the_privacy_ceiling_hides_nodes_and_what_lies_behind_them(ns):
    a = ns.remember("public start", node_type="Fact")
    secret = ns.remember("secret middle", node_type="Fact", privacy=3)
    beyond = ns.remember("public beyond", node_type="Fact")
    ns.link(a.id, secret.id, weight=0.9)
    ns.link(secret.id, beyond.id, weight=0.9)
    assert {r.id for r in ns.activate(seeds=[a.id], depth=2).background} == {
        a.id,
        secret.id,
        beyond.id,
    }
    hidden = ns.activate(seeds=[a.id], depth=2, privacy_ceiling=1)
    assert {r.id for r in hidden.background} == {a.id}


def test_as_of_sees_the_graph_the_store_knew_then(ns):
    n = make(ns, "a", "b")
    then = ns.link(n["a"].id, n["b"].id, weight=0.9).recorded_at + timedelta(microseconds=1)
    late = ns.remember("memory late", node_type="Fact")
    ns.link(n["a"].id, late.id, weight=0.9)
    ns.forget(n["b"].id, reason="changed my mind")
    now_view = {r.id for r in ns.activate(seeds=[n["a"].id]).background}
    then_view = {r.id for r in ns.activate(seeds=[n["a"].id], as_of=then).background}
    assert now_view == {n["a"].id, late.id}
    assert then_view == {n["a"].id, n["b"].id}


def test_inhibitory_edges_suppress_in_proportion_to_the_source(ns):
    n = make(ns, "a", "b", "c")
    ns.link(n["a"].id, n["b"].id, weight=1.0)
    ns.link(n["c"].id, n["b"].id, weight=0.5, inhibitory=True)
    as_of = n["c"].recorded_at + LATER
    activation = ns.activate(seeds=[n["a"].id, n["c"].id], depth=1, as_of=as_of)
    b = next(r for r in activation.background if r.id == n["b"].id)
    raw = 1.0 * 1.0 * salience(ns.get(n["b"].id), as_of)
    assert b.raw_activation == pytest.approx(raw)
    assert b.activation == pytest.approx(raw * (1 - 1.0 * 0.5))


def test_a_safety_layer_is_not_suppressed_from_above(ns):
    guard = ns.remember("never share the password", node_type="Safety", layer=0)
    task = ns.remember("user asks for the password", node_type="Fact", layer=3)
    start = ns.remember("login help", node_type="Fact")
    ns.link(start.id, guard.id, weight=0.9)
    ns.link(task.id, guard.id, weight=1.0, inhibitory=True)
    activation = ns.activate(seeds=[start.id, task.id], depth=1)
    safety = next(r for r in activation.background if r.id == guard.id)
    assert safety.activation == safety.raw_activation > 0
    assert guard.id in {item.node.id for item in activation.working_memory}


def test_bookkeeping_types_are_reached_but_never_working_memory(ns):
    start = ns.remember("start", node_type="Fact")
    tag = ns.remember("#travel", node_type="Tag")
    state = ns.remember("felt tired", node_type="InternalStateEvent")
    for target in (tag, state):
        ns.link(start.id, target.id, weight=1.0)
    activation = ns.activate(seeds=[start.id], depth=1)
    assert {tag.id, state.id} <= {r.id for r in activation.background}
    assert {item.node.id for item in activation.working_memory} == {start.id}


def test_a_query_seeds_from_recall_and_the_path_starts_at_a_seed(ns):
    alice = ns.remember("Alice works at the Lisbon harbour", node_type="Fact")
    boat = ns.remember("The harbour ferry leaves at nine", node_type="Fact")
    ns.link(alice.id, boat.id, weight=0.9)
    activation = ns.activate("Where does Alice work?", depth=1)
    first = activation.working_memory[0]
    assert first.node.id == alice.id and first.seed and first.score == 1.0
    assert activation.stats.seeds >= 1
    assert set(activation.stats.timings_ms) >= {"seed", "pull", "score", "fetch"}


def test_the_same_input_gives_the_same_output(ns):
    n = make(ns, *"abcdef")
    for src, dst in zip("abcde", "bcdef", strict=True):
        ns.link(n[src].id, n[dst].id, weight=0.7)
        ns.link(n["a"].id, n[dst].id, weight=0.7)
    as_of = n["f"].recorded_at + LATER
    first = ns.activate("memory", seeds=[n["a"].id], depth=3, as_of=as_of)
    second = ns.activate("memory", seeds=[n["a"].id], depth=3, as_of=as_of)
    assert first.model_dump(exclude={"stats"}) == second.model_dump(exclude={"stats"})


def test_learning_writes_exactly_the_expected_rows(ns, database_url):
    n = make(ns, "a", "b", "c")
    ab = ns.link(n["a"].id, n["b"].id, weight=0.9)
    ns.link(n["b"].id, n["c"].id, weight=0.01)  # c stays below its threshold
    params = ActivationParams(hebbian_rate=0.25, access_ring_size=3)
    before = row_counts(database_url)
    first = ns.activate(seeds=[n["a"].id], depth=2, learn=True, params=params)
    members = {item.node.id for item in first.working_memory}
    assert members == {n["a"].id, n["b"].id}
    after = row_counts(database_url)
    assert after["activations"] - before["activations"] == 2
    assert after["node_state"] - before["node_state"] == 2
    assert after["edge_state"] - before["edge_state"] == 1
    for _ in range(4):
        ns.activate(seeds=[n["a"].id], depth=2, learn=True, params=params)
    with psycopg.connect(database_url) as conn:
        hebb, fired = one(
            conn,
            "SELECT hebbian_weight, fire_count FROM memstore.edge_state"
            " WHERE namespace_id = %s AND edge_id = %s",
            (ns.id, ab.id),
        )
        rings = conn.execute(
            "SELECT node_id, activation_count, cardinality(access_ring) FROM memstore.node_state"
            " WHERE namespace_id = %s ORDER BY node_id",
            (ns.id,),
        ).fetchall()
        (authored,) = one(
            conn,
            "SELECT weight FROM memstore.edges WHERE namespace_id = %s AND id = %s",
            (ns.id, ab.id),
        )
    expected_hebb = 0.0
    for _ in range(5):
        expected_hebb += 0.25 * (1 - expected_hebb)
    assert hebb == pytest.approx(expected_hebb, rel=1e-5) and fired == 5
    assert rings == [(n["a"].id, 5, 3), (n["b"].id, 5, 3)]  # the ring keeps the newest 3
    assert authored == pytest.approx(0.9)  # authored weights never change
    # Learned weight now raises the edge's effective weight.
    later = ns.activate(seeds=[n["a"].id], depth=1)
    assert later.stats.edges == 1


def test_decay_hebbian_fades_learned_weights_only(ns, database_url):
    n = make(ns, "a", "b")
    edge = ns.link(n["a"].id, n["b"].id, weight=0.9)
    ns.activate(seeds=[n["a"].id], depth=1, learn=True, params=ActivationParams(hebbian_rate=0.5))
    assert ns.decay_hebbian(0.5, unused_for=timedelta(hours=1)) == 0  # fired just now
    assert ns.decay_hebbian(0.5) == 1
    with psycopg.connect(database_url) as conn:
        (hebb,) = one(
            conn,
            "SELECT hebbian_weight FROM memstore.edge_state WHERE namespace_id = %s"
            " AND edge_id = %s",
            (ns.id, edge.id),
        )
    assert hebb == pytest.approx(0.25)
    assert ns.decay_hebbian(0.001) == 1  # below the floor: unlearned
    assert ns.decay_hebbian(0.5) == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"query": "   "},
        {"seeds": [1], "depth": -1},
        {"seeds": [1], "depth": 7},
        {"seeds": [1], "fanout": 0},
        {"seeds": [1], "limit": 0},
        {"seeds": [1], "privacy_ceiling": 9},
        {"seeds": ["x"]},
        {"seeds": [1], "as_of": "yesterday"},
        {"seeds": [1], "params": {"hebbian_rate": 2}},
        {"seeds": [1], "surprise": True},
    ],
)
def test_bad_input_is_refused_and_changes_nothing(ns, database_url, kwargs):
    before = row_counts(database_url)
    with pytest.raises((InvalidInputError, TypeError)):
        ns.activate(**kwargs)
    assert row_counts(database_url) == before


def test_unknown_forgotten_and_redacted_seeds_are_named(ns, store, database_url):
    gone = ns.remember("forgotten")
    erased = ns.remember("erased")
    ns.forget(gone.id, reason="no longer true")
    ns.redact(erased.id, reason="personal data")
    elsewhere = store.namespace(f"{ns.name}-other").remember("not yours")
    before = row_counts(database_url)
    with pytest.raises(NodeNotFoundError):
        ns.activate(seeds=[10**12], learn=True)
    with pytest.raises(NodeNotFoundError):
        ns.activate(seeds=[elsewhere.id], learn=True)
    with pytest.raises(NodeTombstonedError):
        ns.activate(seeds=[gone.id], learn=True)
    with pytest.raises(NodeRedactedError):
        ns.activate(seeds=[erased.id], learn=True)
    assert row_counts(database_url) == before


def test_given_seeds_are_checked_in_order_and_stand_for_their_current_version(ns):
    # The pull reports on the given ids; the first one that may not be used is named.
    n = make(ns, "a", "b", "c")
    newer = ns.revise(n["a"].id, "memory a, corrected", reason="typo")
    ns.forget(n["b"].id, reason="no longer true")
    ns.forget(newer.id, reason="no longer true either")
    with pytest.raises(NodeNotFoundError):
        ns.activate(seeds=[n["c"].id, 10**12, n["b"].id])
    with pytest.raises(NodeTombstonedError) as raised:
        ns.activate(seeds=[n["c"].id, n["a"].id, n["b"].id])
    assert raised.value.node_id == newer.id  # the old id stood for its forgotten version
    with pytest.raises(NodeTombstonedError):
        ns.activate("memory", seeds=[n["b"].id])
    # Combined with a query's seeds, a given seed keeps strength 1.
    activation = ns.activate("memory", seeds=[n["c"].id], depth=1)
    assert next(r for r in activation.background if r.id == n["c"].id).raw_activation == 1.0


def test_the_projection_of_a_hub_with_ten_thousand_neighbours_stays_under_the_cap(ns, database_url):
    hub = ns.remember("hub of everything", node_type="Fact")
    # Multi-byte content: a snippet must never split a character. The spokes go in
    # with plain SQL (no vectors: the embeddings cache may lack any node).
    with psycopg.connect(database_url) as conn:
        spokes = [
            row[0]
            for row in conn.execute(
                "INSERT INTO memstore.nodes (namespace_id, kind, node_type, content)"
                " SELECT %s, 'semantic', 'Fact', repeat('ä€😀 neighbour ' || i || ' ',"
                " CASE WHEN i < 20 THEN 40 ELSE 1 END)"
                " FROM generate_series(0, 9999) AS i RETURNING id",
                (ns.id,),
            )
        ]
        conn.execute(
            "INSERT INTO memstore.edges (namespace_id, src, dst, weight)"
            " SELECT %s, %s, dst, 0.9 FROM unnest(%s::bigint[]) AS d(dst)",
            (ns.id, hub.id, spokes),
        )
    activation = ns.activate(seeds=[hub.id], depth=1, fanout=10_000, limit=1000)
    assert len(activation.background) == 10_001
    full = json.dumps(activation.model_dump(mode="json"))
    assert len(full) > 1_000_000
    for cap in (2048, 32_768):
        projected = activation.project(top_k=12, snippet_chars=600, max_bytes=cap)
        text = json.dumps(projected, ensure_ascii=False, separators=(",", ":"))
        assert len(text.encode()) <= cap
        assert json.loads(text) == projected
        assert projected["omitted"] > 0
        assert all(stub["pointer"] for stub in projected["pointers"])
        for entry in projected["working_memory"]:
            assert len(entry["snippet"]) <= 600
            entry["snippet"].encode("utf-8")  # whole characters only
    roomy = activation.project(top_k=12, snippet_chars=600, max_bytes=32_768)
    assert len(roomy["working_memory"]) == 12
    assert roomy["working_memory"][0]["id"] == hub.id
    with pytest.raises(InvalidInputError):
        activation.project(max_bytes=10)


def test_edges_are_followed_backwards_only_when_asked(ns, database_url):
    n = make(ns, "a", "b")
    edge = ns.link(n["b"].id, n["a"].id, weight=0.8, relation="cause_of")
    assert {r.id for r in ns.activate(seeds=[n["a"].id]).background} == {n["a"].id}
    both = ns.activate(seeds=[n["a"].id], both_directions=True, learn=True, session_id="s-1")
    b = next(item for item in both.working_memory if item.node.id == n["b"].id)
    assert b.path[-1].edge_id == edge.id and b.path[-1].reverse
    assert b.path[-1].relation == "cause_of"
    with psycopg.connect(database_url) as conn:
        sessions = conn.execute(
            "SELECT DISTINCT session_id FROM memstore.activations WHERE namespace_id = %s",
            (ns.id,),
        ).fetchall()
    assert sessions == [("s-1",)]


def test_a_learned_edge_in_either_direction_competes_for_the_cap_at_any_hop(ns, database_url):
    # The hub is reached at hop 1, so its edges are capped in hop 2; a plain
    # node (b) in the same hop keeps its heaviest edges in index order, both ways.
    n = make(ns, "seed", "hub", "b", "b_out", "b_in", "light", "heavy_out", "heavy_in")
    ns.link(n["seed"].id, n["hub"].id, weight=0.9)
    ns.link(n["seed"].id, n["b"].id, weight=0.9)
    ns.link(n["b"].id, n["b_out"].id, weight=0.4)
    ns.link(n["b_in"].id, n["b"].id, weight=0.3)
    ns.link(n["hub"].id, n["heavy_out"].id, weight=0.6)
    ns.link(n["heavy_in"].id, n["hub"].id, weight=0.5)
    light = ns.link(n["light"].id, n["hub"].id, weight=0.05)  # an in-edge of the hub
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO memstore.edge_state (namespace_id, edge_id, src, dst, hebbian_weight)"
            " VALUES (%s, %s, %s, %s, 0.9)",
            (ns.id, light.id, n["light"].id, n["hub"].id),
        )
    reached = {r.id: r for r in ns.activate(seeds=[n["seed"].id], depth=2, fanout=3,
                                             both_directions=True).background}  # fmt: skip
    # the hub: the learned in-edge (w_eff 0.905), the edge back to the seed
    # (0.9) and its heavier out-edge (0.6), not its other in-edge (0.5)
    assert reached[n["light"].id].via_edge == light.id
    assert n["heavy_out"].id in reached and n["heavy_in"].id not in reached
    # b: the edge back to the seed and both of its own, one followed backwards
    assert {n["b_out"].id, n["b_in"].id} <= set(reached)
    # one direction only: the learned in-edge is not followed at all
    forward = {r.id for r in ns.activate(seeds=[n["seed"].id], depth=2, fanout=3).background}
    assert forward == {n[k].id for k in ("seed", "hub", "b", "heavy_out", "b_out")}


def test_similarity_is_read_for_every_reached_node_with_or_without_a_vector(ns, database_url):
    # All vectors present: one scan reads them; one missing: each node is probed.
    # Either way each node gets its own cosine (NaN without a vector) and depth.
    from memstore.activation.pull import pull

    n = make(ns, "a", "b", "c", "d")
    for src, dst in (("a", "b"), ("b", "c"), ("a", "d")):
        ns.link(n[src].id, n[dst].id, weight=0.5)
    vector = ns.embedder.embed(["memory c"])[0]

    def pulled():
        with ns.connection() as conn:
            nb = pull(conn, ns.id, [n["a"].id], depth=2, fanout=16, both_directions=False,
                      privacy_ceiling=None, as_of=None, vector=vector,
                      model=ns.embedder.name)  # fmt: skip
        ids = nb.node_id.tolist()
        return dict(zip(ids, nb.node_similarity.tolist(), strict=True)), dict(
            zip(ids, nb.node_depth.tolist(), strict=True)
        )

    similarity, depth = pulled()
    assert depth == {n["a"].id: 0, n["b"].id: 1, n["d"].id: 1, n["c"].id: 2}
    assert similarity[n["c"].id] == pytest.approx(1.0)
    for key in "abd":
        own = ns.embedder.embed([f"memory {key}"])[0]
        cosine = float(own @ vector) / float((own @ own) ** 0.5 * (vector @ vector) ** 0.5)
        assert similarity[n[key].id] == pytest.approx(cosine, abs=1e-5)
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "DELETE FROM memstore.embeddings WHERE namespace_id = %s AND node_id = %s",
            (ns.id, n["b"].id),
        )
    without_b, depth_after = pulled()
    assert depth_after == depth
    assert math.isnan(without_b.pop(n["b"].id))
    assert without_b == pytest.approx({k: v for k, v in similarity.items() if k != n["b"].id})


def test_a_refused_activation_leaves_its_pooled_connection_transactional(ns, database_url):
    # activate() opens its transaction with the pull (autocommit on the driver,
    # BEGIN sent by hand): whether it commits or fails, the connection goes back
    # to the pool as it came, so the next transaction is still all-or-nothing.
    n = make(ns, "a", "b")
    ns.link(n["a"].id, n["b"].id, weight=0.5)
    for seeds in ([n["a"].id], [10**12]):
        try:
            ns.activate(seeds=seeds, learn=True)
        except NodeNotFoundError:
            pass
        before = row_counts(database_url)
        with pytest.raises(RuntimeError), ns.transaction() as tx:
            tx.remember("written, then rolled back")
            raise RuntimeError("abort")
        assert row_counts(database_url) == before
    # the learning of the first activation was committed
    with psycopg.connect(database_url) as conn:
        counted = one(
            conn,
            "SELECT count(*) FROM memstore.activations WHERE namespace_id = %s",
            (ns.id,),
        )
    assert counted == (2,)


def test_the_pull_reads_numeric_arrays_as_psycopg_would_list_them(ns):
    # pull() loads NULL-free numeric arrays straight into numpy; the values must
    # be what psycopg's own loader gives (with and without NULLs inside).
    pull_module = importlib.import_module("memstore.activation.pull")  # not the function

    n = make(ns, "a", "b", "c")
    ns.link(n["a"].id, n["b"].id, weight=0.3)
    ns.link(n["a"].id, n["c"].id, weight=0.7, inhibitory=True)
    ns.activate(seeds=[n["a"].id], learn=True)  # an access to age
    for vector in (None, ns.embedder.embed(["memory b"])[0]):
        params = {"ns": ns.id, "seeds": [n["a"].id], "given": [n["a"].id], "depth": 2,
                  "fanout": 16, "both": False, "privacy": None, "as_of": None,
                  "vector": vector, "model": ns.embedder.name}  # fmt: skip
        with ns.connection() as conn:
            nb = pull_module.pull(
                conn, ns.id, [n["a"].id], given=[n["a"].id], depth=2, fanout=16,
                both_directions=False, privacy_ceiling=None, as_of=None, vector=vector,
                model=ns.embedder.name,
            )  # fmt: skip
            raw = conn.connection.driver_connection
            with raw.cursor(binary=True) as cursor:
                row = cursor.execute(pull_module.PULL, params).fetchone()
                listed = dict(zip([c.name for c in cursor.description], row, strict=True))
        for name in ("edge_src", "edge_id", "edge_weight", "edge_inhibitory", "edge_depth",
                     "node_id", "node_depth", "node_layer", "node_importance"):  # fmt: skip
            assert getattr(nb, name).tolist() == pytest.approx(listed[name]), name
        similarity = [math.nan if v is None else v for v in listed["node_similarity"]]
        assert nb.node_similarity.tolist() == pytest.approx(similarity, nan_ok=True)
        assert nb.given is not None and nb.given.current == [n["a"].id]
        assert nb.given.known == [True] and type(nb.given.known[0]) is bool
        # Times arrive as microseconds; the ages are the seconds before the moment.
        moment = listed["moment"]
        for ages, times in ((nb.node_age, listed["node_recorded"]),
                            (nb.access_age, listed["access_at"])):  # fmt: skip
            assert len(ages) == len(times) > 0
            seconds = [(moment - t).total_seconds() for t in times]
            assert ages.tolist() == pytest.approx(seconds, abs=1e-6)
            assert pull_module._ages(times, moment).tolist() == pytest.approx(seconds, abs=1e-6)


def test_the_pulls_kept_for_older_revisions_give_ages_for_the_same_neighbourhood(ns):
    # neighbourhood_v2() stays for code of revision 0015 during a deploy:
    # neighbourhood_v3() with ages in seconds instead of times; and
    # neighbourhood(), for revision 0013, is v2 without the seed report.
    pull_module = importlib.import_module("memstore.activation.pull")
    n = make(ns, "a", "b", "c")
    ns.link(n["a"].id, n["b"].id, weight=0.3)
    ns.link(n["b"].id, n["c"].id, weight=0.6)
    ns.activate(seeds=[n["a"].id], depth=2, learn=True)
    as_of = n["c"].recorded_at + LATER  # the moment, the same for both calls
    statements = {
        "v2": "SELECT * FROM memstore.neighbourhood_v2"
        "(%s, %s::bigint[], '{}', 2, 16, false, NULL, %s, NULL, %s)",
        "v3": "SELECT * FROM memstore.neighbourhood_v3"
        "(%s, %s::bigint[], '{}', 2, 16, false, NULL, %s, NULL, %s)",
        "v1": "SELECT * FROM memstore.neighbourhood"
        "(%s, %s::bigint[], 2, 16, false, NULL, %s, NULL, %s)",
    }
    params = (ns.id, [n["a"].id], as_of, ns.embedder.name)
    rows = {}
    with ns.connection() as conn:
        raw = conn.connection.driver_connection
        with raw.cursor() as cursor:
            for version, statement in statements.items():
                row = cursor.execute(statement, params).fetchone()
                rows[version] = dict(zip([c.name for c in cursor.description], row, strict=True))
    old, new = rows["v2"], rows["v3"]
    assert rows["v1"] == {k: v for k, v in old.items() if not k.startswith("given_")}
    assert new["moment"] == as_of
    for name in pull_module.PULL_COLUMNS:
        if name in old:
            assert old[name] == new[name], name
    assert len(old["node_id"]) == 3 and len(old["access_node"]) == 3
    for age, time in (("node_age", "node_recorded"), ("access_age", "access_at")):
        assert old[age] == pytest.approx([(as_of - t).total_seconds() for t in new[time]])
