"""The lifecycle law: typed operations and the pure rules that judge them.

Nothing here touches the database: :mod:`memstore.lifecycle` reads the facts,
asks :func:`judge`, and applies what it accepts (docs/lifecycle.md).
"""

from .law import PERMITTED, PHASES, Verdict, judge
from .ops import ANCHOR_MISSING, OP_NAMES, Anatomy, Operation, Phase, Unparsed, parse_operation
from .policy import Facts, NodeFacts, Policy, ProposalFacts

__all__ = [
    "ANCHOR_MISSING",
    "OP_NAMES",
    "PERMITTED",
    "PHASES",
    "Anatomy",
    "Facts",
    "NodeFacts",
    "Operation",
    "Phase",
    "Policy",
    "ProposalFacts",
    "Unparsed",
    "Verdict",
    "judge",
    "parse_operation",
]
