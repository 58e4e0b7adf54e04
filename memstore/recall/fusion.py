"""Fusing the semantic and lexical signals into one ranking.

``weighted`` (the default): each signal is min-max normalised over the
candidates, then ``w·similarity + (1 - w)·lexical``. On LoCoMo this beat
reciprocal rank fusion (docs/benchmark-notes.md), as an outside calibration found
too (0.657 vs 0.568 turn recall@10). ``rrf``: Σ 1 / (RRF_K + rank).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 60


def _minmax(values: Mapping[int, float]) -> dict[int, float]:
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {i: (v - low) / span if span > 0 else 1.0 for i, v in values.items()}


def weighted(
    signals: Mapping[int, tuple[float | None, float]], semantic_weight: float
) -> dict[int, float]:
    """Min-max normalised weighted sum; a missing signal counts as its minimum."""
    similarity = _minmax({i: s for i, (s, _) in signals.items() if s is not None})
    lexical = _minmax({i: lex for i, (_, lex) in signals.items() if lex > 0})
    return {
        i: semantic_weight * similarity.get(i, 0.0) + (1 - semantic_weight) * lexical.get(i, 0.0)
        for i in signals
    }


def reciprocal_rank(rankings: Sequence[Sequence[int]]) -> dict[int, float]:
    """Reciprocal rank fusion over any number of rankings (best first)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for position, node_id in enumerate(ranking, start=1):
            fused[node_id] = fused.get(node_id, 0.0) + 1.0 / (RRF_K + position)
    return fused
