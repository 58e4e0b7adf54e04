"""The law fails closed (issue 17 §6): every operation type has a phase permission,
a check and an applier, and nothing outside the union is accepted.

The checks and appliers are ``match`` statements ending in ``assert_never``, so
mypy refuses a union member without a case; these tests hold the same line
without mypy, by reading the union itself.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any, get_args

import pytest

from memstore.law import Facts, Policy, judge
from memstore.law.law import (
    OPERATION_TYPES,
    PERMITTED,
    PROPOSABLE,
    PROPOSAL_ONLY,
    _check,
    lifecycle_door,
)
from memstore.law.ops import OP_NAMES, Operation, Remember
from memstore.law.policy import LIFECYCLE_TIERS, POLICY
from memstore.lifecycle.apply import Applying

UNION: tuple[type[Any], ...] = get_args(get_args(Operation)[0])


def _match_classes(function: Any) -> set[str]:
    """The class names of the ``case X():`` patterns of ``function``'s match."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.MatchClass) and isinstance(node.cls, ast.Name):
            names.add(node.cls.id)
    return names


def _ends_in_assert_never(function: Any) -> bool:
    source = inspect.getsource(function)
    return "case _:" in source and "assert_never(op)" in source


def test_the_union_is_what_the_law_knows():
    assert set(UNION) == OPERATION_TYPES
    assert {t.model_fields["op"].default for t in UNION} == set(OP_NAMES)


@pytest.mark.parametrize("op_type", UNION, ids=lambda t: t.__name__)
def test_every_operation_type_has_a_permission_a_check_and_an_applier(op_type):
    name = op_type.model_fields["op"].default
    permitted = {op for ops in PERMITTED.values() for op in ops}
    assert name in permitted or name in PROPOSAL_ONLY, f"{name} has no phase permission"
    assert name not in PROPOSAL_ONLY or name in PROPOSABLE
    assert op_type.__name__ in _match_classes(_check), f"{name} has no check in the law"
    assert op_type.__name__ in _match_classes(Applying.apply), f"{name} has no applier"


def test_checks_and_appliers_are_exhaustive_matches():
    assert _ends_in_assert_never(_check)
    assert _ends_in_assert_never(Applying.apply)


def test_an_object_outside_the_union_is_refused_not_waved_through():
    class Sneaky(Remember):
        """A subclass carries a known op name but is not the law's type."""

    sneaky = Sneaky(content="hello", protected=True)
    [verdict] = judge([sneaky], phase="wake", facts=Facts(), policy=Policy())
    assert not verdict.accepted
    assert verdict.reason is not None and "not an operation of the law" in verdict.reason
    # The union's own type is judged (and refused here for its own reason).
    [verdict] = judge(
        [Remember(content="hello", protected=True)], phase="wake", facts=Facts(), policy=Policy()
    )
    assert not verdict.accepted and "protected" in (verdict.reason or "")


def test_a_check_without_a_case_raises_instead_of_passing():
    # _check is only reached for the union's types; were one missing, the
    # match would end in assert_never and raise: the batch writes nothing.
    with pytest.raises(AssertionError):
        _check(object(), None, Policy(), "wake")  # type: ignore[arg-type]


@pytest.mark.parametrize("tier", [*LIFECYCLE_TIERS, POLICY])
def test_every_lifecycle_tier_names_its_door_for_each_generic_verb(tier):
    for verb in ("remember", "revise", "forget"):
        door = lifecycle_door(tier, verb)
        assert door is not None and ("ns.apply" in door or "ns." in door), (tier, verb)
    assert lifecycle_door("notes", "revise") is None
    assert lifecycle_door(None, "forget") is None
