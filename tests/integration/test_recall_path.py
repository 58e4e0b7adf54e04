"""How a recall reaches the server: one round trip, exact scan or HNSW by the namespace's share."""

from __future__ import annotations

import math
import time

import psycopg
import pytest
from psycopg import sql

from memstore import MemoryStore
from memstore.config import Settings
from memstore.db.transaction import in_one_round_trip
from memstore.embedding import HashingEmbedder
from memstore.embedding.cache import index_name
from memstore.errors import DatabaseError, DatabaseUnavailableError
from memstore.recall import (
    EXACT_SEARCH_MAX,
    FILTERED_EF_FACTOR,
    HNSW_MIN_SHARE,
    RecallQuery,
    search_settings,
    searched_exactly,
)
from memstore.recall.terms import CACHED_DF_MIN, REFRESH_GROWTH, TERM_SAMPLE, TermCounts

# A model of its own (48 dimensions), so this module controls who shares its index.
EMBEDDER = HashingEmbedder(dims=48)


@pytest.mark.parametrize(
    ("vectors", "indexed", "exact"),
    [
        (600, None, True),  # no index: nothing else to use
        (600, 6_000, True),  # a tenth of the index: compared exactly
        (600, 600, False),  # the whole index: walked
        (EXACT_SEARCH_MAX, EXACT_SEARCH_MAX, False),
        (EXACT_SEARCH_MAX + 1, 10_000_000, False),  # too big to compare exactly
        (2_000, 0, False),  # a stale count (never analysed) is at least the namespace
    ],
)
def test_the_search_path_follows_the_namespaces_share_of_the_index(vectors, indexed, exact):
    assert searched_exactly(vectors, indexed) is exact
    if indexed and vectors <= EXACT_SEARCH_MAX:
        assert exact is (vectors / indexed < HNSW_MIN_SHARE)


def _index_scans(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s",
            (index_name(EMBEDDER.name, EMBEDDER.dims),),
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture(scope="module")
def alone(database_url):
    """1,000 memories, the only ones of their model; 10 (1%) are procedural."""
    store = MemoryStore.open(database_url, embedder=EMBEDDER)
    ns = store.namespace("alone")
    ns.remember_many(
        [
            {
                "content": f"note {i} on topic {i % 37}",
                "kind": "procedural" if i % 100 == 0 else "episodic",
            }
            for i in range(1000)
        ]
    )
    with store.transaction() as conn:  # planner statistics, as autovacuum would gather
        conn.exec_driver_sql("ANALYZE memstore.embeddings")
    yield ns
    store.close()


def test_a_namespace_that_is_its_whole_index_walks_it(alone, database_url):
    before = _index_scans(database_url)
    alone.recall("note on topic 5", mode="semantic")
    deadline = time.monotonic() + 10  # statistics reach other sessions within a second or so
    while _index_scans(database_url) == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _index_scans(database_url) > before


def test_the_iterative_scan_setting_reaches_the_one_round_trip_read(alone):
    # ef_search 50 over a 1% filter finds ~0-1 rows unless the scan iterates.
    hits = alone.recall("note", mode="semantic", kinds=["procedural"], k=10)
    assert len(hits) == 10
    assert {h.node.kind for h in hits} == {"procedural"}


def test_a_filtered_search_widens_the_beam():
    plain = RecallQuery(text="x", k=10, mode="semantic")
    narrowed = RecallQuery(text="x", k=10, mode="semantic", tiers=["lessons"])
    assert not plain.filtered and narrowed.filtered
    assert search_settings(plain.pool)["hnsw.ef_search"] == "50"
    widened = search_settings(narrowed.pool, filtered=True)["hnsw.ef_search"]
    assert widened == str(FILTERED_EF_FACTOR * 50)
    assert search_settings(400, filtered=True)["hnsw.ef_search"] == "1000"  # pgvector's cap


def test_a_ceiling_of_every_level_is_no_filter():
    # The services fill in the store's ceiling (3 by default) before planning: it
    # narrows nothing, so the beam stays the plain one; a lower ceiling filters.
    assert not RecallQuery(text="x", k=10, mode="semantic", privacy_ceiling=3).filtered
    assert RecallQuery(text="x", k=10, mode="semantic", privacy_ceiling=1).filtered


def test_every_mode_answers_through_the_one_round_trip_read(alone):
    for mode in ("semantic", "lexical", "hybrid"):
        hits = alone.recall("topic 5", mode=mode, k=5)
        assert len(hits) == 5, mode
        assert all(h.score > 0 for h in hits), mode


def test_a_failed_read_rolls_back_and_the_connection_serves_the_next(alone):
    engine = alone._scope.engine
    with pytest.raises(DatabaseError, match="division by zero"):
        in_one_round_trip(engine, alone.id, sql.SQL("SELECT 1 / 0"), {})
    for _ in range(3):  # whichever pooled connection comes next
        rows = in_one_round_trip(
            engine,
            alone.id,
            sql.SQL(
                "SELECT current_setting('memstore.namespace_id') AS ns,"
                " current_setting('hnsw.ef_search') AS ef, %(x)s::int AS x"
            ),
            {"x": 7},
            settings={"hnsw.ef_search": "99"},
        )
        assert rows == [{"ns": str(alone.id), "ef": "99", "x": 7}]
    with engine.connect() as conn:  # the settings were the transaction's only
        raw = conn.connection.driver_connection
        assert raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert raw.execute("SHOW hnsw.ef_search").fetchone()[0] != "99"
        raw.rollback()


def _terminate_pooled_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as admin:
        return len(
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND backend_type = 'client backend'"
            ).fetchall()
        )


def test_a_connection_killed_while_idle_is_replaced_before_use(alone, database_url, monkeypatch):
    from memstore.db import engine as engine_module

    alone.recall("note", k=1)  # at least one pooled connection
    assert _terminate_pooled_connections(database_url) >= 1
    time.sleep(0.3)
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_S", 0.1)  # idle long enough: pinged
    assert len(alone.recall("note", k=3)) == 3


def test_a_connection_that_broke_mid_read_is_not_reused(alone, database_url):
    alone.recall("note", k=1)
    _terminate_pooled_connections(database_url)
    # Used within the idle window, so not pinged: this read meets the dead
    # socket and says so; the broken connection leaves the pool.
    with pytest.raises(DatabaseUnavailableError, match="connection"):
        alone.recall("note", k=1)
    assert len(alone.recall("note", k=3)) == 3


# --- document counts of common terms, kept between recalls ----------------------------

COMMON = CACHED_DF_MIN + 20


@pytest.fixture(scope="module")
def wordy(database_url):
    """A namespace where "harbour" is common (COMMON documents) and "lighthouse" rare (3)."""
    store = MemoryStore.open(database_url, embedder=EMBEDDER)
    ns = store.namespace("wordy")
    ns.remember_many([f"harbour log entry {i}" for i in range(COMMON)])
    ns.remember_many([f"the lighthouse by the harbour, visit {i}" for i in range(3)])
    yield ns
    store.close()


def _scores(ns):
    return [(h.node.id, h.score) for h in ns.recall("harbours and lighthouses", mode="lexical")]


def _afresh(ns, terms=None):
    """Read the namespace's statistics again, with ``terms`` (default: estimated anew)."""
    ns._recall.cached_stats = None
    ns._recall.term_counts = terms if terms is not None else TermCounts()


def _counted_scores(ns):
    """The scores with every term counted by the statement (no count offered)."""
    _afresh(ns, TermCounts(documents=10**9))  # "current": nothing sampled, nothing cached yet
    scores = _scores(ns)
    _afresh(ns)
    return scores


def test_a_common_terms_count_is_sampled_and_reused_with_the_same_ranking(wordy):
    counted = _counted_scores(wordy)
    _afresh(wordy)
    wordy._recall.common_terms(wordy._recall.stats())  # sampled: the whole namespace, it is small
    assert wordy._recall.term_counts.offered("harbours") == (["harbour"], [COMMON + 3])
    assert wordy._recall.term_counts.offered("lighthouses") == ([], [])  # rare: counting is cheap
    assert _scores(wordy) == counted
    # The statement takes the offered count: a wrong one changes the scores...
    wordy._recall.term_counts.learn({"harbour": 1})
    assert _scores(wordy) != counted
    # ...until the counts are estimated again.
    _afresh(wordy)
    assert _scores(wordy) == counted


def test_a_common_terms_count_is_kept_until_the_namespace_grows(wordy):
    _afresh(wordy)
    wordy._recall.common_terms(wordy._recall.stats())
    documents = wordy._recall.term_counts.documents
    assert documents == COMMON + 3
    wordy._recall.term_counts.learn({"harbour": 1})
    wordy._recall.cached_stats = None  # statistics read again, the namespace as it was: kept
    wordy._recall.common_terms(wordy._recall.stats())
    assert wordy._recall.term_counts.offered("harbour") == (["harbour"], [1])
    assert wordy._recall.term_counts.current_for(documents)
    assert not wordy._recall.term_counts.current_for(math.ceil(documents * REFRESH_GROWTH))


def test_an_offered_count_never_replaces_another_terms(wordy):
    counted = _counted_scores(wordy)
    _afresh(wordy)
    wordy._recall.common_terms(wordy._recall.stats())
    # "harbou" begins "harbours" but is not one of the query's lexemes: unused.
    wordy._recall.term_counts.learn({"harbou": 1, "lighthous": 10_000})
    assert _scores(wordy) != counted  # the real lexeme "lighthous" took its (wrong) count
    _afresh(wordy)
    wordy._recall.common_terms(wordy._recall.stats())
    wordy._recall.term_counts.learn({"harbou": 1})
    assert _scores(wordy) == counted


def test_a_big_namespaces_common_terms_are_estimated_from_a_sample(database_url):
    """Beyond TERM_SAMPLE documents only a sample is read: estimates near the counts."""
    store = MemoryStore.open(database_url, embedder=EMBEDDER)
    ns = store.namespace("sampled terms")
    size = TERM_SAMPLE * 2
    ns.remember_many(
        [
            f"entry {i} {'ferry' if i % 4 == 0 else 'quay'} {'barge' if i % 40 == 0 else ''}"
            for i in range(size)
        ]
    )
    ns._recall.common_terms(ns._recall.stats())
    assert ns._recall.term_counts.documents == size
    (ferry,), (estimate,) = ns._recall.term_counts.offered("ferry")
    assert ferry == "ferri" and abs(estimate - size / 4) <= 0.3 * size / 4
    assert ns._recall.term_counts.offered("barge") == (
        [],
        [],
    )  # in 100 documents: counted when asked
    store.close()


# --- prepared statements ----------------------------------------------------------------


@pytest.mark.parametrize("prepared", [True, False])
def test_recall_is_prepared_on_the_connection_only_when_the_settings_say_so(database_url, prepared):
    settings = Settings(database_url=database_url, prepared_statements=prepared)
    with MemoryStore.open(settings=settings, embedder=EMBEDDER) as store:
        ns = store.namespace(f"prepared-{prepared}")
        ns.remember("a note on harbours")
        for mode in ("semantic", "hybrid"):
            assert [h.node.content for h in ns.recall("harbour", k=1, mode=mode)] == [
                "a note on harbours"
            ]
        assert ns.recall_context("harbour").items()
        with store.engine.connect() as conn:  # the pool's one connection: the one used
            statements = (
                conn.exec_driver_sql("SELECT statement FROM pg_prepared_statements").scalars().all()
            )
    recalls = [s for s in statements if "semantic_ranked" in s]
    tier_reads = [s for s in statements if "'scratchpad' AS section" in s]
    if prepared:
        assert len(recalls) >= 2 and len(tier_reads) == 1
    else:
        assert statements == []


def test_bm25s_average_length_comes_from_the_newest_documents(store, monkeypatch):
    from memstore.graph import rows

    ns = store.namespace("average-length")
    for text in ("one two three four five six", "alpha", "beta gamma"):  # in this order
        ns.remember(text)
    monkeypatch.setattr(rows, "AVG_LENGTH_SAMPLE", 2)
    with ns.connection() as conn:
        stats = rows.namespace_stats(conn, ns.id, store.embedder.name)
    assert (stats.documents, stats.vectors) == (3, 3)
    assert stats.avg_length == pytest.approx(1.5)  # "alpha", "beta gamma"
