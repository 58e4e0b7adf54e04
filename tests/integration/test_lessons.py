"""The lessons tier: add, near-duplicates, applications, cap and decay — all on real PostgreSQL."""

from __future__ import annotations

import itertools
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar

import psycopg
import pytest
from psycopg import sql

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from memstore.embedding.base import Vectors
from memstore.errors import DatabaseError, InvalidInputError, NodeNotFoundError, NodeTombstonedError
from memstore.models import NodeStatus
from memstore.namespace import Namespace
from memstore.tiers.lessons import COSINE_DUPLICATE, JACCARD_DUPLICATE, jaccard, words
from tests.conftest import row_counts


def test_add_stores_a_lesson_node_with_its_provenance(ns):
    node = ns.lessons.add(
        "Run the test suite before committing", source="retro 2026-05-01", confidence=0.7
    )
    assert (node.tier, node.node_type, node.kind) == ("lessons", "Lesson", "semantic")
    assert node.content == "Run the test suite before committing"
    assert node.source == "retro 2026-05-01"
    assert node.confidence == pytest.approx(0.7)
    assert node.status is NodeStatus.CURRENT
    lesson = ns.lessons.get(node.id)
    assert (lesson.rule, lesson.times_applied) == (node.content, 0)
    assert lesson.confidence == pytest.approx(0.7)
    assert ns.lessons.count() == 1


def test_adding_the_same_rule_again_returns_the_current_lesson(ns):
    first = ns.lessons.add("Pin dependency versions", source="incident 12", confidence=0.6)
    again = ns.lessons.add("  Pin dependency   versions ", source="incident 13", confidence=0.9)
    assert again.id == first.id
    assert ns.lessons.count() == 1


def test_a_removed_rule_added_again_is_a_new_current_lesson(ns):
    first = ns.lessons.add("Pin dependency versions", source="incident 12", confidence=0.6)
    ns.lessons.remove(first.id)
    second = ns.lessons.add("Pin dependency versions", source="incident 14", confidence=0.6)
    assert second.id != first.id
    assert second.status is NodeStatus.CURRENT and second.source == "incident 14"
    assert ns.get(first.id).status is NodeStatus.TOMBSTONED


@pytest.mark.parametrize(
    ("rule", "source", "confidence", "field"),
    [
        ("", "retro", 0.5, "rule"),
        ("   ", "retro", 0.5, "rule"),
        ("Keep commits small", "retro", 1.5, "confidence"),
        ("Keep commits small", "retro", -0.1, "confidence"),
        ("Keep commits small", "retro", float("nan"), "confidence"),
        ("Keep commits small", "retro", True, "confidence"),
        ("Keep commits small", None, 0.5, "source"),
        ("Keep commits small", "  ", 0.5, "source"),
        ("Keep\x00commits small", "retro", 0.5, "rule"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    ns, database_url, rule, source, confidence, field
):
    before = row_counts(database_url)
    for add in (ns.lessons.add, ns.lessons.add_if_new):
        with pytest.raises(InvalidInputError) as caught:
            add(rule, source=source, confidence=confidence)
        assert caught.value.field == field
    assert row_counts(database_url) == before


# --- near-duplicates -----------------------------------------------------------


def test_add_if_new_returns_a_near_duplicate_by_word_overlap(ns):
    rule = "Always run the full test suite before committing code"
    near = "Always run the full test suite before you commit code"
    assert jaccard(words(rule), words(near)) >= JACCARD_DUPLICATE
    first = ns.lessons.add_if_new(rule, source="retro", confidence=0.7)
    again = ns.lessons.add_if_new(near, source="retro 2", confidence=0.9)
    assert again.id == first.id and again.content == rule
    assert ns.lessons.find_duplicate(near) == first
    assert ns.lessons.count() == 1


def test_add_if_new_stores_a_rule_that_is_only_related(ns):
    first = ns.lessons.add_if_new(
        "Always run the full test suite before committing code", source="retro", confidence=0.7
    )
    other = ns.lessons.add_if_new(
        "Run the linter before pushing code", source="retro", confidence=0.7
    )
    assert other.id != first.id
    assert ns.lessons.find_duplicate("Prefer tea over coffee") is None
    assert ns.lessons.count() == 2


def test_a_tombstoned_lesson_is_not_a_duplicate(ns):
    first = ns.lessons.add_if_new("Never deploy on a Friday", source="retro", confidence=0.8)
    ns.lessons.remove(first.id, reason="we deploy continuously now")
    again = ns.lessons.add_if_new("Never deploy on a Friday", source="retro 2", confidence=0.8)
    assert again.id != first.id and again.status is NodeStatus.CURRENT
    assert ns.lessons.count() == 1


class SynonymEmbedder:
    """The hashing embedder over words mapped to a canonical synonym: a tiny "semantic" model.

    It lets the embedding path be tested with rules that share few words.
    """

    SYNONYMS: ClassVar[dict[str, str]] = {"automobile": "car", "vehicle": "car", "leave": "park"}

    def __init__(self) -> None:
        self._hashing = HashingEmbedder()

    @property
    def name(self) -> str:
        return "synonym-hashing-test-v1"

    @property
    def dims(self) -> int:
        return self._hashing.dims

    def embed(self, texts: Sequence[str]) -> Vectors:
        canonical = [
            " ".join(self.SYNONYMS.get(w, w) for w in re.findall(r"\w+", text.lower()))
            for text in texts
        ]
        return self._hashing.embed(canonical)


@pytest.fixture(scope="module")
def synonym_store(database_url: str) -> Iterator[MemoryStore]:
    with MemoryStore.open(database_url, embedder=SynonymEmbedder()) as opened:
        yield opened


def test_add_if_new_returns_a_near_duplicate_by_embedding(synonym_store):
    ns: Namespace = synonym_store.namespace(f"test-{uuid.uuid4().hex[:10]}")
    rule = "Park the car in the garage overnight"
    paraphrase = "Leave the automobile in the garage overnight"
    assert jaccard(words(rule), words(paraphrase)) < JACCARD_DUPLICATE
    vectors = ns.embedder.embed([rule, paraphrase])
    assert float(vectors[0] @ vectors[1]) >= COSINE_DUPLICATE
    first = ns.lessons.add_if_new(rule, source="retro", confidence=0.6)
    again = ns.lessons.add_if_new(paraphrase, source="retro 2", confidence=0.6)
    assert again.id == first.id
    # The hashing embedder does not see the paraphrase: there it is a new lesson.
    plain = HashingEmbedder().embed([rule, paraphrase])
    assert float(plain[0] @ plain[1]) < COSINE_DUPLICATE


def test_concurrent_add_if_new_of_near_duplicates_stores_one_lesson(ns):
    rules = [
        "Always run the full test suite before committing code",
        "Always run the full test suite before committing the code",
        "always run the full test suite before committing code!",
        "Always run the full test suite before committing any code",
    ]
    # Every pair is a near-duplicate, so whichever is stored first, the others
    # match it (the relation is not transitive: with a pair that is not, the
    # outcome would depend on the order the threads ran in).
    assert all(
        jaccard(words(a), words(b)) >= JACCARD_DUPLICATE
        for a, b in itertools.combinations(rules, 2)
    )
    ids: list[int] = []
    errors: list[BaseException] = []

    def add(rule: str) -> None:
        try:
            ids.append(ns.lessons.add_if_new(rule, source="retro", confidence=0.7).id)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(rule,)) for rule in rules * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(ids)) == 1
    assert ns.lessons.count() == 1


# --- reading -------------------------------------------------------------------


def test_search_finds_lessons_only(ns):
    rule = ns.lessons.add("Back up the database before a migration", source="ops", confidence=0.8)
    ns.remember("We backed up the database yesterday before the migration")
    ns.lessons.add("Prefer small pull requests", source="review", confidence=0.6)
    hits = ns.lessons.search("database migration backup", limit=5)
    assert hits[0].node.id == rule.id
    assert {hit.node.tier for hit in hits} == {"lessons"}
    with pytest.raises(InvalidInputError) as caught:
        ns.lessons.search("database", limit=0)
    assert caught.value.field == "limit"


def test_high_confidence_uses_the_effective_confidence_strongest_first(ns):
    weak = ns.lessons.add("Write docstrings", source="review", confidence=0.5)
    strong = ns.lessons.add("Never force-push main", source="incident", confidence=0.95)
    edge = ns.lessons.add("Tag every release", source="release", confidence=0.8)
    fading = ns.lessons.add("Ask before refactoring", source="retro", confidence=0.9)
    ns.lessons.decay_unused(0.5, 0.1)  # every one of them unused: halved
    assert [lesson.id for lesson in ns.lessons.high_confidence(0.45)] == [strong.id, fading.id]
    assert ns.lessons.high_confidence(0.4)[-1].id == edge.id
    assert ns.lessons.high_confidence() == []
    assert weak.id in {lesson.id for lesson in ns.lessons.high_confidence(0.25)}
    assert ns.lessons.high_confidence(0.4)[0].confidence == pytest.approx(0.475)


def test_high_confidence_threshold_is_inclusive(ns):
    lesson = ns.lessons.add("Read the error message first", source="retro", confidence=0.7)
    assert [found.id for found in ns.lessons.high_confidence(0.7)] == [lesson.id]


@pytest.mark.parametrize("threshold", [-0.1, 1.1, "high", None, True])
def test_high_confidence_refuses_a_bad_threshold(ns, threshold):
    with pytest.raises(InvalidInputError) as caught:
        ns.lessons.high_confidence(threshold)
    assert caught.value.field == "threshold"


# --- applications --------------------------------------------------------------


def test_record_applied_counts_applications(ns, database_url):
    node = ns.lessons.add("Measure before optimising", source="perf review", confidence=0.6)
    assert ns.lessons.record_applied(node.id).times_applied == 1
    lesson = ns.lessons.record_applied(node.id)
    assert lesson.times_applied == 2 and lesson.confidence == pytest.approx(0.6)
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT times_applied, current_confidence FROM memstore.node_state WHERE node_id = %s",
            (node.id,),
        ).fetchone()
    assert row == (2, None)


def test_record_applied_refuses_what_is_not_a_current_lesson(ns, database_url):
    memory = ns.remember("Alice lives in Lisbon")
    removed = ns.lessons.add("Old rule", source="retro", confidence=0.5)
    ns.lessons.remove(removed.id)
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError):
        ns.lessons.record_applied(memory.id)
    with pytest.raises(NodeTombstonedError):
        ns.lessons.record_applied(removed.id)
    with pytest.raises(NodeNotFoundError):
        ns.lessons.record_applied(10**12)
    assert row_counts(database_url) == before


def test_remove_tombstones_with_a_reason_and_keeps_the_row(ns, database_url):
    node = ns.lessons.add("Use tabs", source="style guide", confidence=0.4)
    removed = ns.lessons.remove(node.id, reason="the team switched to spaces")
    assert removed.status is NodeStatus.TOMBSTONED
    assert ns.get(node.id).content == "Use tabs"
    assert ns.lessons.count() == 0 and ns.lessons.all() == []
    with psycopg.connect(database_url) as conn:
        reason = conn.execute(
            "SELECT reason FROM memstore.tombstones WHERE node_id = %s", (node.id,)
        ).fetchone()
    assert reason == ("the team switched to spaces",)
    with pytest.raises(NodeTombstonedError):
        ns.lessons.remove(node.id)
    with pytest.raises(InvalidInputError):
        ns.lessons.remove(ns.remember("not a lesson").id)


# --- cap and decay -------------------------------------------------------------


def _tombstone_reasons(database_url: str, ids: list[int]) -> dict[int, str]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT node_id, reason FROM memstore.tombstones WHERE node_id = ANY(%s)", (ids,)
        ).fetchall()
    return {node_id: reason for node_id, reason in rows}


def test_enforce_cap_retires_the_weakest_with_a_reason(ns, database_url):
    oldest_weak = ns.lessons.add("Weak and old", source="a", confidence=0.3)
    newer_weak = ns.lessons.add("Weak but newer", source="b", confidence=0.3)
    applied_weak = ns.lessons.add("Weak but applied", source="c", confidence=0.3)
    strong = ns.lessons.add("Strong", source="d", confidence=0.9)
    middling = ns.lessons.add("Middling", source="e", confidence=0.6)
    ns.lessons.record_applied(applied_weak.id)

    retired = ns.lessons.enforce_cap(3)

    assert retired == [newer_weak.id, oldest_weak.id]
    assert [lesson.id for lesson in ns.lessons.all()] == [strong.id, middling.id, applied_weak.id]
    for node_id in retired:
        assert ns.get(node_id).status is NodeStatus.TOMBSTONED  # the row is still there
    reasons = _tombstone_reasons(database_url, retired)
    assert all("cap of 3" in reason for reason in reasons.values())
    assert ns.lessons.enforce_cap(3) == []
    assert len(ns.lessons.enforce_cap(0)) == 3 and ns.lessons.count() == 0


@pytest.mark.parametrize("cap", [-1, 2.5, "10", None, True])
def test_enforce_cap_refuses_a_bad_cap(ns, database_url, cap):
    ns.lessons.add("Some rule", source="a", confidence=0.3)
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError) as caught:
        ns.lessons.enforce_cap(cap)
    assert caught.value.field == "max_lessons"
    assert row_counts(database_url) == before


def test_decay_unused_lowers_and_retires_only_unused_lessons(ns, database_url):
    applied = ns.lessons.add("Applied rule", source="a", confidence=0.5)
    steady = ns.lessons.add("Steady rule", source="b", confidence=0.8)
    faint = ns.lessons.add("Faint rule", source="c", confidence=0.3)
    ns.lessons.record_applied(applied.id)

    result = ns.lessons.decay_unused(0.5, 0.2)

    assert result.decayed == 2 and result.retired == [faint.id]
    assert ns.lessons.get(steady.id).confidence == pytest.approx(0.4)
    assert ns.lessons.get(applied.id).confidence == pytest.approx(0.5)
    assert ns.get(faint.id).status is NodeStatus.TOMBSTONED
    assert ns.get(steady.id).confidence == pytest.approx(0.8)  # the authored value stays
    reason = _tombstone_reasons(database_url, [faint.id])[faint.id]
    assert "0.150" in reason and "0.200" in reason

    again = ns.lessons.decay_unused(0.5, 0.2)
    assert (again.decayed, again.retired) == (1, [])
    assert ns.lessons.get(steady.id).confidence == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("factor", "minimum", "field"),
    [(1.5, 0.1, "factor"), (-0.5, 0.1, "factor"), (0.5, 2, "min_confidence"), ("x", 0.1, "factor")],
)
def test_decay_unused_refuses_bad_arguments(ns, database_url, factor, minimum, field):
    ns.lessons.add("Some rule", source="a", confidence=0.3)
    before = row_counts(database_url)
    with pytest.raises(InvalidInputError) as caught:
        ns.lessons.decay_unused(factor, minimum)
    assert caught.value.field == field
    assert row_counts(database_url) == before


@pytest.fixture
def refuse_tombstone(database_url: str) -> Iterator[Callable[[int], None]]:
    """Make the database refuse to tombstone one node: a real failure halfway through a call."""
    name = f"refuse_{uuid.uuid4().hex[:8]}"
    refused: list[int] = []

    def refuse(node_id: int) -> None:
        refused.append(node_id)
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL(
                    "CREATE FUNCTION public.{name}() RETURNS trigger LANGUAGE plpgsql AS $$"
                    " BEGIN RAISE EXCEPTION 'refused by the test'; END $$;"
                    " CREATE TRIGGER {name} BEFORE INSERT ON memstore.tombstones FOR EACH ROW"
                    " WHEN (NEW.node_id = {node_id}) EXECUTE FUNCTION public.{name}()"
                ).format(name=sql.Identifier(name), node_id=sql.Literal(node_id))
            )

    yield refuse
    if refused:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL(
                    "DROP TRIGGER {name} ON memstore.tombstones; DROP FUNCTION public.{name}()"
                ).format(name=sql.Identifier(name))
            )


def test_a_cap_that_fails_halfway_changes_nothing(ns, database_url, refuse_tombstone):
    ns.lessons.add("Strong", source="a", confidence=0.9)
    first_retired = ns.lessons.add("Weak", source="b", confidence=0.3)
    last_retired = ns.lessons.add("Weakest", source="c", confidence=0.2)
    refuse_tombstone(last_retired.id)
    before = row_counts(database_url)
    with pytest.raises(DatabaseError):
        ns.lessons.enforce_cap(1)
    assert row_counts(database_url) == before
    assert ns.get(first_retired.id).status is NodeStatus.CURRENT
    assert ns.lessons.count() == 3


def test_a_decay_that_fails_halfway_changes_nothing(ns, database_url, refuse_tombstone):
    steady = ns.lessons.add("Steady rule", source="a", confidence=0.8)
    faint = ns.lessons.add("Faint rule", source="b", confidence=0.3)
    refuse_tombstone(faint.id)
    before = row_counts(database_url)
    with pytest.raises(DatabaseError):
        ns.lessons.decay_unused(0.5, 0.2)  # lowers "steady" first, then fails on "faint"
    assert row_counts(database_url) == before
    assert ns.lessons.get(steady.id).confidence == pytest.approx(0.8)
    assert ns.lessons.get(faint.id).confidence == pytest.approx(0.3)
