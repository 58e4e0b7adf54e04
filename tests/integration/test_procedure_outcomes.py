"""Procedures learn from outcomes: episodes, golden and rejected examples, the served
version, role scopes — on real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memstore.errors import InvalidInputError, NodeNotFoundError
from tests.conftest import row_counts

TAG = {"tool": "git", "purpose": "Tag the release", "instruction": "git tag -s v$VERSION"}
BUILD = {"tool": "uv", "purpose": "Build the wheel", "instruction": "uv build --wheel"}
UPLOAD = {"tool": "twine", "purpose": "Publish it", "instruction": "twine upload dist/*"}


def _procedures(packet):
    return next(s.items for s in packet.sections if s.name == "procedures")


def _release(ns, **extra):
    return ns.procedures.add(
        "release", description="Ship a new version to PyPI.", steps=[TAG, BUILD], **extra
    )


def test_outcomes_keep_the_episode_and_count_in_the_record(ns):
    first = _release(ns)
    turn = ns.remember("The release of 1.2 went out cleanly", kind="episodic")
    golden = ns.procedures.record_outcome("release", True, episode=turn.id, note="clean")
    rejected = ns.procedures.record_outcome("release", False, episode="run-42")
    assert (golden.node_id, golden.success, golden.episode_node_id, golden.note) == (
        first.id,
        True,
        turn.id,
        "clean",
    )
    assert (rejected.episode_run, rejected.episode_node_id) == ("run-42", None)
    stats = ns.procedures.stats("release")
    assert (stats.times_applied, stats.success_count) == (2, 1)
    assert [o.id for o in ns.procedures.outcomes("release")] == [rejected.id, golden.id]
    assert [o.id for o in ns.procedures.outcomes("release", success=True)] == [golden.id]
    assert [o.id for o in ns.procedures.outcomes("release", success=False)] == [rejected.id]


def test_outcomes_span_versions_and_a_late_outcome_names_its_version(ns):
    first = _release(ns)
    second = ns.procedures.refine("release", [TAG, BUILD, UPLOAD])
    late = ns.procedures.record_outcome(first.id, True, episode="run-1")
    fresh = ns.procedures.record_outcome("release", False, episode="run-2")
    assert (late.node_id, fresh.node_id) == (first.id, second.id)
    assert {o.node_id for o in ns.procedures.outcomes("release")} == {first.id, second.id}
    assert ns.procedures.stats("release").times_applied == 1  # the current version's own


def test_a_bad_outcome_changes_nothing(ns, database_url):
    _release(ns)
    before = row_counts(database_url)
    for call in (
        lambda: ns.procedures.record_outcome("release", "yes"),
        lambda: ns.procedures.record_outcome("release", True, episode=True),
        lambda: ns.procedures.record_outcome("release", True, episode=""),
        lambda: ns.procedures.record_outcome("release", True, note="x" * 4001),
        lambda: ns.procedures.outcomes("release", limit=0),
    ):
        with pytest.raises(InvalidInputError):
            call()
    with pytest.raises(NodeNotFoundError):
        ns.procedures.record_outcome("release", True, episode=10**12)
    assert row_counts(database_url) == before


def test_the_packet_serves_the_version_with_the_better_record(ns):
    first = _release(ns)
    for _ in range(4):
        ns.procedures.record_outcome("release", True)
    second = ns.procedures.refine("release", [TAG, BUILD, UPLOAD])
    ns.procedures.record_outcome("release", False, episode="run-9")
    packet = ns.recall_context("how do I ship a release to PyPI?", 4000)
    served = [item.id for item in _procedures(packet)]
    assert served == [first.id]  # 5/6 smoothed beats 1/3
    for _ in range(10):  # 11/13 smoothed beats 5/6
        ns.procedures.record_outcome("release", True)
    packet = ns.recall_context("how do I ship a release to PyPI?", 4000)
    assert [item.id for item in _procedures(packet)] == [second.id]


def test_ties_go_to_the_newest_version(ns):
    _release(ns)
    second = ns.procedures.refine("release", [TAG, BUILD, UPLOAD])
    packet = ns.recall_context("how do I ship a release to PyPI?", 4000)
    assert [item.id for item in _procedures(packet)] == [second.id]


def test_roles_scope_what_the_packet_serves(ns):
    _release(ns, roles=["release-manager"])
    ns.procedures.add(
        "rollback", description="Roll a bad PyPI release back.", steps=[TAG], roles=None
    )
    assert ns.procedures.roles("release") == ["release-manager"]
    query = "how do I ship or roll back a release on PyPI?"

    def served(role):
        packet = ns.recall_context(query, 4000, role=role)
        return sorted(item.content.split("\n")[0] for item in _procedures(packet))

    assert served("release-manager") == ["Procedure: release", "Procedure: rollback"]
    assert served("reviewer") == ["Procedure: rollback"]
    assert served(None) == ["Procedure: release", "Procedure: rollback"]
    # A refinement keeps the roles unless it names new ones.
    ns.procedures.refine("release", [TAG, BUILD, UPLOAD])
    assert ns.procedures.roles("release") == ["release-manager"]
    ns.procedures.refine("release", [TAG, UPLOAD], roles=["reviewer", "reviewer"])
    assert ns.procedures.roles("release") == ["reviewer"]
    assert served("reviewer") == ["Procedure: release", "Procedure: rollback"]


def test_bad_roles_are_refused(ns, database_url):
    before = row_counts(database_url)
    for roles in ("admin", [""], ["x" * 201], [1], ["r"] * 51):
        with pytest.raises(InvalidInputError):
            _release(ns, roles=roles)
    with pytest.raises(InvalidInputError):
        ns.recall_context("release", 1000, role="")
    assert row_counts(database_url) == before


def test_the_docs_example_serves_what_it_says(ns):
    # docs/tiers.md, "Which version a packet serves": the block runs as written.
    text = (Path(__file__).resolve().parents[2] / "docs" / "tiers.md").read_text()
    block = text.split("**Which version a packet serves.**", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    *statements, last, expected = code.rstrip("\n").split("\n")
    scope: dict[str, object] = {"ns": ns}
    exec("\n".join(statements), scope)
    assert repr(eval(last, scope)) == expected.split("#", 1)[1].split("--")[0].strip()


def test_an_erasure_blanks_the_words_of_the_outcomes_it_touches(ns, database_url):
    release = _release(ns)
    turn = ns.remember("Alice's deploy on her laptop failed", kind="episodic")
    about_turn = ns.procedures.record_outcome("release", False, episode=turn.id, note="Alice")
    other = ns.procedures.record_outcome("release", True, episode="run-alice", note="kept")
    ns.redact(turn.id, reason="personal data")
    by_id = {o.id: o for o in ns.procedures.outcomes("release")}
    assert by_id[about_turn.id].note is None
    assert by_id[about_turn.id].actor.startswith("erased:")
    assert by_id[other.id].note == "kept"  # another episode: untouched
    ns.redact(release.id, reason="personal data")
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT note, episode_run FROM memstore.procedure_outcomes"
            " WHERE namespace_id = %s ORDER BY id",
            (ns.id,),
        ).fetchall()
    assert rows == [(None, None), (None, "redacted")]


def test_an_outcome_cannot_be_rewritten(ns, conn):
    _release(ns)
    outcome = ns.procedures.record_outcome("release", True, note="fine")
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(
            "UPDATE memstore.procedure_outcomes SET note = NULL"
            " WHERE namespace_id = %s AND id = %s",
            (ns.id, outcome.id),
        )
    assert "record a new outcome" in (caught.value.diag.message_primary or "")
