"""Lineage that concurrency cannot corrupt (issue 17 §3).

Revise, link, forget, redact and cultivate on one memory are serialised by the
lineage locks (memstore/graph/locks.py), taken before the status check.

The pairwise tests interleave two real connections deterministically: the
first verb is paused between its check and its write (a SQLAlchemy
``before_cursor_execute`` hook on the store's engine, which only the test
installs), the second is started and must be seen waiting on a lineage lock
in ``pg_locks``, then the first commits and the second either fails with the
error that says what became of the memory or succeeds consistently. Without
the locks the second would not wait: it would pass its check and write, and
the first would then write over a status it no longer has.

The stress test runs the verbs from several threads on a few memories and
checks the invariants afterwards.
"""

from __future__ import annotations

import random
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy import event

from memstore.errors import (
    DatabaseError,
    MemstoreError,
    NodeRedactedError,
    NodeSupersededError,
    NodeTombstonedError,
    ProtectedNodeError,
    RedactionError,
    TombstoneError,
)
from memstore.namespace import Namespace

VERBS = ("revise", "link", "forget", "redact", "cultivate")
WAIT = 60.0  # seconds: generous, the machine is shared; a pass never waits this long

# The statements that write a lineage change: the pause point of the first verb.
LINEAGE_WRITE = re.compile(
    r"INSERT INTO memstore\.(supersessions|tombstones|edges)\b|memstore\.redact\w*\(",
    re.IGNORECASE,
)


def anatomy(target: str) -> dict[str, Any]:
    return {
        "target": target,
        "claim_or_question": "who I am",
        "tension": "t",
        "action_implication": "a",
        "anchors": ["turn:1"],
    }


def protected_memory(ns: Namespace, text: str) -> int:
    """A protected identity node, the lawful way (a proposal accepted by review)."""
    crystallize = {"op": "crystallize_identity", "anatomy": anatomy("self"), "content": text}
    proposed = ns.apply(
        [{"op": "propose", "operation": crystallize, "rationale": "r", "evidence": ["turn:3"]}],
        phase="wake",
        actor="agent",
    )
    proposal = proposed.results[0].proposal_id
    assert proposal is not None
    return ns.review.accept(proposal, reviewer="alice").results[0].nodes[0]


def run_verb(ns: Namespace, verb: str, memory: int, other: int, tag: str) -> object:
    """One verb on ``memory`` (in its own transaction, as an application calls it)."""
    if verb == "revise":
        return ns.revise(memory, f"revised by {tag}", reason=f"race {tag}")
    if verb == "link":
        return ns.link(memory, other, relation=f"rel_{tag}")
    if verb == "forget":
        return ns.forget(memory, reason=f"race {tag}")
    if verb == "redact":
        return ns.redact(memory, reason=f"race {tag}")
    if verb == "cultivate":
        return ns.cultivate(memory, f"cultivated by {tag}", reason=f"race {tag}", actor="alice")
    raise AssertionError(verb)


class Pause:
    """Holds one thread just before its first lineage write, until released."""

    def __init__(self, engine: Any):
        self.engine = engine
        self.thread: threading.Thread | None = None
        self.reached = threading.Event()
        self.release = threading.Event()

    def hook(self, conn, cursor, statement, parameters, context, executemany):
        if threading.current_thread() is self.thread and not self.reached.is_set():
            if LINEAGE_WRITE.search(statement):
                self.reached.set()
                assert self.release.wait(WAIT), "the test never released the paused writer"

    def __enter__(self) -> Pause:
        event.listen(self.engine, "before_cursor_execute", self.hook)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        event.remove(self.engine, "before_cursor_execute", self.hook)


@dataclass
class Outcome:
    result: object = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


def start(target: Callable[[], object]) -> tuple[threading.Thread, Outcome]:
    outcome = Outcome()

    def run() -> None:
        try:
            outcome.result = target()
        except BaseException as exc:
            outcome.error = exc
        finally:
            outcome.done.set()

    thread = threading.Thread(target=run, daemon=True)
    return thread, outcome


def waiting_on_lineage_lock(database_url: str) -> bool:
    """Whether some session of this database waits for an advisory lock."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE d.datname = current_database() AND l.locktype = 'advisory'"
            " AND NOT l.granted"
        ).fetchone()
    return bool(row and row[0])


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.02)


# What the second verb does once the first has committed: None = succeeds.
SECOND_AFTER: dict[str, dict[str, type[MemstoreError] | None]] = {
    "revise": {
        "revise": NodeSupersededError,
        "link": NodeSupersededError,
        "forget": NodeSupersededError,
        "redact": None,
        "cultivate": NodeSupersededError,
    },
    "link": {"revise": None, "link": None, "forget": None, "redact": None, "cultivate": None},
    "forget": {
        "revise": NodeTombstonedError,
        "link": NodeTombstonedError,
        "forget": TombstoneError,
        "redact": None,
        "cultivate": NodeTombstonedError,
    },
    "redact": {
        "revise": NodeRedactedError,
        "link": NodeTombstonedError,  # "node N is redacted: it cannot be linked"
        "forget": None,  # a tombstone on an erased memory hides nothing more
        "redact": RedactionError,
        "cultivate": NodeRedactedError,
    },
    "cultivate": {
        "revise": NodeSupersededError,
        "link": NodeSupersededError,
        "forget": NodeSupersededError,
        "redact": None,
        "cultivate": NodeSupersededError,
    },
}


@pytest.fixture(scope="module")
def lineage_redaction(store) -> bool:
    """Whether ns.redact erases every version of a lineage (issue 17 §2, another branch).

    With it, "no erased field in any version" holds after any interleaving;
    without it, redacting an old version leaves its newer versions alone by
    design, so that invariant is only checked when this is True.
    """
    ns = store.namespace(f"probe-{uuid.uuid4().hex[:8]}")
    old = ns.remember("probe v1", label="probe-label")
    ns.revise(old.id, "probe v2", reason="probe")
    ns.redact(old.id, reason="probe")
    return all(node.status.value == "redacted" for node in ns.lineage(old.id))


def engine_of(ns: Namespace) -> Any:
    return ns._scope.engine


@pytest.mark.parametrize("second", VERBS)
@pytest.mark.parametrize("first", VERBS)
def test_two_writers_of_one_memory_are_serialised(
    store, database_url, lineage_redaction, first, second
):
    ns = store.namespace(f"race-{first}-{second}-{uuid.uuid4().hex[:6]}")
    protected = "cultivate" in (first, second)
    label = f"secret-label-{uuid.uuid4().hex[:8]}"
    if protected:
        memory = protected_memory(ns, f"I keep my word {label}")
    else:
        memory = ns.remember(f"Alice lives in Lisbon {label}", label=label, data={"k": label}).id
    other = ns.remember("a neighbour to link to").id

    if protected and first in ("revise", "forget"):
        # Refused before any write (protection is a fact of the node, not of a
        # race): the second verb then runs alone.
        with pytest.raises(ProtectedNodeError):
            run_verb(ns, first, memory, other, "first")
        if second in ("revise", "forget"):
            with pytest.raises(ProtectedNodeError):
                run_verb(ns, second, memory, other, "second")
        else:
            run_verb(ns, second, memory, other, "second")
        assert_invariants(ns, database_url, lineage_redaction)
        return

    with Pause(engine_of(ns)) as pause:
        one, first_outcome = start(lambda: run_verb(ns, first, memory, other, "first"))
        pause.thread = one
        one.start()
        wait_until(
            lambda: pause.reached.is_set() or first_outcome.done.is_set(),
            f"{first} reached its write",
        )
        assert first_outcome.error is None, first_outcome.error
        assert pause.reached.is_set()
        two, second_outcome = start(lambda: run_verb(ns, second, memory, other, "second"))
        two.start()
        # The second verb waits for the first's lineage lock: it cannot check
        # the memory's status while the first is between check and write.
        wait_until(
            lambda: waiting_on_lineage_lock(database_url) or second_outcome.done.is_set(),
            f"{second} waited for the lock",
        )
        assert not second_outcome.done.is_set(), (
            f"{second} finished while {first} was paused between its check and its write: "
            f"{second_outcome.result!r} {second_outcome.error!r}"
        )
        pause.release.set()
        one.join(WAIT)
        two.join(WAIT)
    assert first_outcome.error is None, first_outcome.error
    expected = SECOND_AFTER[first][second]
    if protected and second in ("revise", "forget") and expected is None:
        expected = ProtectedNodeError
    if expected is None:
        assert second_outcome.error is None, second_outcome.error
    else:
        assert isinstance(second_outcome.error, expected), second_outcome.error
        if isinstance(second_outcome.error, NodeSupersededError):
            current = ns.lineage(memory)[-1].id
            assert second_outcome.error.current_id == current
            assert f"current version is node {current}" in str(second_outcome.error)
    assert_invariants(ns, database_url, lineage_redaction)


# --- invariants ------------------------------------------------------------------------


def assert_invariants(
    ns: Namespace,
    database_url: str,
    lineage_redaction: bool,
    clocks: dict[tuple[str, int], list[datetime]] | None = None,
) -> None:
    """What no interleaving may leave behind in ``ns``.

    - no version is both superseded and tombstoned (a live successor of a
      forgotten memory, or a forgotten version behind a live one);
    - no redacted version has a successor written after the redaction (with
      ``clocks``), and with whole-lineage redaction every version of a lineage
      that holds a redacted version is redacted, its label and data gone;
    - no edge was written after a tombstone or redaction of either end, or
      into a version after it was superseded (with ``clocks``).
    """
    with psycopg.connect(database_url, autocommit=True) as conn:
        both = conn.execute(
            "SELECT s.old_id FROM memstore.supersessions s JOIN memstore.tombstones t"
            " ON t.namespace_id = s.namespace_id AND t.node_id = s.old_id"
            " WHERE s.namespace_id = %s",
            (ns.id,),
        ).fetchall()
        assert both == [], f"superseded and tombstoned: {both}"
        if lineage_redaction:
            rows = conn.execute(
                "SELECT r.node_id FROM memstore.redactions r WHERE r.namespace_id = %s",
                (ns.id,),
            ).fetchall()
            for (redacted,) in rows:
                for version in ns.lineage(redacted):
                    assert version.status.value == "redacted", (redacted, version.id)
    if clocks is None:
        return
    for (verb, node), times in clocks.items():
        if verb not in ("forget", "redact"):
            continue
        ended = min(times)
        for later in clocks.get(("link", node), []):
            assert later < ended, f"an edge of node {node} written after its {verb}"
        for later in clocks.get(("revise", node), []):
            assert later < ended, f"a successor of node {node} written after its {verb}"
    for (verb, node), times in clocks.items():
        if verb != "revise":
            continue
        for later in clocks.get(("link", node), []):
            assert later < min(times), f"an edge into node {node} after it was superseded"


# --- stress -----------------------------------------------------------------------------

THREADS = 4
OPS_PER_THREAD = 40
MEMORIES = 6
# Clean refusals: what became of the memory, or the lineage trigger's backstop.
CLEAN = (
    NodeSupersededError,
    NodeTombstonedError,
    NodeRedactedError,
    ProtectedNodeError,
    TombstoneError,
    RedactionError,
)


def test_writers_on_a_few_memories_leave_no_corrupt_lineage(store, database_url, lineage_redaction):
    ns = store.namespace(f"stress-{uuid.uuid4().hex[:8]}")
    roots = [
        ns.remember(f"memory {i}", label=f"label {i}", data={"i": i}).id for i in range(MEMORIES)
    ]
    known = list(roots)
    known_lock = threading.Lock()
    # (verb, node) -> the server's clock at the end of each successful write,
    # taken inside the transaction while its lineage locks are held.
    clocks: dict[tuple[str, int], list[datetime]] = {}
    failures: list[BaseException] = []
    log: list[tuple[object, ...]] = []  # printed when an invariant fails
    counts = {"ok": 0, "refused": 0, "deadlock": 0}

    def note(verb: str, node: int, clock: datetime) -> None:
        with known_lock:
            clocks.setdefault((verb, node), []).append(clock)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for i in range(OPS_PER_THREAD):
            with known_lock:
                node = rng.choice(known)
                other = rng.choice(known)
            verb = rng.choice(
                ("remember", "revise", "revise", "link", "link", "link", "forget", "redact")
            )
            try:
                if verb == "remember":
                    fresh = ns.remember(f"fresh {seed}-{i}", label=f"fresh {seed}").id
                    with known_lock:
                        known.append(fresh)
                    continue
                with ns.transaction() as tx:
                    if verb == "revise":
                        new = tx.revise(node, f"v{seed}-{i}", reason="stress").id
                    elif verb == "link":
                        if other == node:
                            continue
                        tx.link(node, other, relation="stress")
                    elif verb == "forget":
                        tx.forget(node, reason="stress")
                    else:
                        tx.redact(node, reason="stress")
                    clock = tx.conn.exec_driver_sql("SELECT clock_timestamp()").scalar_one()
                note(verb, node, clock)
                log.append((seed, verb, node, other, "ok", clock))
                if verb == "link":
                    note(verb, other, clock)
                if verb == "revise":
                    with known_lock:
                        known.append(new)
                with known_lock:
                    counts["ok"] += 1
            except CLEAN as exc:
                log.append((seed, verb, node, other, type(exc).__name__, None))
                with known_lock:
                    counts["refused"] += 1
            except DatabaseError as exc:
                if exc.sqlstate == "40P01":  # PostgreSQL broke a deadlock: one side rolled back
                    counts["deadlock"] += 1
                else:
                    failures.append(exc)
            except BaseException as exc:
                failures.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 3)
    assert failures == []
    assert counts["ok"] > 0 and counts["refused"] > 0, counts
    try:
        assert_invariants(ns, database_url, lineage_redaction, clocks)
    except AssertionError:
        for entry in log:  # (thread, verb, node, other, outcome, server clock)
            print(entry)
        raise


# --- the lifecycle law's own writes ------------------------------------------------------


def durable_memory(ns: Namespace, claim: str) -> int:
    thought = {**anatomy("deploys"), "claim_or_question": claim}
    recorded = ns.apply([{"op": "record_short_term", "anatomy": thought}], phase="rumination")
    source = recorded.results[0].nodes[0]
    distilled = ns.apply(
        [{"op": "distill", "sources": [source], "anatomy": anatomy("deploys")}], phase="sleep"
    )
    return distilled.results[0].nodes[0]


def revise_durable(ns: Namespace, memory: int) -> object:
    return ns.apply(
        [{"op": "revise_durable", "node_id": memory, "reason": "r", "content": "changed"}],
        phase="sleep",
    )


@pytest.mark.parametrize("law_first", [True, False], ids=["law-first", "redact-first"])
def test_a_lifecycle_batch_and_a_redaction_of_its_memory_are_serialised(
    store, database_url, law_first
):
    ns = store.namespace(f"race-law-{uuid.uuid4().hex[:8]}")
    memory = durable_memory(ns, f"Deploys fail on Fridays {uuid.uuid4().hex[:6]}")
    first = (
        (lambda: revise_durable(ns, memory))
        if law_first
        else (lambda: ns.redact(memory, reason="erase"))
    )
    second = (
        (lambda: ns.redact(memory, reason="erase"))
        if law_first
        else (lambda: revise_durable(ns, memory))
    )
    with Pause(engine_of(ns)) as pause:
        one, first_outcome = start(first)
        pause.thread = one
        one.start()
        wait_until(lambda: pause.reached.is_set() or first_outcome.done.is_set(), "the first write")
        assert first_outcome.error is None, first_outcome.error
        two, second_outcome = start(second)
        two.start()
        wait_until(
            lambda: waiting_on_lineage_lock(database_url) or second_outcome.done.is_set(),
            "the second waited for the lock",
        )
        assert not second_outcome.done.is_set()
        pause.release.set()
        one.join(WAIT)
        two.join(WAIT)
    assert first_outcome.error is None and second_outcome.error is None
    if law_first:
        assert ns.get(memory).status.value == "redacted"
    else:
        receipt = second_outcome.result
        assert not receipt.applied  # type: ignore[attr-defined]
        assert "redacted" in (receipt.rejected[0].reason or "")  # type: ignore[attr-defined]
        assert [n.id for n in ns.lineage(memory)] == [memory]


def test_clear_waits_for_a_revise_in_flight_and_leaves_no_live_successor(store, database_url):
    ns = store.namespace(f"race-clear-{uuid.uuid4().hex[:8]}")
    memory = ns.remember("Alice lives in Porto").id
    with Pause(engine_of(ns)) as pause:
        one, revised = start(lambda: run_verb(ns, "revise", memory, memory, "first"))
        pause.thread = one
        one.start()
        wait_until(lambda: pause.reached.is_set() or revised.done.is_set(), "the revise")
        two, cleared = start(lambda: ns.clear(reason="start over"))
        two.start()
        wait_until(
            lambda: waiting_on_lineage_lock(database_url) or cleared.done.is_set(),
            "clear waited for the lock",
        )
        assert not cleared.done.is_set()
        pause.release.set()
        one.join(WAIT)
        two.join(WAIT)
    assert revised.error is None and cleared.error is None
    assert cleared.result == 1  # the new version, not the superseded one
    assert [n.status.value for n in ns.lineage(memory)] == ["superseded", "tombstoned"]
    assert_invariants(ns, database_url, lineage_redaction=False)
