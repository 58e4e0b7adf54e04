"""Proposals for the review-queue tests."""

from __future__ import annotations

from memstore.namespace import Namespace


def propose(ns: Namespace, operation: dict[str, object]) -> int:
    """The id of a proposal of ``operation``, made in the wake phase (it must be accepted
    into the review queue)."""
    proposed = ns.apply(
        [{"op": "propose", "operation": operation, "rationale": "r", "evidence": ["turn:2"]}],
        phase="wake",
        actor="agent",
    )
    assert proposed.applied, proposed.summary()
    proposal = proposed.results[0].proposal_id
    assert proposal is not None
    return int(proposal)
