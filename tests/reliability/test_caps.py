"""Caps on what one call may hand the store: each oversized input is a clear error, nothing written.

A memory's ``data`` is capped in bytes (``MEMSTORE_MAX_DATA_BYTES``) and depth
(:data:`~memstore.models.MAX_DATA_DEPTH`), checked by a walk that stops at the
limit; filter lists hold at most :data:`~memstore.models.MAX_FILTER_ITEMS`
values; a batch of operations is refused by its length (and an operation given
as JSON text by its length) before anything is parsed. Every case checks the
error names the field and the limit, and that no table gained a row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memstore import MemoryStore
from memstore.activation.model import MAX_SEEDS, ActivationParams
from memstore.config import Settings
from memstore.embedding.hashing import HashingEmbedder
from memstore.errors import DataTooLargeError, InvalidInputError
from memstore.law.policy import MAX_BATCH_CEILING
from memstore.models import MAX_DATA_DEPTH, MAX_FILTER_ITEMS, MemoryInput
from memstore.namespace import Namespace
from tests.conftest import row_counts

LIMIT = 64 * 1024
FIFTY_MB = {"blob": "x" * 50_000_000}
MILLION = {"xs": list(range(1_000_000))}


def nested(depth: int) -> dict[str, Any]:
    """``{"a": {"a": ... }}`` with ``depth`` objects (the outer one included)."""
    doc: dict[str, Any] = {}
    for _ in range(depth - 1):
        doc = {"a": doc}
    return doc


DEEP = nested(1000)
HUGE = {"50 MB": FIFTY_MB, "1M-element list": MILLION, "depth 1000": DEEP}


@pytest.fixture
def unchanged(database_url: str) -> Iterator[None]:
    """Fails the test if any memstore table gained or lost a row."""
    before = row_counts(database_url)
    yield
    assert row_counts(database_url) == before


def _expect_data_error(call: Callable[[], object], doc: dict[str, Any], field: str) -> None:
    expected = InvalidInputError if doc is DEEP else DataTooLargeError
    with pytest.raises(expected) as raised:
        call()
    assert raised.value.field == field
    message = str(raised.value)
    if doc is DEEP:
        assert f"nests deeper than {MAX_DATA_DEPTH} levels" in message
    else:
        assert str(LIMIT) in message and "MEMSTORE_MAX_DATA_BYTES" in message
        assert raised.value.limit == LIMIT  # type: ignore[attr-defined]


# --- the data document --------------------------------------------------------------


@pytest.mark.parametrize("doc", HUGE.values(), ids=HUGE.keys())
def test_remember_refuses_oversized_data(ns: Namespace, unchanged: None, doc: dict[str, Any]):
    _expect_data_error(lambda: ns.remember("a note", data=doc), doc, "data")


@pytest.mark.parametrize("doc", HUGE.values(), ids=HUGE.keys())
def test_remember_many_refuses_oversized_data(ns: Namespace, unchanged: None, doc: dict[str, Any]):
    _expect_data_error(
        lambda: ns.remember_many(["fine", {"content": "big", "data": doc}]), doc, "items[1].data"
    )


def test_remember_many_checks_memory_inputs_built_by_the_caller(ns: Namespace, unchanged: None):
    # A MemoryInput passes its own ceiling (16 MiB) but not the store's limit.
    item = MemoryInput(content="big", data=MILLION)
    _expect_data_error(lambda: ns.remember_many(["fine", item]), MILLION, "items[1].data")


@pytest.mark.parametrize("doc", HUGE.values(), ids=HUGE.keys())
def test_revise_and_transactions_refuse_oversized_data(
    ns: Namespace, database_url: str, doc: dict[str, Any]
):
    node = ns.remember("the plan is A")
    with _unchanged_store(database_url):
        _expect_data_error(
            lambda: ns.revise(node.id, "the plan is B", reason="r", data=doc), doc, "data"
        )

        def in_a_transaction() -> None:
            with ns.transaction() as tx:
                tx.remember("first of two", data={"ok": True})
                tx.remember("second of two", data=doc)

        _expect_data_error(in_a_transaction, doc, "data")
    assert ns.get(node.id).status.value == "current"


@pytest.mark.parametrize("doc", HUGE.values(), ids=HUGE.keys())
def test_the_law_rejects_an_operation_with_oversized_data(
    ns: Namespace, database_url: str, doc: dict[str, Any]
):
    node = ns.remember("a fact to revise")
    batches: dict[str, dict[str, Any]] = {
        "remember": {"op": "remember", "content": "from the law", "data": doc},
        "revise": {"op": "revise", "node_id": node.id, "content": "revised", "reason": "r",
                   "changes": {"data": doc}},
    }  # fmt: skip
    with _unchanged_store(database_url):
        for name, op in batches.items():
            receipt = ns.apply([op], phase="wake", actor="agent")
            assert not receipt.applied, name
            assert receipt.results[0].outcome == "rejected", name
            reason = receipt.results[0].reason or ""
            assert "data" in reason or "changes" in reason, (name, reason)


def test_data_at_the_limit_is_stored_and_one_byte_more_is_not(database_url: str):
    settings = Settings(database_url=database_url, max_data_bytes=100)
    with MemoryStore.open(settings=settings, embedder=HashingEmbedder()) as store:
        ns = store.namespace("caps-exact")
        fits = {"k": "x" * 92}  # {"k":"…"} is 8 bytes of JSON around the text
        assert ns.remember("fits", data=fits).data == fits
        with pytest.raises(DataTooLargeError) as raised:
            ns.remember("does not fit", data={"k": "x" * 93})
        assert raised.value.limit == 100


def test_data_as_deep_as_allowed_is_stored_and_one_level_more_is_not(ns: Namespace):
    deep_enough = nested(MAX_DATA_DEPTH)
    assert ns.remember("as deep as allowed", data=deep_enough).data == deep_enough
    with pytest.raises(InvalidInputError, match="nests deeper"):
        ns.remember("one level too deep", data=nested(MAX_DATA_DEPTH + 1))


def test_the_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMSTORE_MAX_DATA_BYTES", "2048")
    assert Settings().max_data_bytes == 2048
    monkeypatch.setenv("MEMSTORE_MAX_DATA_BYTES", str(1024**3))
    with pytest.raises(ValueError, match="max_data_bytes"):
        Settings()


# --- filter lists ---------------------------------------------------------------------

TOO_MANY = MAX_FILTER_ITEMS + 1


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("kinds", ["working"] * TOO_MANY),
        ("node_types", [f"T{i}" for i in range(TOO_MANY)]),
        ("tiers", [f"t{i}" for i in range(TOO_MANY)]),
        ("node_types", ["T" * 65]),
        ("tiers", ["t" * 201]),
    ],
)
def test_recall_filters_are_capped(ns: Namespace, unchanged: None, field: str, value: list[str]):
    with pytest.raises(InvalidInputError) as raised:
        options: dict[str, Any] = {field: value}
        ns.recall("anything", **options)
    assert raised.value.field == field
    assert "at most" in str(raised.value)


def test_activation_seeds_and_type_tables_are_capped(ns: Namespace, unchanged: None):
    with pytest.raises(InvalidInputError) as raised:
        ns.activate(seeds=list(range(1, MAX_SEEDS + 2)))
    assert raised.value.field == "seeds" and str(MAX_SEEDS) in str(raised.value)
    with pytest.raises(ValueError, match="at most 1000"):
        ActivationParams(thresholds={f"T{i}": 0.1 for i in range(1001)})
    with pytest.raises(ValueError, match="at most 1000"):
        ActivationParams(never_working_memory=frozenset(f"T{i}" for i in range(1001)))


# --- batches of operations --------------------------------------------------------------

OP = {"op": "remember", "content": "one of many"}


def test_an_oversized_batch_is_refused_before_it_is_parsed(ns: Namespace, unchanged: None):
    # A million references to one dict: parsing them would take many seconds;
    # the refusal reads the length only.
    million = [OP] * 1_000_000
    with pytest.raises(InvalidInputError) as raised:
        ns.apply(million, phase="wake", actor="agent")
    assert raised.value.field == "ops"
    assert f"at most {MAX_BATCH_CEILING} operations" in str(raised.value)
    with pytest.raises(InvalidInputError, match=f"at most {MAX_BATCH_CEILING}"):
        ns.sleep(million, actor="agent")


def test_a_batch_over_the_policy_limit_is_refused_whole(ns: Namespace, database_url: str):
    ns.set_policy({"max_batch": 3}, reason="small batches", actor="operator")
    with _unchanged_store(database_url):
        for atomic in (True, False):
            with pytest.raises(InvalidInputError, match="at most 3 operations"):
                ns.apply([OP] * 4, phase="wake", actor="agent", atomic=atomic)


def test_an_operation_as_oversized_json_text_is_refused_unparsed(ns: Namespace, unchanged: None):
    huge = '{"op": "remember", "content": "' + "x" * 50_000_000 + '"}'
    with pytest.raises(InvalidInputError) as raised:
        ns.apply([huge], phase="wake", actor="agent")
    assert raised.value.field == "ops"
    assert "ops[0]" in str(raised.value) and "MEMSTORE_MAX_DATA_BYTES" in str(raised.value)
    # Text that is not a list of operations is refused as such, whatever its size.
    with pytest.raises(InvalidInputError, match="must be a list"):
        ns.apply("[" + huge + "]", phase="wake", actor="agent")


def test_a_deeply_nested_rejected_operation_is_logged_truncated(ns: Namespace):
    # The rejected payload is kept in the log (atomic=False) without recursing 10,000 levels.
    deep: Any = "leaf"
    for _ in range(10_000):
        deep = [deep]
    receipt = ns.apply(
        [{"op": "teleport", "where": deep}], phase="wake", actor="agent", atomic=False
    )
    assert receipt.results[0].outcome == "rejected"


class _unchanged_store:  # used like the fixture, as a context manager
    """Within the block, no memstore table gains or loses a row."""

    def __init__(self, url: str):
        self.url = url

    def __enter__(self) -> None:
        self.before = row_counts(self.url)

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            assert row_counts(self.url) == self.before


# --- other text and lists of the public API ----------------------------------------------


def test_reasons_are_capped(ns: Namespace, database_url: str):
    node = ns.remember("to be forgotten")
    long = "why " * 600  # 2400 characters
    with _unchanged_store(database_url):
        for call in (
            lambda: ns.forget(node.id, reason=long),
            lambda: ns.revise(node.id, "changed", reason=long),
            lambda: ns.redact(node.id, reason=long),
            lambda: ns.clear(reason=long),
        ):
            with pytest.raises(InvalidInputError, match="at most 2000 characters") as raised:
                call()
            assert raised.value.field == "reason"
    assert ns.forget(node.id, reason="why " * 500)  # 2000 characters are fine


def test_policy_lists_and_history_limits_are_capped(ns: Namespace, unchanged: None):
    ops = [f"op_{i}" for i in range(101)]
    with pytest.raises(InvalidInputError, match="invalid policy"):
        ns.set_policy({"refused_ops": ops}, reason="too many", actor="operator")
    with pytest.raises(InvalidInputError, match="invalid policy"):
        ns.set_policy({"review_required": ["x" * 65]}, reason="too long", actor="operator")
    for limit in (0, 10_001, True, "5"):
        with pytest.raises(InvalidInputError) as raised:
            ns.consolidation.history(limit=limit)  # type: ignore[arg-type]
        assert raised.value.field == "limit"
