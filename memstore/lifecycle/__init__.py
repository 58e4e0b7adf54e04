"""The lifecycle law applied to a namespace: ``ns.apply``, ``ns.sleep``, ``ns.review``,
``ns.cultivate`` and the namespace policy (docs/lifecycle.md).

The rules themselves are pure and live in :mod:`memstore.law`; this package
reads the facts they need, applies what they accept, and keeps the receipts.
"""

from .review import Review
from .rights import LAW, sanction

__all__ = ["LAW", "Review", "sanction"]
