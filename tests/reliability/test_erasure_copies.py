"""Copies of an erased memory's words outside the tables memstore controls (the review of
stop 28): an export taken after the erasure, a context packet built after it, and the
process's own caches of hashed words. docs/security.md ("Erasure") lists the rest.
"""

from __future__ import annotations

import io
import json
import uuid

from memstore.embedding import hashing

SECRET = "zqxerasedcopy"


def test_after_an_erasure_no_export_packet_or_word_cache_holds_its_words(store):
    ns = store.namespace(f"copies-{uuid.uuid4().hex[:8]}")
    erased = ns.remember(f"{SECRET} lives on harbour street", tags=[f"{SECRET}-tag"])
    ns.remember("the harbour opens at dawn")
    ns.activate("harbour street", session_id=f"{SECRET}-session")
    assert hashing._word_buckets.cache_info().currsize > 0

    ns.redact(erased.id, reason="erasure request", actor="dpo")

    # The process kept every hashed word (the hashing embedder's caches): emptied.
    assert hashing._word_buckets.cache_info().currsize == 0
    assert hashing._signed_bucket.cache_info().currsize == 0
    exported = io.BytesIO()
    ns.export(exported, with_vectors=True)
    assert SECRET.encode() not in exported.getvalue()
    # How an operator tells a file that holds the erasure (docs/security.md): by its line.
    lines = [json.loads(line) for line in exported.getvalue().splitlines()]
    (line,) = [x for x in lines if x.get("t") == "node" and x.get("id") == erased.id]
    assert line["node_type"] == "Redacted"
    packet = ns.recall_context("harbour street", budget_tokens=2000)
    assert SECRET not in packet.render()
    assert SECRET not in repr(packet)
