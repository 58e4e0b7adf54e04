"""A context request's allocation is checked without echoing unbounded input."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memstore.tiers.context import ContextRequest


def test_unknown_sections_are_named_in_a_bounded_message() -> None:
    allocation = {f"section-{i}": 0.0 for i in range(100_000)}
    with pytest.raises(ValidationError) as caught:
        ContextRequest(query="plan the dinner", allocation=allocation)
    message = str(caught.value)
    assert "unknown sections" in message and "and 99995 more" in message
    assert len(message) < 1_000
