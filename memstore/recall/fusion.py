"""Fusing the semantic and lexical signals into one ranking.

``weighted`` (the default): each signal is min-max normalised over the
candidates, then ``w·similarity + (1 - w)·lexical``. On LoCoMo this beat
reciprocal rank fusion (docs/benchmark-notes.md), as an outside calibration found
too (0.657 vs 0.568 turn recall@10). ``rrf``: Σ 1 / (RRF_K + rank).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

RRF_K = 60


def _minmax(values: Mapping[int, float], over: Collection[int] | None = None) -> dict[int, float]:
    """Values scaled to [0, 1] by the bounds of those in ``over`` (default: all); a value
    outside them is clamped."""
    bounds = [v for i, v in values.items() if over is None or i in over]
    if not bounds:
        return {}
    low, high = min(bounds), max(bounds)
    span = high - low
    return {
        i: min(1.0, max(0.0, (v - low) / span)) if span > 0 else float(v >= low)
        for i, v in values.items()
    }


def weighted(
    signals: Mapping[int, tuple[float | None, float]],
    semantic_weight: float,
    over: Collection[int] | None = None,
) -> dict[int, float]:
    """Min-max normalised weighted sum; a missing signal counts as its minimum.

    ``over``: the candidates whose bounds normalise (default: all). Graph
    evidence normalises by the candidates the signals found, so the
    neighbours it adds leave their scores as they were.
    """
    similarity = _minmax({i: s for i, (s, _) in signals.items() if s is not None}, over)
    lexical = _minmax({i: lex for i, (_, lex) in signals.items() if lex > 0}, over)
    return {
        i: semantic_weight * similarity.get(i, 0.0) + (1 - semantic_weight) * lexical.get(i, 0.0)
        for i in signals
    }


def with_neighbours(
    scores: Mapping[int, float], edges: Iterable[tuple[int, int, float]], share: float
) -> dict[int, float]:
    """Graph evidence: score(n) + share × Σ weight(n, m) × score(m) over n's edges
    (both directions; a node missing from ``scores`` adds nothing)."""
    summed = dict(scores)
    for a, b, weight in edges:
        if a in scores and b in scores:
            summed[a] += share * weight * scores[b]
            summed[b] += share * weight * scores[a]
    return summed


def reciprocal_rank(rankings: Sequence[Sequence[int]]) -> dict[int, float]:
    """Reciprocal rank fusion over any number of rankings (best first)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for position, node_id in enumerate(ranking, start=1):
            fused[node_id] = fused.get(node_id, 0.0) + 1.0 / (RRF_K + position)
    return fused


def with_scope(
    scores: Mapping[int, float],
    base: Mapping[int, float],
    scopes: Mapping[int, str],
    share: float,
) -> dict[int, float]:
    """Scope evidence: score(n) + share × the best ``base`` score among the other nodes of
    n's scope (nodes without a scope gain nothing)."""
    best: dict[str, list[float]] = {}
    for node_id, scope in scopes.items():
        if node_id in base:
            top = best.setdefault(scope, [0.0, 0.0])  # the two best of the scope
            value = base[node_id]
            if value > top[0]:
                top[:] = [value, top[0]]
            elif value > top[1]:
                top[1] = value
    summed = dict(scores)
    for node_id in summed:
        found = best.get(scopes.get(node_id, ""))
        if found is None:
            continue
        first, second = found
        other = second if base.get(node_id, 0.0) >= first else first
        summed[node_id] += share * other
    return summed


def lifted(scores: Mapping[int, float], members: Collection[int], share: float) -> dict[int, float]:
    """Evidence that picks nodes out (the speaker the query names, a date it names): the
    nodes in ``members`` gain ``share`` × the best score in ``scores``; the others keep
    theirs."""
    if not members or not scores:
        return dict(scores)
    lift = share * max(scores.values())
    return {i: v + lift if i in members else v for i, v in scores.items()}
