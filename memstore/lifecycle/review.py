"""The human review queue: ``ns.review``.

Operations that need review (``crystallize_identity`` always, and whatever the
namespace policy adds) reach the store only as proposals: rows of
``memstore.proposals`` with their rationale and evidence. A reviewer accepts a
proposal (its operation is judged again by the law, then applied) or rejects
it with a reason. The database allows a proposal's status to move only from
pending to accepted or rejected, once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memstore.errors import InvalidInputError, OperationRejectedError, ProposalNotFoundError
from memstore.graph.proposals import proposal_rows
from memstore.inputs import checked_reason
from memstore.law.ops import AcceptProposal, RejectProposal
from memstore.law.receipt import Proposal, Receipt

from .facts import to_proposal
from .service import apply, checked_actor

if TYPE_CHECKING:
    from memstore.services.scope import Scope


class Review:
    """``ns.review``: pending proposals, and the reviewer's two verbs."""

    def __init__(self, ns: Scope):
        self.ns = ns

    def pending(self, *, limit: int = 100, privacy_ceiling: int | None = None) -> list[Proposal]:
        """Pending proposals, oldest first; those about a memory above ``privacy_ceiling``
        (default: the store's), or carrying a privacy above it, are left out."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidInputError("limit must be an integer from 1 to 10000", field="limit")
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:  # creates no namespace
            rows = proposal_rows(tx.conn, self.ns.id, pending=limit)
            return [to_proposal(row, self.ns.name) for row in rows]

    def get(self, proposal_id: int, *, privacy_ceiling: int | None = None) -> Proposal:
        """One proposal, whatever its status. One hidden by ``privacy_ceiling`` (default:
        the store's; see :meth:`pending`) is not found, exactly as a missing id."""
        if isinstance(proposal_id, bool) or not isinstance(proposal_id, int):
            raise InvalidInputError("a proposal id is an integer", field="proposal_id")
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:  # creates no namespace
            found = (
                proposal_rows(tx.conn, self.ns.id, ids=[proposal_id])
                if 0 < proposal_id < 2**63
                else []
            )
        row = found[0] if found else None
        if row is None:
            raise ProposalNotFoundError(
                f"proposal {proposal_id} does not exist in namespace {self.ns.name!r}",
                namespace=self.ns.name,
                target_id=proposal_id,
            )
        return to_proposal(row, self.ns.name)

    def accept(self, proposal_id: int, *, reviewer: str, note: str | None = None) -> Receipt:
        """Accept a pending proposal: the law judges its operation again, then it is applied.

        Raises :class:`~memstore.errors.OperationRejectedError` (nothing written,
        the proposal still pending) when the law rejects it now.
        """
        self.get(proposal_id)
        if note is not None:
            note = checked_reason(note, "note")
        op = AcceptProposal(proposal_id=proposal_id, note=note)
        return self._decide(op, reviewer)

    def reject(self, proposal_id: int, *, reviewer: str, reason: str) -> Proposal:
        """Reject a pending proposal with the reason; returns it as decided."""
        self.get(proposal_id)
        op = RejectProposal(proposal_id=proposal_id, reason=checked_reason(reason))
        self._decide(op, reviewer)
        return self.get(proposal_id)

    def _decide(self, op: AcceptProposal | RejectProposal, reviewer: str) -> Receipt:
        receipt = apply(self.ns, [op], phase="review", actor=checked_actor(reviewer), atomic=True)
        if not receipt.applied:
            raise OperationRejectedError(receipt.summary(), receipt=receipt)
        return receipt


__all__ = ["Review"]
