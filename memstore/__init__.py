"""memstore: a relational memory store for AI agents on PostgreSQL + pgvector.

Without a URL, ``open()`` starts the embedded PostgreSQL:

>>> from memstore import MemoryStore
>>> store = MemoryStore.open()          # doctest: +SKIP
>>> store.status().schema_revision      # doctest: +SKIP
'0020'
>>> store.close()                       # doctest: +SKIP
"""

from importlib.metadata import version

from memstore.activation.model import Activation, ActivationParams
from memstore.config import Settings
from memstore.errors import (
    ConfigurationError,
    DatabaseError,
    DatabaseRefusal,
    DatabaseUnavailableError,
    EntryNotFoundError,
    InvalidInputError,
    MemstoreError,
    NodeStateError,
    NotFoundError,
    OperationRejectedError,
    SchemaVersionError,
    StoreClosedError,
    UnsupportedServerError,
)
from memstore.inputs import LinkInput
from memstore.law.ops import Anatomy, Operation, Phase
from memstore.law.policy import Policy
from memstore.law.receipt import OpResult, Proposal, Receipt
from memstore.lifecycle import Review
from memstore.models import (
    Edge,
    EmbeddingStatus,
    Hit,
    MemoryInput,
    NamespaceInfo,
    Node,
    NodeStatus,
    ScoreParts,
    StoreStatus,
)
from memstore.namespace import Namespace
from memstore.store import MemoryStore
from memstore.tiers.consolidation import Consolidation
from memstore.tiers.context import ContextPacket
from memstore.tiers.lessons import DecayResult, Lesson, Lessons
from memstore.tiers.procedures import Procedures, ProcedureStats, ProcedureStep
from memstore.tiers.scratchpad import Scratchpad
from memstore.tiers.summary import NamespaceSummary
from memstore.tiers.timeline import Timeline
from memstore.tx import NamespaceTransaction

__all__ = [
    "Activation",
    "ActivationParams",
    "Anatomy",
    "ConfigurationError",
    "Consolidation",
    "ContextPacket",
    "DatabaseError",
    "DatabaseRefusal",
    "DatabaseUnavailableError",
    "DecayResult",
    "Edge",
    "EmbeddingStatus",
    "EntryNotFoundError",
    "Hit",
    "InvalidInputError",
    "Lesson",
    "Lessons",
    "LinkInput",
    "MemoryInput",
    "MemoryStore",
    "MemstoreError",
    "Namespace",
    "NamespaceInfo",
    "NamespaceSummary",
    "NamespaceTransaction",
    "Node",
    "NodeStateError",
    "NodeStatus",
    "NotFoundError",
    "OpResult",
    "Operation",
    "OperationRejectedError",
    "Phase",
    "Policy",
    "ProcedureStats",
    "ProcedureStep",
    "Procedures",
    "Proposal",
    "Receipt",
    "Review",
    "SchemaVersionError",
    "ScoreParts",
    "Scratchpad",
    "Settings",
    "StoreClosedError",
    "StoreStatus",
    "Timeline",
    "UnsupportedServerError",
]
__version__ = version("memstore")
