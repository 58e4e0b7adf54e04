"""Restores racing each other into one namespace (the review of stop 28: held).

A restore rebuilds only into an empty namespace. Were two restores of one name at
once both to see it empty, both would load: the second would fail on a unique index
with the database's raw error or — files of different memories — both would commit
a mix that neither file holds. A restore holds the namespace's exclusive lineage
lock before it looks (memstore/graph/export.py, begin_restore), and a new name's
row is unique: the second waits, then is refused with NamespaceNotEmptyError.
"""

from __future__ import annotations

import io
import threading
import uuid
from typing import Any

import pytest

from memstore.embedding import HashingEmbedder
from memstore.errors import DatabaseError, NamespaceNotEmptyError
from memstore.store import MemoryStore


def _export(store: MemoryStore, contents: list[str]) -> bytes:
    ns = store.namespace(f"source-{uuid.uuid4().hex[:8]}")
    for content in contents:
        ns.remember(content)
    out = io.BytesIO()
    ns.export(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("files", "existing"),
    [("the same file", False), ("two files", True)],
    ids=["same file, new name", "two files, empty namespace"],
)
def test_two_restores_into_one_name_restore_one_file(database_url, files, existing):
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        first = _export(store, [f"first file memory {i}" for i in range(300)])
        second = (
            first
            if files == "the same file"
            else _export(store, [f"second file memory {i}" for i in range(300)])
        )
    target = f"restored-{uuid.uuid4().hex[:8]}"
    if existing:
        with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
            with store.namespace(target).transaction():
                pass  # a transaction that wrote nothing leaves the namespace, empty
            assert store.namespace(target).exists()
    barrier = threading.Barrier(2)
    outcomes: list[Any] = [None, None]

    def restore(i: int, data: bytes) -> None:
        with MemoryStore.open(database_url, embedder=HashingEmbedder()) as own:
            barrier.wait()
            try:
                outcomes[i] = own.restore(io.BytesIO(data), namespace=target)
            except Exception as exc:  # judged below
                outcomes[i] = exc

    threads = [threading.Thread(target=restore, args=(i, d)) for i, d in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    failures = [o for o in outcomes if isinstance(o, Exception)]
    assert len(failures) == 1, outcomes
    assert isinstance(failures[0], NamespaceNotEmptyError), repr(failures[0])
    assert not isinstance(failures[0], DatabaseError)
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        contents = {
            node.content for node in store.namespace(target).list_memories(limit=1000).items
        }
    assert len(contents) == 300
    assert len({c.split(" file")[0] for c in contents}) == 1, "a mix of both files"
