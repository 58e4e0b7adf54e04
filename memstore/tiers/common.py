"""What every tier shares: its name, per-key locks, storing an entry afresh, checked units.

The statements that read a tier's entries live in :mod:`memstore.graph.entries`.

A tier is a profile over the one memory graph: its nodes carry ``tier`` (and a
node type), so recall, activation, lineage and the append-only law apply to
them unchanged (docs/tiers.md).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from memstore.errors import InvalidInputError
from memstore.graph.entries import lock_tier_key
from memstore.models import MemoryInput, Node, NodeStatus

if TYPE_CHECKING:
    from memstore.tx import NamespaceTransaction

TIMELINE = "timeline"
SCRATCHPAD = "scratchpad"
LESSONS = "lessons"
PROCEDURES = "procedures"
CONSOLIDATION = "consolidation"
TIERS = (TIMELINE, SCRATCHPAD, LESSONS, PROCEDURES, CONSOLIDATION)


def lock_key(tx: NamespaceTransaction, *parts: str) -> None:
    """Serialise writers of one key of one namespace until the transaction ends.

    Two concurrent pins of a key (or refinements of a procedure) would each see
    the same current version and both revise it; the second would fail on the
    supersession rule. With the lock the second waits and revises the first's.
    """
    lock_tier_key(tx.conn, tx.id, "\x1f".join(("memstore.tier", *parts)))


def remember_fresh(
    tx: NamespaceTransaction, item: MemoryInput, *, vector: np.ndarray[Any, Any] | None = None
) -> Node:
    """Store ``item`` as a current entry of its tier, or return the identical current entry.

    Ingest is idempotent, so identical content may find a node that was since
    forgotten, revised or written outside the tier. That node is history, not
    the entry asked for: the content is stored again under a dedupe key that
    names it (deterministic, so concurrent writers still agree on one node).
    """
    node = tx.remember_item(item, vector=vector)
    while node.status is not NodeStatus.CURRENT or node.tier != item.tier:
        item = item.model_copy(update={"dedupe_key": f"{item.tier}:after:{node.id}"})
        node = tx.remember_item(item, vector=vector)
    return node


def unit(value: object, field: str) -> float:
    """``value`` as a float in [0, 1], or an :class:`InvalidInputError` naming ``field``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0.0 <= value <= 1.0
    ):
        raise InvalidInputError(f"{field} must be a number from 0 to 1", field=field)
    return float(value)
