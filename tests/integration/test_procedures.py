"""The procedures tier: named, versioned step lists — all on real PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import psycopg
import pytest

from memstore.errors import (
    ContentTooLargeError,
    InvalidInputError,
    NodeNotFoundError,
    NodeSupersededError,
    NodeTombstonedError,
    ProcedureNotFoundError,
)
from memstore.models import NodeStatus
from memstore.tiers.procedures import MAX_STEPS, ProcedureStep
from tests.conftest import row_counts

TAG = {"tool": "git", "purpose": "Tag the release", "instruction": "git tag -s v$VERSION"}
BUILD = {"tool": "uv", "purpose": "Build the wheel", "instruction": "uv build --wheel"}
UPLOAD = {"tool": "twine", "purpose": "Publish it", "instruction": "twine upload dist/*"}


def test_add_stores_a_readable_procedure_with_typed_steps(ns):
    node = ns.procedures.add(
        "release", description="Ship a new version to PyPI.", steps=[TAG, BUILD, UPLOAD]
    )
    assert (node.tier, node.node_type, node.kind, node.label) == (
        "procedures",
        "Procedure",
        "procedural",
        "release",
    )
    assert node.data == {
        "name": "release",
        "description": "Ship a new version to PyPI.",
        "steps": [TAG, BUILD, UPLOAD],
    }
    assert node.content.splitlines() == [
        "Procedure: release",
        "Ship a new version to PyPI.",
        "Steps:",
        "1. Tag the release (tool: git): git tag -s v$VERSION",
        "2. Build the wheel (tool: uv): uv build --wheel",
        "3. Publish it (tool: twine): twine upload dist/*",
    ]
    assert ns.procedures.steps(node) == [ProcedureStep(**step) for step in (TAG, BUILD, UPLOAD)]
    assert ns.procedures.find_by_name("release") == node


def test_steps_may_be_given_as_models_and_are_trimmed(ns):
    node = ns.procedures.add(
        "tidy",
        description="  Clean up.  ",
        steps=[ProcedureStep(tool=" ruff ", purpose="format", instruction="ruff format .")],
    )
    assert node.data["description"] == "Clean up."
    assert node.data["steps"] == [
        {"tool": "ruff", "purpose": "format", "instruction": "ruff format ."}
    ]


def test_recall_finds_a_procedure_by_what_it_does(ns):
    release = ns.procedures.add("release", description="Ship a version.", steps=[TAG, UPLOAD])
    ns.procedures.add(
        "onboard",
        description="Welcome a new engineer.",
        steps=[{"tool": "slack", "purpose": "say hello", "instruction": "post in #team"}],
    )
    hits = ns.recall("how do I publish to PyPI with twine", k=3, tiers=["procedures"])
    assert hits[0].node.id == release.id


def test_add_refuses_a_name_already_in_use(ns, database_url):
    first = ns.procedures.add("release", description="Ship it.", steps=[TAG])
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError, match="add_if_new") as caught:
        ns.procedures.add("release", description="Ship it differently.", steps=[BUILD])
    assert caught.value.field == "name"
    assert row_counts(database_url) == before
    assert ns.procedures.add_if_new("release", description="Other.", steps=[BUILD]) == first
    assert row_counts(database_url) == before


def test_names_are_compared_exactly(ns):
    lower = ns.procedures.add("release", description="Ship it.", steps=[TAG])
    upper = ns.procedures.add("Release", description="Ship it.", steps=[TAG])
    assert lower.id != upper.id
    assert ns.procedures.find_by_name("release") == lower
    assert ns.procedures.find_by_name("release ") is None
    assert [node.label for node in ns.procedures.all()] == ["Release", "release"]


def _steps(count: int) -> list[dict[str, str]]:
    return [dict(TAG, instruction=f"step {i}") for i in range(count)]


@pytest.mark.parametrize(
    ("name", "description", "steps", "field"),
    [
        ("", "Ship it.", [TAG], "name"),
        ("   ", "Ship it.", [TAG], "name"),
        ("x" * 201, "Ship it.", [TAG], "name"),
        ("re\x00lease", "Ship it.", [TAG], "name"),
        ("release", "", [TAG], "description"),
        ("release", "Ship it.", [], "steps"),
        ("release", "Ship it.", _steps(MAX_STEPS + 1), "steps"),
        ("release", "Ship it.", [{"tool": "git", "purpose": "tag"}], "steps"),
        ("release", "Ship it.", [dict(TAG, tool=" ")], "steps"),
        ("release", "Ship it.", [dict(TAG, extra="no")], "steps"),
        ("release", "Ship it.", [dict(TAG, instruction="x" * 4001)], "steps"),
        ("release", "Ship it.", [dict(TAG, instruction="nul \x00")], "steps"),
        ("release", "Ship it.", ["git tag"], "steps"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    ns, database_url, name, description, steps, field
):
    before = row_counts(database_url)
    for add in (ns.procedures.add, ns.procedures.add_if_new):
        with pytest.raises(InvalidInputError) as caught:
            add(name, description=description, steps=steps)
        assert caught.value.field == field
    assert row_counts(database_url) == before


def test_a_procedure_too_large_to_store_is_refused(ns, database_url):
    long_step = dict(TAG, purpose="p" * 1000, instruction="i" * 4000)
    before = row_counts(database_url)
    with pytest.raises(ContentTooLargeError):
        ns.procedures.add("huge", description="d", steps=[long_step] * MAX_STEPS)
    assert row_counts(database_url) == before


# --- versions ------------------------------------------------------------------


def test_refine_writes_a_new_version_and_keeps_the_old(ns):
    first = ns.procedures.add("release", description="Ship it.", steps=[TAG, UPLOAD])
    second = ns.procedures.refine("release", [TAG, BUILD, UPLOAD], reason="forgot to build")
    assert second.id != first.id and second.label == "release"
    assert second.data["steps"] == [TAG, BUILD, UPLOAD]
    assert second.data["description"] == "Ship it."
    old = ns.get(first.id)
    assert old.status is NodeStatus.SUPERSEDED and old.superseded_by == second.id
    assert old.data["steps"] == [TAG, UPLOAD]  # history is kept as written
    third = ns.procedures.refine(second.id, [BUILD, UPLOAD], description="Ship without a tag.")
    assert third.data["description"] == "Ship without a tag."
    assert [node.id for node in ns.procedures.versions("release")] == [
        first.id,
        second.id,
        third.id,
    ]
    assert [node.id for node in ns.procedures.versions(first.id)] == [
        first.id,
        second.id,
        third.id,
    ]
    assert ns.procedures.find_by_name("release") == third
    assert [node.id for node in ns.procedures.all()] == [third.id]


def test_refine_records_the_reason(ns, database_url):
    first = ns.procedures.add("release", description="Ship it.", steps=[TAG])
    ns.procedures.refine("release", [TAG, UPLOAD], reason="publishing was missing")
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT reason FROM memstore.supersessions WHERE old_id = %s", (first.id,)
        ).fetchone()
    assert row == ("publishing was missing",)


def test_refine_back_to_earlier_steps_is_a_new_version(ns):
    first = ns.procedures.add("release", description="Ship it.", steps=[TAG, UPLOAD])
    second = ns.procedures.refine("release", [TAG, BUILD, UPLOAD])
    third = ns.procedures.refine("release", [TAG, UPLOAD], reason="the build step was redundant")
    assert third.id not in (first.id, second.id)
    assert third.content == first.content and third.status is NodeStatus.CURRENT
    assert [node.id for node in ns.procedures.versions("release")] == [
        first.id,
        second.id,
        third.id,
    ]
    fourth = ns.procedures.refine("release", [TAG, BUILD, UPLOAD])
    assert fourth.id != second.id and fourth.content == second.content


def test_refine_refuses_an_identical_version_and_changes_nothing(ns, database_url):
    ns.procedures.add("release", description="Ship it.", steps=[TAG])
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError, match="identical") as caught:
        ns.procedures.refine("release", [dict(TAG, tool=" git ")])
    assert caught.value.field == "steps"
    with pytest.raises(InvalidInputError) as caught:
        ns.procedures.refine("release", [])
    assert caught.value.field == "steps"
    with pytest.raises(InvalidInputError) as caught:
        ns.procedures.refine("release", [BUILD], reason=" ")
    assert caught.value.field == "reason"
    assert row_counts(database_url) == before


def test_refine_names_what_became_of_a_stale_or_unknown_procedure(ns, database_url):
    first = ns.procedures.add("release", description="Ship it.", steps=[TAG])
    second = ns.procedures.refine("release", [TAG, UPLOAD])
    memory = ns.remember("Alice lives in Lisbon")
    before = row_counts(database_url)
    with pytest.raises(NodeSupersededError) as stale:
        ns.procedures.refine(first.id, [BUILD])
    assert stale.value.current_id == second.id
    with pytest.raises(ProcedureNotFoundError) as unknown:
        ns.procedures.refine("deploy", [BUILD])
    assert unknown.value.name == "deploy"
    with pytest.raises(InvalidInputError):
        ns.procedures.refine(memory.id, [BUILD])
    with pytest.raises(NodeNotFoundError):
        ns.procedures.refine(10**12, [BUILD])
    with pytest.raises(InvalidInputError):
        ns.procedures.refine(True, [BUILD])
    assert row_counts(database_url) == before


def test_remove_tombstones_the_current_version_and_the_name_is_free_again(ns):
    first = ns.procedures.add("release", description="Ship it.", steps=[TAG])
    second = ns.procedures.refine("release", [TAG, UPLOAD])
    removed = ns.procedures.remove("release", reason="we release from CI now")
    assert removed.id == second.id and removed.status is NodeStatus.TOMBSTONED
    assert ns.procedures.find_by_name("release") is None and ns.procedures.all() == []
    assert [node.id for node in ns.procedures.versions(first.id)] == [first.id, second.id]
    with pytest.raises(ProcedureNotFoundError):
        ns.procedures.versions("release")
    with pytest.raises(NodeTombstonedError):
        ns.procedures.record_success(second.id)
    again = ns.procedures.add("release", description="Ship it.", steps=[TAG])
    assert again.id not in (first.id, second.id)  # same content as v1: still a new node
    assert again.status is NodeStatus.CURRENT


# --- learned state -------------------------------------------------------------


def test_record_success_counts_applications_and_successes_per_version(ns):
    first = ns.procedures.add("release", description="Ship it.", steps=[TAG])
    assert ns.procedures.stats("release").times_applied == 0
    ns.procedures.record_success("release")
    stats = ns.procedures.record_success(first.id, success=False)
    assert (stats.node_id, stats.name, stats.times_applied, stats.success_count) == (
        first.id,
        "release",
        2,
        1,
    )
    assert ns.procedures.stats(first.id) == stats
    second = ns.procedures.refine("release", [TAG, UPLOAD])
    fresh = ns.procedures.record_success("release")
    assert (fresh.node_id, fresh.times_applied, fresh.success_count) == (second.id, 1, 1)
    with pytest.raises(NodeSupersededError):
        ns.procedures.record_success(first.id)
    with pytest.raises(InvalidInputError):
        ns.procedures.record_success("release", success="yes")
    with pytest.raises(ProcedureNotFoundError):
        ns.procedures.record_success("deploy")


# --- concurrency ---------------------------------------------------------------


def _run_together(calls: list[Callable[[], Any]]) -> tuple[list[Any], list[BaseException]]:
    results: list[Any] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> None:
        start.wait()
        try:
            results.append(call())
        except BaseException as exc:  # collected and asserted by the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors


def test_concurrent_add_if_new_of_one_name_leaves_one_current_version(ns):
    add = partial(ns.procedures.add_if_new, "release", description="Ship.")
    variants = ([TAG], [BUILD], [UPLOAD], [TAG, UPLOAD])
    results, errors = _run_together([partial(add, steps=steps) for steps in variants])
    assert errors == []
    assert len({node.id for node in results}) == 1
    assert [node.id for node in ns.procedures.all()] == [results[0].id]


def test_concurrent_refines_of_one_name_leave_one_current_version(ns):
    first = ns.procedures.add("release", description="Ship.", steps=[TAG])
    variants = ([BUILD], [UPLOAD], [TAG, BUILD], [TAG, UPLOAD])
    results, errors = _run_together(
        [partial(ns.procedures.refine, "release", steps) for steps in variants]
    )
    assert errors == []
    current = ns.procedures.all()
    assert len(current) == 1
    versions = ns.procedures.versions("release")
    assert versions[0].id == first.id and len(versions) == 1 + len(variants)
    assert [node.status for node in versions[:-1]] == [NodeStatus.SUPERSEDED] * len(variants)
    assert versions[-1].id == current[0].id
    assert {node.id for node in results} == {node.id for node in versions[1:]}
