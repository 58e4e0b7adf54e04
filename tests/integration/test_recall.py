"""Recall: semantic through the HNSW index, lexical, hybrid; filters, as-of, the cache."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest
from psycopg import ClientCursor

from memstore.embedding import HashingEmbedder
from memstore.embedding.cache import index_name
from memstore.errors import InvalidInputError
from memstore.recall import (
    MATCH_BUDGET,
    hnsw_settings,
    recall,
    recall_params,
    recall_statement,
)
from memstore.recall.query import RecallQuery

FACTS = [
    "Alice moved to Lisbon in May",
    "Alice works as a nurse at the city hospital",
    "Bob adopted a beagle puppy named Max",
    "Carol is training for the Berlin marathon",
    "Dan bakes sourdough bread every Sunday",
    "Erin learned to play the cello last winter",
]


@pytest.fixture
def facts(ns):
    return {text: node for text, node in zip(FACTS, map(ns.remember, FACTS), strict=True)}


def test_semantic_scores_are_the_cosine_of_the_embedder(ns, facts):
    hits = ns.recall("Where did Alice move?", mode="semantic", k=3)
    embedder = HashingEmbedder()
    query = embedder.embed(["Where did Alice move?"])[0]
    for hit in hits:
        expected = float(np.dot(query, embedder.embed([hit.node.content])[0]))
        assert hit.parts.similarity == pytest.approx(expected, abs=1e-5)
        assert hit.score == pytest.approx(expected, abs=1e-5)
    assert hits[0].node.content == "Alice moved to Lisbon in May"
    assert [h.parts.fused_rank for h in hits] == [1, 2, 3]


def test_lexical_recall_uses_stemmed_full_text(ns, facts):
    hits = ns.recall("marathons training", mode="lexical")
    assert hits[0].node.content == "Carol is training for the Berlin marathon"
    assert hits[0].parts.lexical > 0 and hits[0].parts.lexical_rank == 1
    assert ns.recall("the of and", mode="lexical") == []  # only stop words


def test_lexical_candidates_come_from_rare_terms_but_always_number_k(ns):
    # "meeting" is in every document; "budget" in two of 200.
    ns.remember_many([f"meeting note {i}: the weather was fine" for i in range(198)])
    ns.remember_many(["meeting about the budget", "budget review meeting tomorrow"])
    hits = ns.recall("meeting budget", mode="lexical", k=10)
    assert {h.node.content for h in hits[:2]} == {
        "meeting about the budget",
        "budget review meeting tomorrow",
    }
    # Only two documents hold the rare term: common ones fill up the k.
    assert len(hits) == 10
    assert len(ns.recall("meeting", mode="lexical", k=10)) == 10  # no rare term at all


def test_hybrid_scores_only_a_bounded_share_of_common_term_documents(ns):
    # "meeting" is in 450 documents, "budget" in two: more than MATCH_BUDGET
    # times hybrid's candidate pool (50) hold only the common term.
    ns.remember_many([f"meeting note {i}: the weather was fine" for i in range(450)])
    ns.remember_many(["meeting about the budget", "budget review meeting tomorrow"])
    assert MATCH_BUDGET * RecallQuery(text="q", k=10).pool < 450
    hybrid = ns.recall("meeting budget", k=10)
    found_by_text = {h.node.content for h in hybrid if h.parts.lexical_rank is not None}
    assert found_by_text == {"meeting about the budget", "budget review meeting tomorrow"}
    assert hybrid[0].node.content in found_by_text
    # The other hits still carry BM25 for the common term (they came by vector).
    assert all(h.parts.lexical > 0 for h in hybrid)
    # Lexical recall keeps its promise of k results when k documents match.
    assert len(ns.recall("meeting budget", mode="lexical", k=10)) == 10


def test_hybrid_combines_both_and_reports_the_parts(ns, facts):
    hits = ns.recall("who bakes bread", k=3)
    top = hits[0]
    assert top.node.content == "Dan bakes sourdough bread every Sunday"
    assert top.parts.semantic_rank is not None and top.parts.lexical_rank is not None
    assert 0 <= top.score <= 1
    rrf = ns.recall("who bakes bread", k=3, fusion="rrf")
    assert rrf[0].node.id == top.node.id


def test_hits_carry_provenance(ns):
    seen = datetime(2026, 3, 1, tzinfo=UTC)
    ns.remember("Frank climbs in Sintra", source="chat:7", actor="frank", observed_at=seen)
    hit = ns.recall("climbing Sintra")[0]
    assert (hit.node.source, hit.node.actor, hit.node.observed_at) == ("chat:7", "frank", seen)


def test_filters_by_kind_type_tier_and_privacy(ns):
    ns.remember("the launch code is 1234", kind="semantic", privacy=3, tier="lessons")
    ns.remember("the launch is on Monday", kind="episodic", privacy=0, node_type="Event")
    assert {h.node.kind for h in ns.recall("launch", kinds=["semantic"])} == {"semantic"}
    assert {h.node.node_type for h in ns.recall("launch", node_types=["Event"])} == {"Event"}
    assert {h.node.tier for h in ns.recall("launch", tiers=["lessons"])} == {"lessons"}
    visible = ns.recall("launch code", privacy_ceiling=1)
    assert visible and all(h.node.privacy <= 1 for h in visible)


def test_current_only_by_default_and_superseded_on_request(ns):
    old = ns.remember("Gina lives in Braga")
    new = ns.revise(old.id, "Gina lives in Coimbra", reason="moved")
    ids = [h.node.id for h in ns.recall("Gina lives")]
    assert new.id in ids and old.id not in ids
    assert old.id in [h.node.id for h in ns.recall("Gina lives", include_superseded=True)]


def test_as_of_answers_with_what_the_store_knew_then(ns):
    old = ns.remember("Hugo's favourite colour is green")
    time.sleep(0.05)
    before_revision = datetime.now(UTC)
    time.sleep(0.05)
    new = ns.revise(old.id, "Hugo's favourite colour is blue", reason="changed his mind")
    later = ns.remember("Hugo's favourite food is bacalhau")
    then = [h.node.id for h in ns.recall("Hugo favourite", as_of=before_revision)]
    assert old.id in then and new.id not in then and later.id not in then
    now = [h.node.id for h in ns.recall("Hugo favourite")]
    assert new.id in now and old.id not in now


def test_valid_at_filters_by_world_time(ns):
    day = timedelta(days=1)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    past = ns.remember("Ivo's manager was Joana", valid_from=t0, valid_to=t0 + 30 * day)
    present = ns.remember("Ivo's manager is Rui", valid_from=t0 + 30 * day)
    assert [h.node.id for h in ns.recall("Ivo manager", valid_at=t0 + day)] == [past.id]
    assert [h.node.id for h in ns.recall("Ivo manager", valid_at=t0 + 60 * day)] == [present.id]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"query": ""}, "text"),
        ({"query": "x", "k": 0}, "k"),
        ({"query": "x", "mode": "fuzzy"}, "mode"),
        ({"query": "x", "as_of": datetime(2026, 1, 1)}, "timezone"),
        ({"query": "x", "privacy_ceiling": 5}, "privacy_ceiling"),
    ],
)
def test_bad_recall_arguments(ns, args, message):
    query = args.pop("query")
    with pytest.raises(InvalidInputError, match=message):
        ns.recall(query, **args)


@pytest.fixture(scope="module")
def crowded(store):
    """2,000 nodes with random vectors; 20 (1%) have kind 'procedural'."""
    ns = store.namespace("crowded")
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(2000, 384)).astype(np.float32)
    items = [
        {
            "content": f"note {i}",
            "kind": "procedural" if i % 100 == 0 else "episodic",
            "embedding": vectors[i],
        }
        for i in range(2000)
    ]
    ns.remember_many(items)
    with store.transaction() as conn:  # planner statistics, as autovacuum would gather
        conn.exec_driver_sql("ANALYZE memstore.embeddings")
        conn.exec_driver_sql("ANALYZE memstore.nodes")
    return ns


def test_semantic_recall_goes_through_the_hnsw_index(crowded, store):
    # (Namespaces of up to EXACT_SEARCH_MAX vectors are searched exactly; this
    # checks the index path that larger ones take.)
    q = RecallQuery(text="note", k=10, mode="semantic")
    vector = crowded.embedder.embed([q.text])[0]
    statement = recall_statement(crowded.embedder.name, 384, exact=False, mode="semantic")
    with store.transaction() as conn:
        raw = conn.connection.driver_connection
        raw.execute(hnsw_settings(q.pool, filtered=q.filtered))
        text = ClientCursor(raw).mogrify(statement, recall_params(crowded.id, q, vector))
        plan = "\n".join(row[0] for row in raw.execute("EXPLAIN " + text))
    assert f"Index Scan using {index_name(crowded.embedder.name, 384)}" in plan, plan


def test_a_one_percent_filter_still_returns_k_hits(crowded):
    hits = crowded.recall("note", mode="semantic", kinds=["procedural"], k=10)
    assert len(hits) == 10
    assert {h.node.kind for h in hits} == {"procedural"}


@pytest.mark.parametrize("exact", [False, True])
def test_both_search_paths_return_the_true_nearest_neighbours(crowded, store, database_url, exact):
    rng = np.random.default_rng(11)
    query = rng.normal(size=384).astype(np.float32)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT node_id, embedding::text FROM memstore.embeddings WHERE namespace_id = %s",
            (crowded.id,),
        ).fetchall()
    ids = np.array([r[0] for r in rows])
    matrix = np.array([[float(x) for x in r[1].strip("[]").split(",")] for r in rows])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    exact_top = set(ids[np.argsort(-(matrix @ (query / np.linalg.norm(query))))[:10]].tolist())
    with store.transaction() as conn:
        hits = recall(
            conn,
            crowded.id,
            crowded.name,
            RecallQuery(text="q", k=10, mode="semantic"),
            query,
            crowded.embedder,
            exact=exact,
        )
    found = {h.node.id for h in hits}
    assert len(exact_top & found) >= (10 if exact else 9)


def test_embeddings_are_a_cache_recall_survives_their_loss_and_rebuild_restores_it(
    ns, facts, database_url
):
    question = "Which pet did Bob adopt?"
    before_semantic = [(h.node.id, round(h.score, 6)) for h in ns.recall(question, mode="semantic")]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM memstore.embeddings WHERE namespace_id = %s", (ns.id,))
        nodes = conn.execute(
            "SELECT count(*) FROM memstore.nodes WHERE namespace_id = %s", (ns.id,)
        ).fetchone()
    assert nodes == (len(FACTS),)  # no memory lost
    status = ns.embedding_status()
    assert (status.missing, status.fresh) == (len(FACTS), 0)
    assert ns.recall(question, mode="semantic") == []
    fallback = ns.recall(question)  # hybrid falls back to full text
    assert fallback[0].node.content == "Bob adopted a beagle puppy named Max"
    assert fallback[0].parts.similarity is None

    progress: list[int] = []
    assert ns.rebuild_embeddings(batch_size=4, progress=progress.append) == len(FACTS)
    assert sum(progress) == len(FACTS)
    after = [(h.node.id, round(h.score, 6)) for h in ns.recall(question, mode="semantic")]
    assert after == before_semantic
    assert ns.embedding_status().fresh == len(FACTS)
    assert ns.rebuild_embeddings() == 0
