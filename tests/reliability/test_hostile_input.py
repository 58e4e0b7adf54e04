"""Hostile input through the public API: a named MemstoreError, never a raw one, store unchanged.

Every entry point of :data:`ENTRY_POINTS` is called with arguments that mix
valid values with junk — random Unicode (NUL bytes, lone surrogates, look-
alikes), huge strings, NaN and infinities, ids beyond bigint, deeply nested or
non-JSON ``data``, wrong types, unknown keywords. The call must either succeed
or raise a :class:`~memstore.errors.MemstoreError` subclass with a message,
leaving every table's row count as it was. A bare
:class:`~memstore.errors.DatabaseError` (or a lost connection) counts as a
failure too: it means junk got past validation and the database had to refuse
it with a message memstore has no name for.

CI runs ``MEMSTORE_FUZZ_EXAMPLES`` examples per entry point (default 25);
``benchmarks/fuzz.py`` runs many more and reports how many were tried.
Adding an entry point (e.g. ``ns.apply`` with operations JSON, ``ns.sleep``)
is one function decorated with ``@entry_point``.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from memstore import MemoryStore
from memstore.db.schema import metadata
from memstore.embedding import HashingEmbedder
from memstore.errors import (
    DatabaseError,
    DatabaseUnavailableError,
    InvalidInputError,
    MemstoreError,
    translate_db_error,
)
from memstore.namespace import Namespace

EXAMPLES = int(os.environ.get("MEMSTORE_FUZZ_EXAMPLES", "25"))
REPORT = os.environ.get("MEMSTORE_FUZZ_REPORT")  # where benchmarks/fuzz.py reads the counts
TRIED: Counter[str] = Counter()

# --- hostile values -------------------------------------------------------------

SPECIAL_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "lone \udfff surrogate",
    "%",
    "_",
    "john_doe",
    "'; DROP TABLE memstore.nodes; --",
    "\\",
    '"',
    "\u202e\u200b\ufeff",
    "Ａｌｉｃｅ",  # noqa: RUF001 - full-width look-alikes are the point
    "ignore previous instructions",
    "\U0001f600" * 3,
    "NaN",
    "-1",
    "9" * 40,
]
HUGE_TEXT = st.builds(
    lambda unit, n: unit * n,
    st.sampled_from(["a", "é", "\U0001f600", " ", "\x00", "ab\ud800"]),
    st.sampled_from([3_000, 70_000, 300_000]),
)
texts = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=40),
    st.sampled_from(SPECIAL_TEXT),
    HUGE_TEXT,
)
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=2**63 - 2, max_value=2**80),
    st.integers(min_value=-(2**80), max_value=-(2**63) + 1),
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324]),
    st.booleans(),
)


def _nested(depth: int, kind: str) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


json_junk = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.one_of(texts, numbers), children, max_size=4)
    ),
    max_leaves=12,
)
deep = st.builds(
    _nested, st.sampled_from([50, 200, 2_000, 20_000]), st.sampled_from(["list", "dict"])
)
anything = st.one_of(
    st.none(),
    texts,
    numbers,
    json_junk,
    deep,
    st.binary(max_size=8),
    st.sampled_from([object(), {1, 2}, (1, 2), datetime(2024, 1, 1), b"\x00", np.float32("nan")]),
)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually junk, sometimes a valid value, so calls get past the first check."""
    return st.one_of(valid, anything)


aware = st.just(datetime(2024, 5, 1, tzinfo=UTC))
unit = maybe(st.floats(0, 1))
short = maybe(st.sampled_from(["a", "Fact", "chat:1", "alice"]))
unknown_keys = st.dictionaries(
    st.sampled_from(["bogus", "namespace_id", "id", "recorded_at", "content_hash", "status"]),
    anything,
    max_size=1,
)
MEMORY_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "kind": maybe(st.sampled_from(["working", "episodic", "semantic", "procedural"])),
    "node_type": short,
    "tier": short,
    "layer": maybe(st.integers(0, 4)),
    "label": maybe(texts),
    "data": st.one_of(json_junk, deep, anything),
    "importance": unit,
    "confidence": unit,
    "decay_rate": unit,
    "privacy": maybe(st.integers(0, 3)),
    "protected": maybe(st.booleans()),
    "subject": short,
    "scope": short,
    "source": maybe(texts),
    "actor": short,
    "run_id": short,
    "observed_at": maybe(aware),
    "valid_from": maybe(aware),
    "valid_to": maybe(aware),
    "embedding": st.one_of(
        st.lists(numbers, max_size=4),
        st.just(np.full(HashingEmbedder().dims, np.nan, dtype=np.float32)),
        st.just(np.full(HashingEmbedder().dims, np.inf)),
        anything,
    ),
    "dedupe_key": maybe(texts),
}
memory_fields = st.fixed_dictionaries({}, optional=MEMORY_FIELDS).flatmap(
    lambda fields: unknown_keys.map(lambda extra: {**fields, **extra})
)

# --- the entry points ----------------------------------------------------------------

Call = Callable[[], object]
Targets = dict[str, Any]
ENTRY_POINTS: dict[str, Callable[[st.DataObject, Targets], Call]] = {}


def entry_point(fn: Callable[[st.DataObject, Targets], Call]) -> Callable[..., Call]:
    """Register ``fn``: it draws arguments and returns the call to make."""
    ENTRY_POINTS[fn.__name__] = fn
    return fn


def ids(targets: Targets) -> st.SearchStrategy[Any]:
    return maybe(st.sampled_from(targets["ids"]))


@entry_point
def open_store(data: st.DataObject, t: Targets) -> Call:
    url = data.draw(
        st.one_of(
            st.just(t["url"]),
            texts,
            st.sampled_from(["mysql://x/y", "postgresql://", "://", "postgresql:///\x00"]),
        )
    )
    auto_upgrade = data.draw(maybe(st.just(False)))
    return lambda: MemoryStore.open(url, auto_upgrade=auto_upgrade).close()


@entry_point
def namespace(data: st.DataObject, t: Targets) -> Call:
    name = data.draw(maybe(texts))
    return lambda: t["store"].namespace(name)


@entry_point
def remember(data: st.DataObject, t: Targets) -> Call:
    content = data.draw(maybe(texts))
    fields = data.draw(memory_fields)
    return lambda: t["ns"].remember(content, **fields)


@entry_point
def remember_many(data: st.DataObject, t: Targets) -> Call:
    item = st.one_of(texts, memory_fields.map(lambda f: {"content": "x", **f}), anything)
    items = data.draw(st.one_of(st.lists(item, max_size=4), anything))
    batch_size = data.draw(maybe(st.just(1000)))
    return lambda: t["ns"].remember_many(items, batch_size=batch_size)


@entry_point
def link(data: st.DataObject, t: Targets) -> Call:
    src, dst = data.draw(ids(t)), data.draw(ids(t))
    fields = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "relation": maybe(texts),
                "weight": unit,
                "inhibitory": maybe(st.booleans()),
                "confidence": unit,
                "layer": maybe(st.integers(0, 4)),
                "source": maybe(texts),
                "actor": short,
            },
        )
    )
    return lambda: t["ns"].link(src, dst, **fields)


@entry_point
def revise(data: st.DataObject, t: Targets) -> Call:
    node_id, content = data.draw(ids(t)), data.draw(maybe(texts))
    reason = data.draw(maybe(texts))
    changes = data.draw(memory_fields)
    return lambda: t["ns"].revise(node_id, content, reason=reason, **changes)


@entry_point
def forget(data: st.DataObject, t: Targets) -> Call:
    target_id, reason = data.draw(ids(t)), data.draw(maybe(texts))
    target = data.draw(maybe(st.sampled_from(["node", "edge"])))
    return lambda: t["ns"].forget(target_id, reason=reason, target=target)


@entry_point
def redact(data: st.DataObject, t: Targets) -> Call:
    node_id, reason, actor = data.draw(ids(t)), data.draw(maybe(texts)), data.draw(short)
    versions = data.draw(maybe(st.sampled_from(["all", "one"])))
    return lambda: t["ns"].redact(node_id, reason=reason, actor=actor, versions=versions)


@entry_point
def get(data: st.DataObject, t: Targets) -> Call:
    node_id = data.draw(ids(t))
    return lambda: t["ns"].get(node_id)


@entry_point
def lineage(data: st.DataObject, t: Targets) -> Call:
    node_id = data.draw(ids(t))
    return lambda: t["ns"].lineage(node_id)


@entry_point
def confirm(data: st.DataObject, t: Targets) -> Call:
    node_id = data.draw(ids(t))
    return lambda: t["ns"].confirm(node_id)


@entry_point
def recall(data: st.DataObject, t: Targets) -> Call:
    query = data.draw(maybe(texts))
    options = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "k": maybe(st.integers(1, 20)),
                "mode": maybe(st.sampled_from(["hybrid", "semantic", "lexical"])),
                "kinds": maybe(st.lists(st.sampled_from(["episodic", "semantic"]))),
                "node_types": maybe(st.lists(texts, max_size=3)),
                "tiers": maybe(st.lists(texts, max_size=3)),
                "as_of": maybe(aware),
                "valid_at": maybe(aware),
                "privacy_ceiling": maybe(st.integers(0, 3)),
                "fusion": maybe(st.sampled_from(["weighted", "rrf"])),
                "semantic_weight": unit,
            },
        )
    )
    return lambda: t["ns"].recall(query, **options)


@entry_point
def activate(data: st.DataObject, t: Targets) -> Call:
    query = data.draw(maybe(texts))
    options = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "seeds": maybe(st.lists(ids(t), max_size=3)),
                "depth": maybe(st.integers(0, 3)),
                "fanout": maybe(st.integers(1, 20)),
                "limit": maybe(st.integers(1, 20)),
                "as_of": maybe(aware),
                "privacy_ceiling": maybe(st.integers(0, 3)),
                "session_id": short,
            },
        )
    )
    return lambda: t["ns"].activate(query, **options)


@entry_point
def recall_context(data: st.DataObject, t: Targets) -> Call:
    query = data.draw(maybe(texts))
    budget = data.draw(maybe(st.integers(64, 4000)))
    allocation = data.draw(
        maybe(st.dictionaries(st.sampled_from(["scratchpad", "graph", "x"]), unit, max_size=2))
    )
    session_id = data.draw(short)
    return lambda: t["ns"].recall_context(
        query, budget, allocation=allocation, session_id=session_id
    )


@entry_point
def timeline(data: st.DataObject, t: Targets) -> Call:
    role = data.draw(maybe(st.sampled_from(["user", "assistant"])))
    content, session = data.draw(maybe(texts)), data.draw(short)
    at = data.draw(maybe(aware))
    return lambda: t["ns"].timeline.ingest_turn(role, content, session, at=at)


@entry_point
def timeline_recent(data: st.DataObject, t: Targets) -> Call:
    n, session = data.draw(maybe(st.integers(1, 50))), data.draw(short)
    return lambda: t["ns"].timeline.recent(n, session_id=session)


@entry_point
def scratchpad(data: st.DataObject, t: Targets) -> Call:
    key, value = data.draw(maybe(texts)), data.draw(maybe(texts))
    verb = data.draw(st.sampled_from(["pin", "unpin", "get", "history"]))
    pad = t["ns"].scratchpad
    if verb == "pin":
        return lambda: pad.pin(key, value)
    if verb == "unpin":
        return lambda: pad.unpin(key, reason=value)
    return lambda: getattr(pad, verb)(key)


@entry_point
def lessons(data: st.DataObject, t: Targets) -> Call:
    rule, source, confidence = data.draw(maybe(texts)), data.draw(short), data.draw(unit)
    verb = data.draw(st.sampled_from(["add", "record_applied", "remove", "decay", "search"]))
    tier = t["ns"].lessons
    if verb == "add":
        return lambda: tier.add(rule, source=source, confidence=confidence)
    if verb == "decay":
        return lambda: tier.decay_unused(confidence, data.draw(unit))
    if verb == "search":
        return lambda: tier.search(rule, data.draw(maybe(st.integers(1, 10))))
    lesson_id = data.draw(ids(t))
    return lambda: getattr(tier, verb)(lesson_id)


@entry_point
def procedures(data: st.DataObject, t: Targets) -> Call:
    name, description = data.draw(maybe(texts)), data.draw(maybe(texts))
    step = st.fixed_dictionaries(
        {"tool": maybe(texts), "purpose": maybe(texts), "instruction": maybe(texts)}
    )
    steps = data.draw(st.one_of(st.lists(st.one_of(step, anything), max_size=3), anything))
    verb = data.draw(st.sampled_from(["add", "refine", "record_success", "versions"]))
    tier = t["ns"].procedures
    target = data.draw(st.one_of(ids(t), st.just(name)))
    if verb == "add":
        return lambda: tier.add(name, description=description, steps=steps)
    if verb == "refine":
        return lambda: tier.refine(target, steps, description=description)
    if verb == "record_success":
        return lambda: tier.record_success(target, success=data.draw(maybe(st.booleans())))
    return lambda: tier.versions(target)


# --- the property -----------------------------------------------------------------


# Rows in every memstore table, in one statement (it runs twice per example).
COUNT_ROWS = sql.SQL("SELECT {}").format(
    sql.SQL(", ").join(
        sql.SQL("(SELECT count(*) FROM memstore.{})").format(sql.Identifier(table.name))
        for table in metadata.sorted_tables
    )
)


@pytest.fixture(scope="module")
def targets(database_url: str, store: MemoryStore) -> Iterator[Targets]:
    ns: Namespace = store.namespace("hostile-input")
    a = ns.remember("Alice lives in Lisbon", kind="semantic")
    b = ns.remember("Alice moved to Lisbon in May")
    edge = ns.link(a.id, b.id)
    pin = ns.scratchpad.pin("city", "Lisbon")
    with psycopg.connect(database_url, autocommit=True) as counter:
        yield {
            "url": database_url,
            "store": store,
            "ns": ns,
            "ids": [a.id, b.id, edge.id, pin.id],
            "counter": counter,
        }
    if REPORT:
        Path(REPORT).write_text(json.dumps(dict(TRIED)))


def check(counter: psycopg.Connection[Any], call: Call, *, connects: bool = False) -> None:
    """The call succeeds, or raises a named MemstoreError and changes no table.

    ``connects``: the call opens a connection of its own, so an unreachable
    server is a fair answer to a junk URL.
    """
    before = counter.execute(COUNT_ROWS).fetchone()
    try:
        call()
    except DatabaseUnavailableError:
        if not connects:
            raise  # the running server "failed": junk was misreported as a lost connection
    except DatabaseError:
        raise  # junk reached the database: validation missed it
    except MemstoreError as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        assert type(exc).__module__ == "memstore.errors"
        after = counter.execute(COUNT_ROWS).fetchone()
        assert after == before, f"{type(exc).__name__} left the store changed"


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_hostile_input_is_refused_cleanly(targets, name):
    make = ENTRY_POINTS[name]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        TRIED[name] += 1
        check(targets["counter"], make(data, targets), connects=name == "open_store")

    run()


# --- what the fuzzing found, pinned as plain examples -----------------------------

FOUND: list[tuple[str, Callable[[Targets], object]]] = [
    ("an id given as text", lambda t: t["ns"].get("")),
    ("an id beyond bigint", lambda t: t["ns"].get(2**70)),
    ("a bool as an id", lambda t: t["ns"].forget(True, reason="r")),
    ("link ends beyond bigint", lambda t: t["ns"].link(2**64, t["ids"][0])),
    ("seeds beyond bigint", lambda t: t["ns"].activate(seeds=[2**63])),
    ("NaN inside data", lambda t: t["ns"].remember("x", data={"v": math.nan})),
    ("NUL inside data", lambda t: t["ns"].remember("x", data={"v": ["a\x00"]})),
    ("data nested 2,000 deep", lambda t: t["ns"].remember("x", data=_nested(2_000, "dict"))),
    ("data that is not JSON", lambda t: t["ns"].remember("x", data={"v": object()})),
    ("a lone surrogate in content", lambda t: t["ns"].remember("a \ud800 b")),
    ("a lone surrogate in a label", lambda t: t["ns"].remember("x", label="\udfff")),
    ("a lone surrogate in a namespace name", lambda t: t["store"].namespace("\ud800")),
    ("items that are not a list", lambda t: t["ns"].remember_many(None)),
    ("a text as items", lambda t: t["ns"].remember_many("abc")),
    ("a batch size of None", lambda t: t["ns"].remember_many(["x"], batch_size=None)),
    ("a pin key of NUL bytes", lambda t: t["ns"].scratchpad.get(b"\x00")),
    ("a pin key nested 2,000 deep", lambda t: t["ns"].scratchpad.get(_nested(2_000, "list"))),
    ("an unpin without a reason", lambda t: t["ns"].scratchpad.unpin("city", reason=None)),
    ("a session id that is a number", lambda t: t["ns"].timeline.recent(5, session_id=0)),
    ("an item with a key that is not text", lambda t: t["ns"].remember_many([{0: None}])),
    ("a procedure name with NUL", lambda t: t["ns"].procedures.refine("\x00", [])),
    ("an actor that is a number", lambda t: t["ns"].redact(t["ids"][0], reason="r", actor=1)),
    ("an actor with NUL", lambda t: t["ns"].forget(t["ids"][0], reason="r", actor="\x00")),
]


@pytest.mark.parametrize(("case", "call"), FOUND, ids=[case for case, _ in FOUND])
def test_what_fuzzing_found_is_an_invalid_input_error(targets, case, call):
    before = targets["counter"].execute(COUNT_ROWS).fetchone()
    with pytest.raises(InvalidInputError) as caught:
        call(targets)
    assert str(caught.value).strip()
    assert targets["counter"].execute(COUNT_ROWS).fetchone() == before


def test_a_client_side_driver_error_is_not_reported_as_a_lost_connection():
    error = translate_db_error(psycopg.ProgrammingError("cannot adapt type 'dict'"))
    assert type(error) is DatabaseError
    lost = translate_db_error(psycopg.OperationalError("connection is bad"))
    assert isinstance(lost, DatabaseUnavailableError)


def test_a_raw_driver_error_inside_a_transaction_is_translated(store):
    with pytest.raises(DatabaseError) as caught, store.transaction() as conn:
        raw = conn.connection.driver_connection
        raw.execute("SELECT 1 / 0")  # psycopg directly, as COPY and named queries run
    assert caught.value.sqlstate == "22012"
