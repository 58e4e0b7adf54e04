"""Read what the law needs to know about a batch, inside the batch's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from memstore.db.schema import nodes, proposals
from memstore.graph.lineage import current_versions
from memstore.graph.rows import fetch_edges, fetch_nodes, within_ceiling
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
from memstore.tiers.common import is_current

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
    found = lock_proposals(tx, refs.proposals)
    for proposal in found.values():
        if proposal.status == "pending":
            refs.add(parse_operation(proposal.operation))
    # Ids beyond bigint are not ids of anything: the law reports them unknown.
    wanted = [i for i in refs.nodes if 0 < i < 2**63]
    # Locked before their status is read (memstore/graph/locks.py): a direct
    # forget, revise or redact of a named memory waits for the batch, or the
    # batch is judged on what it wrote.
    tx.locks.lock(wanted)
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
    rows = tx.conn.execute(
        sa.select(nodes.c.label, sa.func.max(nodes.c.id))
        .where(
            nodes.c.namespace_id == tx.id,
            nodes.c.tier == AGENCY,
            nodes.c.label.in_(keys),
            is_current(tx.id),
            within_ceiling(nodes),
        )
        .group_by(nodes.c.label)
    )
    return {str(label): int(node_id) for label, node_id in rows}


# A proposal carries no privacy level of its own, but it is as secret as what
# it is about: it is hidden under a ceiling below the privacy of a memory its
# operation names (a node id, or an end of an edge id, as memstore.named_ids
# finds them: the ids erasure looks for too), or below a privacy level its
# operation carries (a memory it would write). The owner bypasses row-level
# security, so the nodes are filtered by the ceiling here as well (the
# ceiling's expression is memstore.graph.rows.CEILING_SQL's).
VISIBLE_UNDER_CEILING = sa.text(
    """NOT (
    EXISTS (SELECT FROM unnest(memstore.named_ids(memstore.proposals.operation, false)
                               || ARRAY(SELECT unnest(ARRAY[e.src, e.dst])
                                        FROM memstore.edges e
                                        WHERE e.namespace_id = memstore.proposals.namespace_id
                                          AND e.id = ANY (memstore.named_ids(
                                              memstore.proposals.operation, true)))) AS x(id)
            WHERE NOT EXISTS (
                SELECT FROM memstore.nodes n
                WHERE n.namespace_id = memstore.proposals.namespace_id AND n.id = x.id
                  AND n.privacy
                      <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint))
    OR EXISTS (SELECT FROM jsonb_path_query(memstore.proposals.operation,
                                            'strict $.** ? (@.type() == "object")') AS o(obj)
               WHERE jsonb_typeof(o.obj -> 'privacy') = 'number'
                 AND (o.obj ->> 'privacy')::numeric
                     > nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint)
)"""
)


def lock_proposals(tx: NamespaceTransaction, ids: Iterable[int]) -> dict[int, Proposal]:
    """Proposals by id, locked until the transaction ends (a decision is taken once).

    A proposal hidden by the transaction's privacy ceiling is not among them:
    deciding it fails exactly as deciding a missing id."""
    wanted = sorted(i for i in set(ids) if 0 < i < 2**63)
    if not wanted:
        return {}
    rows = tx.conn.execute(
        sa.select(proposals)
        .where(proposals.c.namespace_id == tx.id, proposals.c.id.in_(wanted))
        .where(VISIBLE_UNDER_CEILING)
        .with_for_update()
    ).mappings()
    return {row["id"]: to_proposal(row, tx.name) for row in rows}


def to_proposal(row: Any, namespace: str) -> Proposal:
    """A ``memstore.proposals`` row as a :class:`Proposal`."""
    values = {k: v for k, v in row.items() if k != "namespace_id"}
    return Proposal(**values, namespace=namespace)


__all__ = [
    "VISIBLE_UNDER_CEILING",
    "load_facts",
    "lock_proposals",
    "node_facts",
    "pressure_keys",
    "to_proposal",
]
