"""A downgrade loses no memory by accident (the review of stop 28).

"Nothing is lost: no code path can hard-delete a memory" — yet ``memstore db
downgrade base`` dropped every table with its rows, and a downgrade past revision
0022 dropped every memory's tags, without a word. Now a downgrade that would drop a
table holding rows, or a column of one, is rolled back whole and refused unless the
operator says ``--drop-data``; a rollback that drops only code and empty tables runs
as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstore import MemoryStore
from memstore.db import migrate
from memstore.db.engine import create_engine
from memstore.embedding import HashingEmbedder
from memstore.errors import ImmutableRecordError

MEMSTORE = str(Path(sys.executable).with_name("memstore"))


def _revision(url: str) -> str | None:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return migrate.current_revision(conn)
    finally:
        engine.dispose()


@pytest.fixture
def holding(make_database) -> str:
    """A database at head holding one tagged memory."""
    url: str = make_database()
    with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
        store.namespace("kept").remember("a memory that must survive", tags=["t"])
    return url


@pytest.mark.parametrize(
    ("target", "named"),
    [("base", "table nodes"), ("0021", "nodes.tags")],
)
def test_a_downgrade_that_drops_data_is_refused_and_changes_nothing(holding, target, named):
    engine = create_engine(holding)
    try:
        with pytest.raises(ImmutableRecordError, match=f"would drop data: .*{named}"):
            migrate.downgrade(engine, target)
    finally:
        engine.dispose()
    assert _revision(holding) == migrate.head_revision()
    with MemoryStore.open(holding, embedder=HashingEmbedder()) as store:
        (memory,) = store.namespace("kept").list_memories().items
        assert memory.tags == ["t"]


def test_a_rollback_that_drops_only_empty_tables_runs(holding):
    engine = create_engine(holding)
    try:
        migrate.downgrade(engine, "0024")  # 0025's tables hold no row here
        assert _revision(holding) == "0024"
        migrate.upgrade(engine)
    finally:
        engine.dispose()
    with MemoryStore.open(holding, embedder=HashingEmbedder()) as store:
        assert [m.content for m in store.namespace("kept").list_memories().items] == [
            "a memory that must survive"
        ]


def test_the_cli_refuses_in_one_line_and_drop_data_goes_ahead(holding):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    environment["MEMSTORE_DATABASE_URL"] = holding

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [MEMSTORE, "db", "downgrade", *args],
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    refused = run("base")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "would drop data" in refused.stderr and "--drop-data" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert _revision(holding) == migrate.head_revision()
    done = run("base", "--drop-data")
    assert done.returncode == 0, done.stderr
    assert _revision(holding) is None
