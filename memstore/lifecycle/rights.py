"""The lifecycle package's rights over a transaction: the one door past the direct verbs' rules.

The direct verbs (``ns.remember / revise / forget / link`` and their
transaction twins) refuse protected memories and lifecycle records. The law's
appliers, ``ns.set_policy`` and ``ns.cultivate`` need to write them, so they
work on a *sanctioned* transaction: the same connection and locks, with
:class:`~memstore.tx.Rights` that only this package can grant. The key that
grants them is claimed here, once, when memstore is imported; there is no
attribute to set and no flag to pass (docs/lifecycle.md, "Cultivate").
"""

from __future__ import annotations

from memstore.tx import Audit, NamespaceTransaction, Rights, claim_sanction_key

_KEY = claim_sanction_key()

# What the law's appliers and the policy may write: lifecycle records and the
# policy node. Protected memories stay out of reach (the law refuses them).
LAW = Rights.LIFECYCLE


def sanction(
    tx: NamespaceTransaction, rights: Rights, *, audit: Audit | None = None
) -> NamespaceTransaction:
    """``tx`` with ``rights``; PROTECTED needs ``audit`` (called after each protected write)."""
    return tx.sanctioned(rights, key=_KEY, audit=audit)


__all__ = ["LAW", "sanction"]
