"""The model-free consolidator: what sleep does with short-term memory when no model is asked.

Given the short-term memories under pressure, it proposes operations that
account for every one of them:

1. exact duplicates (same target, same claim once case, spacing and final
   punctuation are ignored) are pruned in favour of the most salient copy;
2. the rest are clustered per target, greedily by embedding similarity
   (cosine ≥ ``similarity`` to the cluster's first, most salient member);
3. a cluster with at least ``min_support`` members, or one member salient
   enough (≥ ``distill_salience``), is distilled into one durable memory: the
   most salient member's claim and anatomy, the union of all members' anchors,
   the highest salience, and confidence combined as independent support
   (1 − Π(1 − cᵢ));
4. everything else waits in its target's incubation.

Pure: records in, operations out. A language model can take its place (see
:class:`Distiller`); its operations pass the same law.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from .ops import (
    ANCHOR_MISSING,
    Anatomy,
    ClusterShortTerm,
    Distill,
    MergeIntoIncubation,
    Operation,
    PruneShortTerm,
)


class ShortTermRecord(BaseModel):
    """One short-term memory as sleep sees it."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    id: int
    content: str
    anatomy: Anatomy
    salience: float
    confidence: float
    vector: Any = None
    """Its embedding (a numpy array), when the namespace has one."""


class SleepInput(BaseModel):
    """What a distiller is given: the memories under pressure and the open incubations."""

    model_config = ConfigDict(frozen=True)

    records: list[ShortTermRecord]
    incubations: dict[str, int]
    """Target → its current incubation node."""


class Distiller(Protocol):
    """Anything that turns a :class:`SleepInput` into operations (models or dicts).

    Plug in a language model here: ``ns.sleep(distiller=my_llm_distiller)``.
    Whatever it returns is judged by the law in the ``sleep`` phase, like any
    other batch, and a forced sleep still fails if it leaves residue.
    """

    def __call__(self, given: SleepInput, /) -> Sequence[Operation | dict[str, Any]]: ...


@dataclass(frozen=True)
class Consolidator:
    """The default :class:`Distiller` (see the module docstring for what it does)."""

    similarity: float = 0.8
    min_support: int = 2
    distill_salience: float = 0.7

    def __call__(self, given: SleepInput, /) -> list[Operation]:
        kept, ops = self._prune_duplicates(given.records)
        by_target: dict[str, list[ShortTermRecord]] = {}
        for record in kept:
            by_target.setdefault(normalised(record.anatomy.target), []).append(record)
        for records in by_target.values():
            for cluster in self._clusters(records):
                ops.extend(self._settle(cluster, given.incubations))
        return ops

    def _prune_duplicates(
        self, records: Sequence[ShortTermRecord]
    ) -> tuple[list[ShortTermRecord], list[Operation]]:
        first: dict[tuple[str, str], ShortTermRecord] = {}
        dropped: dict[int, list[int]] = {}
        for record in sorted(records, key=_strongest_first):
            key = (normalised(record.anatomy.target), normalised(record.content))
            if key in first:
                dropped.setdefault(first[key].id, []).append(record.id)
            else:
                first[key] = record
        ops: list[Operation] = [
            PruneShortTerm(ids=ids, reason=f"exact duplicate of short-term memory {keeper}")
            for keeper, ids in dropped.items()
        ]
        return list(first.values()), ops

    def _clusters(self, records: list[ShortTermRecord]) -> list[list[ShortTermRecord]]:
        clusters: list[list[ShortTermRecord]] = []
        heads: list[np.ndarray[Any, Any] | None] = []
        for record in sorted(records, key=_strongest_first):
            vector = _unit(record.vector)
            for cluster, head in zip(clusters, heads, strict=True):
                if (
                    vector is not None
                    and head is not None
                    and float(head @ vector) >= self.similarity
                ):
                    cluster.append(record)
                    break
            else:
                clusters.append([record])
                heads.append(vector)
        return clusters

    def _settle(
        self, cluster: list[ShortTermRecord], incubations: dict[str, int]
    ) -> list[Operation]:
        head = cluster[0]
        ids = [record.id for record in cluster]
        target = head.anatomy.target
        if len(cluster) < self.min_support and head.salience < self.distill_salience:
            return [
                MergeIntoIncubation(
                    sources=ids, target=target, incubation_id=incubations.get(normalised(target))
                )
            ]
        anchors = list(
            dict.fromkeys(
                anchor
                for record in cluster
                for anchor in record.anatomy.anchors
                if anchor != ANCHOR_MISSING
            )
        )[:64]
        doubt = float(np.prod([1.0 - record.confidence for record in cluster]))
        distill = Distill(
            sources=ids,
            anatomy=head.anatomy.model_copy(update={"anchors": anchors or [ANCHOR_MISSING]}),
            content=head.content,
            salience=max(record.salience for record in cluster),
            confidence=round(1.0 - doubt, 6),
        )
        if len(cluster) == 1:
            return [distill]
        return [ClusterShortTerm(ids=ids, label=target), distill]


def _strongest_first(record: ShortTermRecord) -> tuple[float, int]:
    return (-record.salience, record.id)


_SPACE = re.compile(r"\s+")


def normalised(text: str) -> str:
    """Text compared case-, spacing- and final-punctuation-insensitively."""
    return _SPACE.sub(" ", text.casefold()).strip().rstrip(".!?;:, ")


def _unit(vector: Any) -> np.ndarray[Any, Any] | None:
    if vector is None:
        return None
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else None


__all__ = ["Consolidator", "Distiller", "ShortTermRecord", "SleepInput", "normalised"]
