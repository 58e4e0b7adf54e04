"""What a batch of operations gives back (receipts) and what the review queue holds."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["accepted", "rejected"]


class OpResult(BaseModel):
    """One operation of a batch: the law's verdict and, once applied, what it wrote."""

    model_config = ConfigDict(frozen=True)

    index: int
    """Its position in the batch."""
    op: str | None
    outcome: Outcome
    reason: str | None = None
    """Why it was rejected."""
    applied: bool = False
    """False for an accepted operation of a batch that was not applied."""
    nodes: list[int] = Field(default_factory=list)
    """Nodes it wrote (or found, for an idempotent write)."""
    edges: list[int] = Field(default_factory=list)
    tombstones: list[int] = Field(default_factory=list)
    accounted: list[int] = Field(default_factory=list)
    """Short-term memories it accounted for (distilled, merged or pruned)."""
    proposal_id: int | None = None
    """The proposal it queued or decided."""
    operation_id: int | None = None
    """Its row in ``memstore.operations``."""


class Receipt(BaseModel):
    """The answer to :meth:`~memstore.namespace.Namespace.apply` (and sleep, and review).

    ``applied`` is False when nothing was written: by default one rejected
    operation stops the whole batch. The receipt of an applied batch is also
    stored, one row per operation, in ``memstore.operations``.
    """

    model_config = ConfigDict(frozen=True)

    batch_id: str
    phase: str
    actor: str
    applied: bool
    results: list[OpResult]
    residue: list[int] = Field(default_factory=list)
    """Sleep only: short-term memories still alive after the pass."""

    @property
    def accepted(self) -> list[OpResult]:
        """The operations the law accepted (applied when :attr:`applied`)."""
        return [r for r in self.results if r.outcome == "accepted"]

    @property
    def rejected(self) -> list[OpResult]:
        """The operations the law rejected, each with its reason."""
        return [r for r in self.results if r.outcome == "rejected"]

    @property
    def written(self) -> list[int]:
        """Every node id the applied operations wrote or found."""
        return [node for r in self.results if r.applied for node in r.nodes]

    def summary(self) -> str:
        """One line per rejection, for an error message."""
        lines = [f"#{r.index} {r.op or '?'}: {r.reason}" for r in self.rejected]
        return "; ".join(lines) or "no operation was rejected"


class Proposal(BaseModel):
    """A write waiting for (or past) human review; a row of ``memstore.proposals``."""

    model_config = ConfigDict(frozen=True)

    id: int
    namespace: str
    operation: dict[str, Any]
    rationale: str | None
    evidence: list[str]
    status: Literal["pending", "accepted", "rejected"]
    proposed_by: str | None
    proposed_at: datetime
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision_reason: str | None = None

    @property
    def op(self) -> str:
        """The proposed operation's name."""
        return str(self.operation.get("op", "?"))


__all__ = ["OpResult", "Outcome", "Proposal", "Receipt"]
