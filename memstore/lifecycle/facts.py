"""Read what the law needs to know about a batch, inside the batch's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memstore.graph.entries import newest_by_label
from memstore.graph.lineage import current_versions
from memstore.graph.proposals import proposal_rows
from memstore.graph.rows import fetch_edges, fetch_nodes
from memstore.law.ops import (
    AcceptProposal,
    Operation,
    Propose,
    RejectProposal,
    RetireAgencyPressure,
    Unparsed,
    UpsertAgencyPressure,
    parse_operation,
)
from memstore.law.policy import AGENCY, Facts, NodeFacts, ProposalFacts
from memstore.law.receipt import Proposal
from memstore.models import DEFAULT_MAX_DATA_BYTES, Node, NodeStatus

if TYPE_CHECKING:
    from memstore.tx import NamespaceTransaction

# Fields of operations that name nodes.
_NODE_FIELDS = ("node_id", "ids", "sources", "incubation_id", "src", "dst")


@dataclass
class _Refs:
    nodes: set[int] = field(default_factory=set)
    edges: set[int] = field(default_factory=set)
    proposals: set[int] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)

    def add(self, op: Operation | Unparsed) -> None:
        """Note what ``op`` names (and, for a proposal, what its operation names)."""
        if isinstance(op, Unparsed):
            return
        for name in _NODE_FIELDS:
            value = getattr(op, name, None)
            if isinstance(value, int):
                self.nodes.add(value)
            elif isinstance(value, list):
                self.nodes.update(v for v in value if isinstance(v, int))
        if op.op == "forget":
            (self.edges if getattr(op, "target", "node") == "edge" else self.nodes).add(
                getattr(op, "target_id")  # noqa: B009 - every forget has one
            )
        if isinstance(op, UpsertAgencyPressure | RetireAgencyPressure):
            self.keys.add(op.key)
        if isinstance(op, AcceptProposal | RejectProposal):
            self.proposals.add(op.proposal_id)
        if isinstance(op, Propose):
            self.add(op.operation)


def node_facts(node: Node, current_id: int | None = None) -> NodeFacts:
    """The law's view of a node (``current_id``: its current version, if superseded)."""
    data = node.data
    return NodeFacts(
        kind=node.kind,
        current_id=current_id,
        id=node.id,
        status=node.status,
        tier=node.tier,
        node_type=node.node_type,
        protected=node.protected,
        label=node.label,
        epistemic_tier=data.get("epistemic_tier"),
        disposition=data.get("disposition"),
        spoken=data.get("status") == "spoken",
    )


def load_facts(
    tx: NamespaceTransaction,
    ops: Sequence[Operation | Unparsed],
    *,
    content_limit: int,
    data_limit: int = DEFAULT_MAX_DATA_BYTES,
) -> Facts:
    """The nodes, edges, pressure keys and proposals ``ops`` name (proposals locked)."""
    refs = _Refs()
    for op in ops:
        refs.add(op)
    decided = sorted(refs.proposals)
    # The memories a pending proposal's operation names are locked before the
    # proposal is: an erasure holds its memory's lock while it rejects the pending
    # proposals about it, so a decision that locked the proposal first and then
    # waited for the memory deadlocked with it. A pending proposal's operation
    # changes only by that erasure (which decides it), so reading it unlocked
    # names the same memories as the locked read below.
    for proposal in _proposals(tx, decided, lock=False).values():
        if proposal.status == "pending":
            refs.add(parse_operation(proposal.operation))
    # Ids beyond bigint are not ids of anything: the law reports them unknown.
    wanted = [i for i in refs.nodes if 0 < i < 2**63]
    # Locked before their status is read (memstore/graph/locks.py): a direct
    # forget, revise or redact of a named memory waits for the batch, or the
    # batch is judged on what it wrote.
    tx.locks.lock(wanted)
    found = lock_proposals(tx, decided)
    known = fetch_nodes(tx.conn, tx.id, tx.name, wanted) if wanted else {}
    superseded = [i for i, node in known.items() if node.status is NodeStatus.SUPERSEDED]
    current = current_versions(tx.conn, tx.id, superseded) if superseded else {}
    edges = fetch_edges(tx.conn, tx.id, tx.name, [i for i in refs.edges if 0 < i < 2**63])
    return Facts(
        nodes={node_id: node_facts(node, current.get(node_id)) for node_id, node in known.items()},
        edges={edge_id: not edge.tombstoned for edge_id, edge in edges.items()},
        pressure_keys=pressure_keys(tx, refs.keys),
        proposals={
            p.id: ProposalFacts(id=p.id, status=p.status, operation=p.operation)
            for p in found.values()
        },
        content_limit=content_limit,
        data_limit=data_limit,
    )


def pressure_keys(tx: NamespaceTransaction, keys: Iterable[str]) -> dict[str, int]:
    """The current agency-pressure node of each key that has one."""
    keys = sorted(set(keys))
    if not keys:
        return {}
    return newest_by_label(tx.conn, tx.id, AGENCY, keys)


def lock_proposals(tx: NamespaceTransaction, ids: Iterable[int]) -> dict[int, Proposal]:
    """Proposals by id, locked until the transaction ends (a decision is taken once).

    A proposal hidden by the transaction's privacy ceiling is not among them:
    deciding it fails exactly as deciding a missing id."""
    return _proposals(tx, ids, lock=True)


def _proposals(tx: NamespaceTransaction, ids: Iterable[int], *, lock: bool) -> dict[int, Proposal]:
    wanted = sorted(i for i in set(ids) if 0 < i < 2**63)
    if not wanted:
        return {}
    rows = proposal_rows(tx.conn, tx.id, ids=wanted, lock=lock)
    return {row["id"]: to_proposal(row, tx.name) for row in rows}


def to_proposal(row: Any, namespace: str) -> Proposal:
    """A ``memstore.proposals`` row as a :class:`Proposal`."""
    values = {k: v for k, v in row.items() if k != "namespace_id"}
    return Proposal(**values, namespace=namespace)


__all__ = [
    "load_facts",
    "lock_proposals",
    "node_facts",
    "pressure_keys",
    "to_proposal",
]
