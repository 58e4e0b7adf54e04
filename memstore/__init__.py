"""memstore: a relational memory store for AI agents on PostgreSQL + pgvector.

Without a URL, ``open()`` starts the embedded PostgreSQL:

>>> from memstore import MemoryStore
>>> store = MemoryStore.open()          # doctest: +SKIP
>>> store.status().schema_revision      # doctest: +SKIP
'0020'
>>> store.close()                       # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstore.activation.model import Activation as Activation
    from memstore.activation.model import ActivationParams as ActivationParams
    from memstore.aio import AsyncMemoryStore as AsyncMemoryStore
    from memstore.aio import AsyncNamespace as AsyncNamespace
    from memstore.config import Settings as Settings
    from memstore.errors import ConfigurationError as ConfigurationError
    from memstore.errors import DatabaseError as DatabaseError
    from memstore.errors import DatabaseRefusal as DatabaseRefusal
    from memstore.errors import DatabaseUnavailableError as DatabaseUnavailableError
    from memstore.errors import EntryNotFoundError as EntryNotFoundError
    from memstore.errors import InvalidInputError as InvalidInputError
    from memstore.errors import MemstoreError as MemstoreError
    from memstore.errors import NamespaceNotEmptyError as NamespaceNotEmptyError
    from memstore.errors import NodeStateError as NodeStateError
    from memstore.errors import NotFoundError as NotFoundError
    from memstore.errors import OperationRejectedError as OperationRejectedError
    from memstore.errors import RestoreNotPermittedError as RestoreNotPermittedError
    from memstore.errors import SchemaVersionError as SchemaVersionError
    from memstore.errors import SnapshotFileError as SnapshotFileError
    from memstore.errors import StoreClosedError as StoreClosedError
    from memstore.errors import UnsupportedServerError as UnsupportedServerError
    from memstore.inputs import LinkInput as LinkInput
    from memstore.law.ops import Anatomy as Anatomy
    from memstore.law.ops import Operation as Operation
    from memstore.law.ops import Phase as Phase
    from memstore.law.policy import Policy as Policy
    from memstore.law.receipt import OpResult as OpResult
    from memstore.law.receipt import Proposal as Proposal
    from memstore.law.receipt import Receipt as Receipt
    from memstore.lifecycle import Review as Review
    from memstore.models import Edge as Edge
    from memstore.models import EmbeddingStatus as EmbeddingStatus
    from memstore.models import ExportSummary as ExportSummary
    from memstore.models import Hit as Hit
    from memstore.models import MemoryInput as MemoryInput
    from memstore.models import NamespaceInfo as NamespaceInfo
    from memstore.models import Neighbour as Neighbour
    from memstore.models import Node as Node
    from memstore.models import NodeStatus as NodeStatus
    from memstore.models import Recalled as Recalled
    from memstore.models import RestoreSummary as RestoreSummary
    from memstore.models import ScoreParts as ScoreParts
    from memstore.models import StoreStatus as StoreStatus
    from memstore.namespace import Namespace as Namespace
    from memstore.services.maintenance import MaintenanceReport as MaintenanceReport
    from memstore.store import MemoryStore as MemoryStore
    from memstore.tiers.consolidation import Consolidation as Consolidation
    from memstore.tiers.context import ContextPacket as ContextPacket
    from memstore.tiers.keyed import KeyedEntries as KeyedEntries
    from memstore.tiers.lessons import DecayResult as DecayResult
    from memstore.tiers.lessons import Lesson as Lesson
    from memstore.tiers.lessons import Lessons as Lessons
    from memstore.tiers.procedures import ProcedureOutcome as ProcedureOutcome
    from memstore.tiers.procedures import Procedures as Procedures
    from memstore.tiers.procedures import ProcedureStats as ProcedureStats
    from memstore.tiers.procedures import ProcedureStep as ProcedureStep
    from memstore.tiers.scratchpad import Scratchpad as Scratchpad
    from memstore.tiers.summary import NamespaceSummary as NamespaceSummary
    from memstore.tiers.timeline import Timeline as Timeline
    from memstore.tiers.timeline import TurnInput as TurnInput
    from memstore.tiers.timeline import TurnsReport as TurnsReport
    from memstore.tx import NamespaceTransaction as NamespaceTransaction

# The public names load on first use (PEP 562): importing the package, which
# every submodule does (the ``memstore`` command too), must not import
# SQLAlchemy, psycopg, pydantic and numpy before they are needed; sync users
# never load the async API (docs/async.md).
_LAZY = {
    "Activation": "memstore.activation.model",
    "ActivationParams": "memstore.activation.model",
    "Anatomy": "memstore.law.ops",
    "AsyncMemoryStore": "memstore.aio",
    "AsyncNamespace": "memstore.aio",
    "ConfigurationError": "memstore.errors",
    "Consolidation": "memstore.tiers.consolidation",
    "ContextPacket": "memstore.tiers.context",
    "DatabaseError": "memstore.errors",
    "DatabaseRefusal": "memstore.errors",
    "DatabaseUnavailableError": "memstore.errors",
    "DecayResult": "memstore.tiers.lessons",
    "Edge": "memstore.models",
    "EmbeddingStatus": "memstore.models",
    "EntryNotFoundError": "memstore.errors",
    "Hit": "memstore.models",
    "InvalidInputError": "memstore.errors",
    "KeyedEntries": "memstore.tiers.keyed",
    "Lesson": "memstore.tiers.lessons",
    "Lessons": "memstore.tiers.lessons",
    "LinkInput": "memstore.inputs",
    "MemoryInput": "memstore.models",
    "MemoryStore": "memstore.store",
    "MemstoreError": "memstore.errors",
    "Namespace": "memstore.namespace",
    "NamespaceInfo": "memstore.models",
    "NamespaceSummary": "memstore.tiers.summary",
    "NamespaceTransaction": "memstore.tx",
    "Node": "memstore.models",
    "NodeStateError": "memstore.errors",
    "NodeStatus": "memstore.models",
    "NotFoundError": "memstore.errors",
    "OpResult": "memstore.law.receipt",
    "Operation": "memstore.law.ops",
    "OperationRejectedError": "memstore.errors",
    "Phase": "memstore.law.ops",
    "Policy": "memstore.law.policy",
    "ProcedureStats": "memstore.tiers.procedures",
    "ProcedureOutcome": "memstore.tiers.procedures",
    "MaintenanceReport": "memstore.services.maintenance",
    "ProcedureStep": "memstore.tiers.procedures",
    "Procedures": "memstore.tiers.procedures",
    "Proposal": "memstore.law.receipt",
    "Receipt": "memstore.law.receipt",
    "Review": "memstore.lifecycle",
    "SchemaVersionError": "memstore.errors",
    "ScoreParts": "memstore.models",
    "Scratchpad": "memstore.tiers.scratchpad",
    "Settings": "memstore.config",
    "StoreClosedError": "memstore.errors",
    "StoreStatus": "memstore.models",
    "Timeline": "memstore.tiers.timeline",
    "UnsupportedServerError": "memstore.errors",
    "TurnInput": "memstore.tiers.timeline",
    "TurnsReport": "memstore.tiers.timeline",
    "Neighbour": "memstore.models",
    "Recalled": "memstore.models",
    "NamespaceNotEmptyError": "memstore.errors",
    "RestoreNotPermittedError": "memstore.errors",
    "SnapshotFileError": "memstore.errors",
    "ExportSummary": "memstore.models",
    "RestoreSummary": "memstore.models",
}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name]), name)
    elif name == "__version__":
        from importlib.metadata import version

        value = version("memstore")
    else:
        raise AttributeError(f"module 'memstore' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, "__version__"])
