"""The lifecycle package's rights over a transaction: the one door past the direct verbs' rules.

The direct verbs (``ns.remember / revise / forget / link`` and their
transaction twins) refuse protected memories and lifecycle records. The law's
appliers, ``ns.set_policy`` and ``ns.cultivate`` need to write them, so they
work on a *sanctioned* transaction: the same connection and locks, with
:class:`~memstore.tx.Rights` that only this package can grant. The key that
grants them is claimed here, once, when memstore is imported; there is no
attribute to set and no flag to pass (docs/lifecycle.md, "Cultivate"), and
:func:`sanction` itself refuses a caller from outside this package.

This is a seal against a door, not against hostile code in the same process:
Python cannot hide an object from code that reads private names. What such
code cannot get past is the database (privileges, triggers, row-level
security: docs/security.md).
"""

from __future__ import annotations

import sys

from memstore.tx import Audit, NamespaceTransaction, Rights, claim_sanction_key

_KEY = claim_sanction_key()
_PACKAGE = __name__.rpartition(".")[0]  # memstore.lifecycle

# What the law's appliers and the policy may write: lifecycle records and the
# policy node. Protected memories stay out of reach (the law refuses them).
LAW = Rights.LIFECYCLE


def sanction(
    tx: NamespaceTransaction, rights: Rights, *, audit: Audit | None = None
) -> NamespaceTransaction:
    """``tx`` with ``rights``; PROTECTED needs ``audit`` (called after each protected write).

    Only for the lifecycle package's own modules: any other caller gets
    ``PermissionError`` (use ``ns.cultivate``, ``ns.apply`` or ``ns.set_policy``).
    """
    caller = str(sys._getframe(1).f_globals.get("__name__", ""))
    if caller != _PACKAGE and not caller.startswith(_PACKAGE + "."):
        raise PermissionError(
            f"{caller or 'this code'} may not sanction a transaction: only memstore.lifecycle"
            " grants rights (use ns.cultivate, ns.apply or ns.set_policy)"
        )
    return tx.sanctioned(rights, key=_KEY, audit=audit)


__all__ = ["LAW", "sanction"]
