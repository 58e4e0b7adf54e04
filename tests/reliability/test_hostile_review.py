"""A hostile review of issue 17's trust work: cases the first review did not name.

Each test here was written failing, against the merged work, before its fix.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence

import psycopg
import pytest

from memstore.config import Settings
from memstore.embedding import cache
from memstore.embedding.base import Vectors
from memstore.embedding.hashing import HashingEmbedder
from memstore.errors import MemstoreError, ProposalNotFoundError
from memstore.store import MemoryStore
from tests.proposals import propose

WAIT = 60.0  # seconds: generous, the machine is shared; a pass never waits this long


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.02)


class RacingEmbedder(HashingEmbedder):
    """A second model (so a rebuild has work) that runs ``hook`` once while it embeds."""

    def __init__(self, hook: Callable[[], None]) -> None:
        super().__init__(dims=32)
        self.hook: Callable[[], None] | None = hook

    @property
    def name(self) -> str:
        return "racing-32-v1"

    def embed(self, texts: Sequence[str]) -> Vectors:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return super().embed(texts)


def vectors_of(database_url: str, node_id: int) -> list[tuple[str, bytes]]:
    """Every cached vector of ``node_id`` (any model), read past row-level security."""
    with psycopg.connect(database_url) as conn:
        return [
            (str(model), bytes(source_hash))
            for model, source_hash in conn.execute(
                "SELECT model, source_hash FROM memstore.embeddings WHERE node_id = %s",
                (node_id,),
            ).fetchall()
        ]


def test_a_rebuild_that_read_a_memory_before_its_erasure_stores_no_vector_of_it(
    store, database_url
):
    """A rebuild reads a memory's text, the memory is erased and committed, then the
    rebuild writes: the vector (and the plain sha256 of the erased text it carries as
    source_hash) must not land in the cache of an erased memory."""
    name = f"race-{uuid.uuid4().hex[:8]}"
    memory = store.namespace(name).remember("zqxembedrace the erased words").id

    def redact_now() -> None:
        store.namespace(name).redact(memory, reason="request")

    with MemoryStore.open(database_url, embedder=RacingEmbedder(redact_now)) as racing:
        racing.namespace(name).rebuild_embeddings()
    assert vectors_of(database_url, memory) == []


def test_an_erasure_waits_for_a_vector_written_before_it_and_deletes_it(store, database_url):
    """The other order: the vector is written (not yet committed) before the erasure
    starts; the erasure must see it and delete it rather than pass it by."""
    ns = store.namespace(f"race-{uuid.uuid4().hex[:8]}")
    memory = ns.remember("zqxembedrace2 the erased words").id
    embedder = HashingEmbedder(dims=16)
    text = "zqxembedrace2 the erased words"
    outcome: dict[str, BaseException | None] = {}

    def redact() -> None:
        try:
            ns.redact(memory, reason="request")
            outcome["error"] = None
        except BaseException as exc:  # reported below
            outcome["error"] = exc

    with ns.connection() as conn:
        cache.upsert_vectors(conn, ns.id, embedder.name, [memory], [text], embedder.embed([text]))
        thread = threading.Thread(target=redact, daemon=True)
        thread.start()
        # Either the erasure finishes (and so passed the uncommitted vector by) or it
        # waits for this transaction: both are seen before this one commits.
        wait_until(
            lambda: not thread.is_alive() or waiting_on_a_lock(database_url),
            "the erasure finished or waits",
        )
    thread.join(WAIT)
    assert outcome.get("error") is None
    assert vectors_of(database_url, memory) == []


def waiting_on_a_lock(database_url: str) -> bool:
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


# --- the review queue under a privacy ceiling ---------------------------------------------

SECRET = "zqxreviewsecret"


def _anatomy(claim: str) -> dict[str, object]:
    return {
        "target": "self",
        "claim_or_question": claim,
        "tension": "t",
        "action_implication": "a",
        "anchors": ["turn:1"],
    }


def test_a_proposal_about_a_secret_is_hidden_from_a_reviewer_under_a_lower_ceiling(store):
    """Proposals carry no privacy level of their own, but one that names a privacy-3
    memory (its id) or carries privacy-3 content is as secret as that memory: under
    ceiling 0 the review queue neither lists it nor finds it by id (the same error as
    a proposal that does not exist)."""
    ns = store.namespace(f"review-{uuid.uuid4().hex[:8]}")
    public = ns.remember("the harbour opens at dawn").id
    secret = ns.remember(f"{SECRET} vault code 7731", privacy=3).id
    about_secret = propose(ns, {"op": "forget", "target_id": secret, "reason": "old"})
    secret_words = propose(
        ns,
        {
            "op": "record_short_term",
            "anatomy": _anatomy(f"{SECRET} the vault"),
            "content": f"{SECRET} the vault opens with 7731",
            "privacy": 3,
        },
    )
    visible = propose(ns, {"op": "forget", "target_id": public, "reason": "old"})

    assert {p.id for p in ns.review.pending(privacy_ceiling=3)} == {
        about_secret,
        secret_words,
        visible,
    }
    listed = ns.review.pending(privacy_ceiling=0)
    assert [p.id for p in listed] == [visible]
    assert SECRET not in repr(listed)
    missing = 2**40
    with pytest.raises(ProposalNotFoundError) as nothing:
        ns.review.get(missing, privacy_ceiling=0)
    for hidden in (about_secret, secret_words):
        with pytest.raises(ProposalNotFoundError) as caught:
            ns.review.get(hidden, privacy_ceiling=0)
        assert str(caught.value) == str(nothing.value).replace(str(missing), str(hidden))
    assert ns.review.get(visible, privacy_ceiling=0).id == visible


def test_a_proposal_hidden_by_the_ceiling_is_decided_like_a_missing_one(database_url):
    """Accepting or rejecting a hidden proposal under ceiling 0 is refused exactly as
    deciding a proposal that does not exist, and leaves it pending."""
    name = f"review-{uuid.uuid4().hex[:8]}"
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        ns = store.namespace(name)
        secret = ns.remember(f"{SECRET} second vault", privacy=3).id
        hidden = propose(ns, {"op": "forget", "target_id": secret, "reason": "old"})
    low = Settings(privacy_ceiling=0)
    with MemoryStore.open(database_url, embedder=HashingEmbedder(), settings=low) as store:
        ns = store.namespace(name)
        missing = 2**40
        for decide in (
            lambda i: ns.review.accept(i, reviewer="bob"),
            lambda i: ns.review.reject(i, reviewer="bob", reason="no"),
        ):
            with pytest.raises(MemstoreError) as nothing:
                decide(missing)
            with pytest.raises(type(nothing.value)) as caught:
                decide(hidden)
            assert str(caught.value) == str(nothing.value).replace(str(missing), str(hidden))
        for op in (
            {"op": "accept_proposal"},
            {"op": "reject_proposal", "reason": "no"},
        ):
            reasons = [
                ns.apply([{**op, "proposal_id": i}], phase="review", actor="bob", atomic=False)
                .results[0]
                .reason
                for i in (missing, hidden)
            ]
            assert reasons[1] == (reasons[0] or "").replace(str(missing), str(hidden))
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        assert store.namespace(name).review.get(hidden).status == "pending"


# --- erasure: the audit log's digests of the erased words ---------------------------------


def test_no_plain_digest_of_erased_words_survives_in_a_log_row_that_names_no_version(
    store, database_url
):
    """The log keeps an operation's texts as plain sha256 digests, and an erasure blanks
    the rows that name an erased version. A rejected operation that carried the same
    words names no version (it wrote nothing): its digest of the erased text must not
    survive the erasure, nor may an unparsed operation's digest of its raw text."""
    ns = store.namespace(f"digest-{uuid.uuid4().hex[:8]}")
    words = "zqxdigest Maya's door code is 7731"
    memory = ns.remember(words, label="zqxdigest-label").id
    for op in (
        {"op": "record_short_term", "anatomy": _anatomy(words), "content": words},
        {"op": "remember", "content": words, "label": "zqxdigest-label"},
    ):
        rejected = ns.apply([op], phase="sleep", actor="agent", atomic=False)
        assert rejected.results[0].outcome == "rejected"
    unparsed = ns.apply(
        [{"op": "remember", "content": words, "unknown": 1}], phase="wake", atomic=False
    )
    assert unparsed.results[0].outcome == "rejected"
    ns.redact(memory, reason="request")

    digests = [
        hashlib.sha256(text.encode()).hexdigest()
        for text in (
            words,
            "zqxdigest-label",
            json.dumps({"op": "remember", "content": words, "unknown": 1}, sort_keys=True),
        )
    ]
    with psycopg.connect(database_url) as conn:
        logged = [
            str(row[0])
            for row in conn.execute(
                "SELECT payload::text || ' ' || receipt::text FROM memstore.operations o"
                " JOIN memstore.namespaces s ON s.id = o.namespace_id WHERE s.name = %s",
                (ns.name,),
            )
        ]
    assert len(logged) == 3
    for row in logged:
        assert "zqxdigest" not in row
        for digest in digests:
            assert digest not in row


def test_an_activation_logged_after_an_erasure_keeps_no_session_id_of_it(store, database_url):
    """An activation with learn=True reads its working memory, then logs it. If the
    memory is erased in between, the log row arrives after the erasure hashed the
    session ids that reached it: it must not record the session's id in plain on the
    erased version (the learning statement of memstore/activation/learning.sql, run
    as the service runs it, after the erasure committed)."""
    ns = store.namespace(f"access-{uuid.uuid4().hex[:8]}")
    memory = ns.remember("zqxaccess the erased words").id
    ns.redact(memory, reason="request")
    with ns.connection() as conn:
        conn.exec_driver_sql(
            "INSERT INTO memstore.activations (namespace_id, node_id, session_id, strength)"
            " VALUES (%(ns)s, %(id)s, 'zqxsession-secret', 0.5)",
            {"ns": ns.id, "id": memory},
        )
    with psycopg.connect(database_url) as conn:
        sessions = [
            row[0]
            for row in conn.execute(
                "SELECT session_id FROM memstore.activations WHERE node_id = %s"
                " AND namespace_id = (SELECT id FROM memstore.namespaces WHERE name = %s)",
                (memory, ns.name),
            )
        ]
    assert "zqxsession-secret" not in sessions


# --- namespaces are not created by a write that writes nothing -----------------------------


def test_a_sleep_or_clear_of_a_namespace_never_written_to_creates_nothing(store, database_url):
    """A sleep with nothing to consolidate, a clear with nothing to retire, write
    nothing: like an empty apply, they must not create the namespace they name
    (memstore sleep -n NEW created one, and so did clear)."""
    name = f"never-{uuid.uuid4().hex[:8]}"
    receipt = store.namespace(name).sleep()
    assert receipt.results == []
    assert store.namespace(name).sleep(ops=[]).results == []
    assert store.namespace(name).clear(reason="start over") == 0
    with psycopg.connect(database_url) as conn:
        found = conn.execute("SELECT count(*) FROM memstore.namespaces WHERE name = %s", (name,))
        assert found.fetchone() == (0,)
