"""json_size: the exact byte size of compact JSON, found by a walk that stops at the limit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstore.models import DataTooLarge, json_size

text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(text, inner, max_size=5),
    max_leaves=30,
)


def compact(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


@given(documents)
def test_the_size_is_that_of_compact_json(doc: Any) -> None:
    size = compact(doc)
    assert json_size(doc, limit=size) == size
    if size > 0:
        with pytest.raises(DataTooLarge):
            json_size(doc, limit=size - 1)


def test_scalar_keys_are_counted_as_json_writes_them() -> None:
    doc = {2: "a", 1.5: "b", True: "c", None: "d"}
    assert json_size(doc, limit=1000) == compact(doc)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"a": "nul\x00"}, "NUL"),
        ({"a": "\ud800"}, "surrogate"),
        ({"a": float("nan")}, "finite"),
        ({"a": {1, 2}}, "must be JSON"),
        ({(1, 2): "tuple key"}, "keys must be text"),
        ({"a": 10**5000}, "too large"),
    ],
)
def test_what_is_not_storable_json_is_refused(doc: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        json_size(doc, limit=10**6)


def test_depth_is_refused_while_walking_without_recursion() -> None:
    deep: Any = []
    for _ in range(200_000):  # far past Python's recursion limit
        deep = [deep]
    with pytest.raises(ValueError, match="nests deeper than 32 levels"):
        json_size(deep, limit=10**9)
    assert json_size(deep, limit=10**9, max_depth=300_000) == 2 * 200_001
