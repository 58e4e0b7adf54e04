"""Confirming a memory: a later observation that says it still holds (IRIS).

``ns.confirm(node_id)`` records one; ``ns.remember`` of content the
namespace already holds as a current memory records one too (the same
observation was made again). A node's ``last_confirmed_at`` is the newest.
Only a current memory is confirmed: a superseded version, a forgotten or a
redacted memory raises the error that says what became of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memstore.graph.confirmations import record_confirmation
from memstore.inputs import checked_id
from memstore.models import Node, NodeStatus

if TYPE_CHECKING:
    from memstore.services.scope import Scope
    from memstore.tx import NamespaceTransaction


def confirm_in(tx: NamespaceTransaction, node_id: int) -> Node:
    """Confirm the current memory ``node_id`` in ``tx``; the node with its new time.

    The node is locked before its status is read, as every write of it is: a
    concurrent forget or revise waits for this one, or this one sees it.
    """
    tx.locks.lock([node_id])
    node = tx.current(node_id)
    at = record_confirmation(tx.conn, tx.id, node.id)
    return node.model_copy(update={"last_confirmed_at": at})


def confirm_again(tx: NamespaceTransaction, node: Node, created: bool) -> Node:
    """``node`` as a remember that found it returns it: confirmed in ``tx`` when it
    was already stored (not ``created``) and is current, as it is now."""
    if created or node.status is not NodeStatus.CURRENT:
        return node
    tx.locks.lock([node.id])
    now = tx.node(node.id)  # forgotten or revised since the remember's snapshot?
    if now.status is not NodeStatus.CURRENT:
        return now
    return node.model_copy(
        update={"last_confirmed_at": record_confirmation(tx.conn, tx.id, node.id)}
    )


def confirm(scope: Scope, node_id: int) -> Node:
    """See :meth:`memstore.namespace.Namespace.confirm`."""
    node_id = checked_id(node_id, "node_id")
    with scope.transaction() as tx:
        return confirm_in(tx, node_id)


__all__ = ["confirm", "confirm_again", "confirm_in"]
