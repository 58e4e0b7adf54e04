"""The lessons tier: rules learned from experience, with a confidence that fades when unused.

A lesson is a ``semantic`` node of type ``Lesson`` in tier ``lessons``: its
content is the rule, ``source`` says where it was learned and ``confidence`` is
its initial confidence. What experience teaches later lives in
``memstore.node_state`` (times applied, current confidence), apart from the
authored fact; a lesson's *effective* confidence is its current confidence
when one was recorded, else its initial one. Removing, capping and decaying
never delete: they tombstone, with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, StringConstraints, field_validator
from sqlalchemy.engine import Connection

from memstore.errors import InvalidInputError
from memstore.graph.content import checked_content
from memstore.graph.entries import bump_state, count_current
from memstore.graph.lessons import lesson_rows, similar_rows
from memstore.graph.rows import to_node
from memstore.inputs import checked_reason, validated
from memstore.models import Hit, MemoryInput, Node, Unit
from memstore.tiers.common import LESSONS, lock_key, remember_fresh, unit

if TYPE_CHECKING:
    from memstore.services.recall import Recaller
    from memstore.services.scope import Scope
    from memstore.tx import NamespaceTransaction

LESSON_TYPE = "Lesson"
LESSON_KIND = "semantic"

# Two rules are near-duplicates when their lower-cased word sets overlap this
# much (Jaccard) ...
JACCARD_DUPLICATE = 0.7
# ... or when the embedder's vectors are this close (cosine). 0.9 is where a
# sentence model such as MiniLM sees a paraphrase ("Park the car in the garage"
# / "Leave the car in the garage"), while rules that merely share a topic stay
# well below it. The hashing embedder only sees shared words and trigrams: with
# it the word-overlap test does nearly all the work.
COSINE_DUPLICATE = 0.9
# Up to this many current lessons, add_if_new compares the rule with every one
# of them (exact, and race-free under the tier's lock); above it, with the
# hybrid-recall candidates within the tier.
COMPARE_ALL_MAX = 5000
RECALL_CANDIDATES = 20

_WORD = re.compile(r"\w+")


class Lesson(BaseModel):
    """A current lesson with what experience taught about it."""

    model_config = ConfigDict(frozen=True)

    node: Node
    confidence: float
    """Effective confidence: the current one if recorded, else the node's initial one."""
    times_applied: int

    @property
    def id(self) -> int:
        """The lesson's node id."""
        return self.node.id

    @property
    def rule(self) -> str:
        """The rule (the node's content)."""
        return self.node.content


class DecayResult(BaseModel):
    """What :meth:`Lessons.decay_unused` did."""

    model_config = ConfigDict(frozen=True)

    decayed: int
    """Never-applied lessons whose confidence was multiplied (the retired included)."""
    retired: list[int]
    """Ids of those that fell below the minimum and were tombstoned."""


class LessonInput(BaseModel):
    """What :meth:`Lessons.add` accepts (the rule's size is checked against the settings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    source: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
    confidence: Unit

    @field_validator("confidence", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("confidence must be a number from 0 to 1")
        return value


def words(text: str) -> set[str]:
    """The lower-cased word set Jaccard compares.

    >>> sorted(words("Test, then test again!"))
    ['again', 'test', 'then']
    """
    return set(_WORD.findall(text.lower()))


def jaccard(a: set[str], b: set[str]) -> float:
    """Shared words over all words, |a & b| / |a | b| (0 for two empty sets).

    >>> jaccard({"a", "b"}, {"b", "c"})
    0.3333333333333333
    """
    union = a | b
    return len(a & b) / len(union) if union else 0.0


class Lessons:
    """Rules learned from experience: ``ns.lessons``.

    >>> rule = ns.lessons.add("Run the tests before committing",   # doctest: +SKIP
    ...                       source="retro 2026-05-01", confidence=0.7)
    >>> ns.lessons.record_applied(rule.id).times_applied         # doctest: +SKIP
    1
    """

    def __init__(self, ns: Scope, recaller: Recaller):
        self.ns = ns
        self.recaller = recaller

    # --- writing ----------------------------------------------------------------

    def add(
        self, rule: str, *, source: str, confidence: float, tags: Sequence[str] | None = None
    ) -> Node:
        """Store a lesson; returns its node.

        Adding the rule of a current lesson again returns that lesson
        (ingest is idempotent); a removed lesson's rule is stored anew.
        Raises :class:`~memstore.errors.InvalidInputError` for an empty rule,
        a missing source, a confidence outside [0, 1] or a bad tag (``tags``:
        docs/recall.md, "Tags").
        """
        item, vector = self._prepared(rule, source, confidence, tags)
        with self.ns.transaction() as tx:
            return remember_fresh(tx, item, vector=vector)

    def add_if_new(
        self, rule: str, *, source: str, confidence: float, tags: Sequence[str] | None = None
    ) -> Node:
        """The current lesson that ``rule`` nearly duplicates, else a new lesson.

        Near-duplicate: word-overlap Jaccard ≥ :data:`JACCARD_DUPLICATE` or
        cosine similarity ≥ :data:`COSINE_DUPLICATE` (the most similar wins).
        Forgotten lessons do not count. Concurrent calls are serialised, so two
        near-duplicates added at once are stored once. ``tags`` are a new lesson's.
        """
        item, vector = self._prepared(rule, source, confidence, tags)
        candidates = self._recall_candidates(item.content)
        with self.ns.transaction() as tx:
            lock_key(tx, LESSONS)
            existing = self._duplicate(tx.conn, item.content, vector[0], candidates)
            if existing is not None:
                return existing
            return remember_fresh(tx, item, vector=vector)

    def remove(self, lesson_id: int, *, reason: str = "removed") -> Node:
        """Tombstone a current lesson (hidden, never deleted); returns it, now tombstoned."""
        reason = checked_reason(reason)
        with self.ns.transaction() as tx:
            lock_key(tx, LESSONS)
            self._current_lesson(tx, lesson_id)
            tx.forget(lesson_id, reason=reason)
            return tx.node(lesson_id)

    def record_applied(self, lesson_id: int) -> Lesson:
        """Count one application of a current lesson; returns it with the new count.

        An applied lesson no longer decays (:meth:`decay_unused`).
        """
        with self.ns.transaction() as tx:
            node = self._current_lesson(tx, lesson_id)
            state = bump_state(tx.conn, tx.id, node.id, applied=1)
            confidence = state["current_confidence"]
            return Lesson(
                node=node,
                confidence=node.confidence if confidence is None else float(confidence),
                times_applied=int(state["times_applied"]),
            )

    def enforce_cap(self, max_lessons: int) -> list[int]:
        """Keep at most ``max_lessons`` current lessons; tombstone the weakest; returns their ids.

        Weakest: lowest effective confidence, then fewest applications, then
        oldest. Each tombstone's reason names the cap.
        """
        if isinstance(max_lessons, bool) or not isinstance(max_lessons, int) or max_lessons < 0:
            raise InvalidInputError(
                "max_lessons must be a non-negative integer", field="max_lessons"
            )
        with self.ns.transaction() as tx:
            lock_key(tx, LESSONS)
            weakest = self._lessons(tx.conn)[max_lessons:]
            for lesson in weakest:
                tx.forget(
                    lesson.id,
                    reason=(
                        f"lesson cap of {max_lessons} exceeded: retired as one of the weakest"
                        f" (confidence {lesson.confidence:.3f},"
                        f" applied {lesson.times_applied} times)"
                    ),
                )
            return [lesson.id for lesson in weakest]

    def decay_unused(self, factor: float, min_confidence: float) -> DecayResult:
        """Multiply the confidence of never-applied lessons by ``factor``; retire the faint.

        The new value is recorded as the lesson's current confidence; a lesson
        that falls below ``min_confidence`` is tombstoned with a reason. Both
        arguments are numbers from 0 to 1. One transaction: all or nothing.
        """
        factor = unit(factor, "factor")
        min_confidence = unit(min_confidence, "min_confidence")
        with self.ns.transaction() as tx:
            return self._decay_in(tx, factor, min_confidence)

    # --- reading ----------------------------------------------------------------

    def get(self, lesson_id: int, *, privacy_ceiling: int | None = None) -> Lesson:
        """A current lesson with its effective confidence and applications (a lesson above
        ``privacy_ceiling`` is not found)."""
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            self._current_lesson(tx, lesson_id)
            return self._lessons(tx.conn, lesson_id=lesson_id)[0]

    def all(self, *, privacy_ceiling: int | None = None) -> list[Lesson]:
        """Every current lesson up to ``privacy_ceiling`` (default: the store's), strongest
        first."""
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return self._lessons(tx.conn)

    def count(self, *, privacy_ceiling: int | None = None) -> int:
        """How many current lessons there are (up to ``privacy_ceiling``)."""
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return count_current(tx.conn, self.ns, LESSONS)

    def high_confidence(
        self, threshold: float = 0.8, *, privacy_ceiling: int | None = None
    ) -> list[Lesson]:
        """Current lessons whose effective confidence is at least ``threshold``, strongest first
        (up to ``privacy_ceiling``)."""
        threshold = unit(threshold, "threshold")
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return self._lessons(tx.conn, min_confidence=threshold)

    def search(
        self, query: str, limit: int = 10, *, privacy_ceiling: int | None = None
    ) -> list[Hit]:
        """The ``limit`` current lessons most relevant to ``query`` (hybrid recall), best first
        (up to ``privacy_ceiling``)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInputError("limit must be an integer from 1 to 1000", field="limit")
        return self.recaller.recall(
            query,
            k=limit,
            tiers=[LESSONS],
            node_types=[LESSON_TYPE],
            privacy_ceiling=privacy_ceiling,
        )

    def find_duplicate(self, rule: str, *, privacy_ceiling: int | None = None) -> Node | None:
        """The current lesson ``rule`` nearly duplicates (see :meth:`add_if_new`), if any,
        among those up to ``privacy_ceiling``."""
        text = checked_content(rule, limit=self.ns.settings.max_content_bytes, field="rule")
        vector = self.ns.embedder.embed([text])[0]
        candidates = self._recall_candidates(text, privacy_ceiling)
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return self._duplicate(tx.conn, text, vector, candidates)

    # --- helpers ----------------------------------------------------------------

    def _prepared(
        self, rule: str, source: str, confidence: float, tags: Sequence[str] | None = None
    ) -> tuple[MemoryInput, np.ndarray[Any, Any]]:
        """The lesson's node input and its vector, computed before any transaction opens."""
        lesson = validated(LessonInput, rule=rule, source=source, confidence=confidence)
        text = checked_content(lesson.rule, limit=self.ns.settings.max_content_bytes, field="rule")
        item = validated(
            MemoryInput,
            content=text,
            kind=LESSON_KIND,
            node_type=LESSON_TYPE,
            tier=LESSONS,
            source=lesson.source,
            confidence=lesson.confidence,
            tags=tags,
        )
        return item, self.ns.vectors([item], [text])

    def _recall_candidates(self, rule: str, privacy_ceiling: int | None = None) -> list[int] | None:
        """Ids to compare a rule with; None means every current lesson."""
        if self.count(privacy_ceiling=privacy_ceiling) <= COMPARE_ALL_MAX:
            return None
        hits = self.recaller.recall(
            rule,
            k=RECALL_CANDIDATES,
            tiers=[LESSONS],
            node_types=[LESSON_TYPE],
            privacy_ceiling=privacy_ceiling,
        )
        return [hit.node.id for hit in hits]

    def _duplicate(
        self,
        conn: Connection,
        rule: str,
        vector: np.ndarray[Any, Any],
        candidates: list[int] | None,
    ) -> Node | None:
        """The most similar current lesson that counts as a near-duplicate of ``rule``."""
        rows = similar_rows(
            conn,
            self.ns.id,
            LESSONS,
            LESSON_TYPE,
            model=self.ns.embedder.name,
            vector=vector,
            candidates=candidates,
        )
        rule_words = words(rule)
        best: tuple[float, Node] | None = None
        for row in rows:
            overlap = jaccard(rule_words, words(row["content"]))
            cosine = float(row["similarity"]) if row["similarity"] is not None else 0.0
            if overlap < JACCARD_DUPLICATE and cosine < COSINE_DUPLICATE:
                continue
            score = max(overlap, cosine)
            if best is None or score > best[0]:
                best = (score, to_node(row, self.ns.name))
        return best[1] if best is not None else None

    def _current_lesson(self, tx: NamespaceTransaction, lesson_id: int) -> Node:
        """The node if it is a current lesson; otherwise the error that says why not."""
        node = tx.current(lesson_id)
        if node.tier != LESSONS or node.node_type != LESSON_TYPE:
            raise InvalidInputError(f"node {lesson_id} is not a lesson", field="lesson_id")
        return node

    def _lessons(self, conn: Connection, **only: Any) -> list[Lesson]:
        """Current lessons with their learned state, strongest first (``only``: the filters
        of :func:`~memstore.graph.lessons.lesson_rows`)."""
        return [
            Lesson(
                node=to_node(row, self.ns.name),
                confidence=float(row["effective"]),
                times_applied=int(row["applied"]),
            )
            for row in lesson_rows(conn, self.ns.id, LESSONS, LESSON_TYPE, **only)
        ]

    def _decay_in(
        self, tx: NamespaceTransaction, factor: float, min_confidence: float
    ) -> DecayResult:
        """:meth:`decay_unused` inside ``tx`` (a maintenance pass's), with checked numbers."""
        lock_key(tx, LESSONS)
        unused = self._lessons(tx.conn, unused=True)
        retired: list[int] = []
        for lesson in unused:
            # Compared as stored (REAL), so what a reader sees agrees with the verdict.
            lowered = float(np.float32(lesson.confidence * factor))
            bump_state(tx.conn, tx.id, lesson.id, confidence=lowered)
            if lowered < float(np.float32(min_confidence)):
                tx.forget(
                    lesson.id,
                    reason=(
                        f"unused lesson decayed to confidence {lowered:.3f},"
                        f" below the minimum {min_confidence:.3f}"
                    ),
                )
                retired.append(lesson.id)
        return DecayResult(decayed=len(unused), retired=retired)


__all__ = [
    "COSINE_DUPLICATE",
    "JACCARD_DUPLICATE",
    "DecayResult",
    "Lesson",
    "LessonInput",
    "Lessons",
    "jaccard",
    "words",
]
