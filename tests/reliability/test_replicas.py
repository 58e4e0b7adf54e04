"""Reads from a real streaming replica: two servers from the embedded wheel's binaries, the
second a ``pg_basebackup -R`` of the first (memstore/db/replicas.py, docs/operations.md)."""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore import MemoryStore
from memstore.config import Settings
from memstore.db import migrate
from memstore.db.engine import create_engine
from memstore.embedding import HashingEmbedder
from memstore.errors import NotFoundError
from tests.servers import Server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Server, Server]]:
    """A primary with the schema at head and its streaming replica."""
    root = Path(tempfile.mkdtemp(prefix="memstore-replicas-"))
    root.chmod(0o755)  # the servers may run as another user (see tests/servers.py)
    primary = Server(root / "primary", root / "sockets")
    replica = Server(root / "replica", root / "sockets")
    try:
        primary.initdb().start()
        primary.execute("CREATE DATABASE memstore")
        engine = create_engine(primary.url("memstore"))
        try:
            migrate.upgrade(engine)
        finally:
            engine.dispose()
        replica.base_backup_of(primary).start("hot_standby=on")
        yield primary, replica
    finally:
        for server in (replica, primary):
            try:
                server.stop("immediate")
            except Exception:
                pass
        shutil.rmtree(root, ignore_errors=True)


def open_store(pair: tuple[Server, Server], **settings: object) -> MemoryStore:
    primary, replica = pair
    return MemoryStore.open(
        primary.url("memstore"),
        read_url=[replica.url("memstore")],
        embedder=HashingEmbedder(),
        settings=Settings(**settings),  # type: ignore[arg-type]
    )


def replica_reads(store: MemoryStore) -> int:
    """How many reads the store's replica has served."""
    assert store._reads is not None
    return store._reads.replicas[0].reads


def primary_reads(store: MemoryStore) -> int:
    """How many reads went to the primary because the replica would not do."""
    assert store._reads is not None
    return store._reads.primary_reads


def wait_for_replay(pair: tuple[Server, Server]) -> None:
    primary, replica = pair
    (lsn,) = primary.execute("SELECT pg_current_wal_lsn()::text")[0]
    for _ in range(200):
        (done,) = replica.execute(
            f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn", "memstore"
        )[0]
        if done:
            return
        time.sleep(0.05)
    raise AssertionError("the replica did not catch up in 10 s")


def test_every_read_verb_runs_on_the_replica(pair):
    with open_store(pair) as store:
        ns = store.namespace(f"replica-{uuid.uuid4().hex[:8]}")
        a = ns.remember("Alice lives in Lisbon", kind="semantic")
        b = ns.remember("Alice likes green tea")
        a2 = ns.revise(a.id, "Alice lives in Porto", reason="moved")
        ns.link(a2.id, b.id, relation="related", weight=0.7)
        ns.scratchpad.pin("city", "Porto")
        lesson = ns.lessons.add("check the city before booking", source="test", confidence=0.9)
        ns.timeline.ingest_turn("user", "hello from Alice", "s1")
        wait_for_replay(pair)
        before, on_primary = replica_reads(store), primary_reads(store)
        for mode in ("semantic", "lexical", "hybrid"):
            assert ns.recall("where does Alice live", mode=mode)
        assert ns.activate("Alice").working_memory
        assert ns.activate(seeds=[a2.id]).working_memory
        assert ns.recall_context("where does Alice live", 500).sections
        assert ns.get(a2.id).content == "Alice lives in Porto"
        assert [n.id for n in ns.lineage(a2.id)] == [a.id, a2.id]
        assert ns.list_memories().items
        pinned = ns.scratchpad.get("city")
        assert pinned is not None and pinned.content == "city: Porto"
        assert ns.lessons.get(lesson.id).id == lesson.id
        assert ns.timeline.recent(5, session_id="s1")
        assert replica_reads(store) - before >= 12  # and the recall's statistics
        assert primary_reads(store) == on_primary
        # Learning writes: an activation that learns runs on the primary.
        before = replica_reads(store)
        ns.activate("Alice", learn=True)
        assert replica_reads(store) == before


def test_a_store_reads_its_own_writes_while_the_replica_lags(pair):
    _, replica = pair
    with open_store(pair) as store, open_store(pair, stale_ok=True, max_replica_lag=600) as stale:
        ns = store.namespace(f"ryw-{uuid.uuid4().hex[:8]}")
        ns.remember("the first memory")
        wait_for_replay(pair)
        stale.namespace(ns.name).recall("first")  # the stale store knows the namespace
        replica.execute("SELECT pg_wal_replay_pause()", "memstore")
        try:
            before, on_primary = replica_reads(store), primary_reads(store)
            fresh = ns.remember("written while the replica is paused")
            assert ns.get(fresh.id).content == "written while the replica is paused"
            assert ns.recall("paused")[0].node.id == fresh.id
            assert primary_reads(store) >= on_primary + 2  # (and the statistics)
            # The replica has not replayed the write: the primary answered.
            assert replica_reads(store) == before
            # A store that accepts stale reads does not wait for the replay.
            with pytest.raises(NotFoundError):
                stale.namespace(ns.name).get(fresh.id)
        finally:
            replica.execute("SELECT pg_wal_replay_resume()", "memstore")
        wait_for_replay(pair)
        assert ns.get(fresh.id).id == fresh.id
        assert replica_reads(store) == before + 1  # caught up: reads are back on the replica


def test_a_replica_that_lags_too_far_is_skipped_with_a_warning(pair):
    _, replica = pair
    with open_store(pair, stale_ok=True, max_replica_lag=0.3) as store:
        ns = store.namespace(f"lag-{uuid.uuid4().hex[:8]}")
        ns.remember("before the pause")
        wait_for_replay(pair)
        replica.execute("SELECT pg_wal_replay_pause()", "memstore")
        try:
            fresh = ns.remember("after the pause")
            time.sleep(1.2)  # older than the allowed lag, and past the router's recheck
            with pytest.warns(RuntimeWarning, match="lags"):
                assert ns.get(fresh.id).content == "after the pause"
        finally:
            replica.execute("SELECT pg_wal_replay_resume()", "memstore")


def test_reads_survive_a_replica_that_goes_down(pair):
    _, replica = pair
    with open_store(pair) as store:
        ns = store.namespace(f"down-{uuid.uuid4().hex[:8]}")
        kept = ns.remember("still readable without the replica")
        wait_for_replay(pair)
        assert ns.recall("readable")
        replica.stop("immediate")
        try:
            with pytest.warns(RuntimeWarning, match="replica"):
                assert ns.get(kept.id).id == kept.id
                assert ns.recall("readable")[0].node.id == kept.id
                assert ns.recall_context("readable", 300).sections
        finally:
            replica.start("hot_standby=on")
