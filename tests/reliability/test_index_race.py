"""Concurrent first bulk loads race to build a model's HNSW index: one builds it, none fails."""

from __future__ import annotations

import threading
import uuid

from memstore import MemoryStore
from memstore.embedding import cache

WRITERS = 6


def _race(store: MemoryStore, model: str) -> tuple[list[bool], list[BaseException]]:
    """WRITERS threads call ensure_index for ``model`` at once."""
    barrier = threading.Barrier(WRITERS)
    built: list[bool] = []
    failed: list[BaseException] = []

    def build() -> None:
        barrier.wait()
        try:
            built.append(cache.ensure_index(store.engine, model, 8))
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=build) for _ in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return built, failed


def test_concurrent_ensure_index_builds_once_and_never_fails(store):
    for _ in range(5):  # the window is small: give the race a few chances
        model = f"race-{uuid.uuid4().hex[:8]}"
        built, failed = _race(store, model)
        assert failed == []
        assert built.count(True) == 1
        with store.transaction() as conn:
            assert cache.index_exists(conn, model, 8)


def test_an_index_build_never_lowers_the_operators_build_memory(store):
    import psycopg

    url = store.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url) as conn:
        for given, used in (("64MB", "512MB"), ("2GB", "2GB")):
            with conn.transaction():
                conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (given,))
                cache.raise_build_memory(conn)
                assert conn.execute("SHOW maintenance_work_mem").fetchone() == (used,)
