"""The public sync API, pinned: every public member of the store, the namespace, its
transaction, its tiers and its review queue, with its ``inspect.signature`` (issue 19).

A refactoring must not change what callers (and the async wrapper generated from these
classes) see: a change here is a change of the public API, made on purpose, with the
docs. Private members (a leading underscore) and constructors are free to change: users
get these objects from :meth:`MemoryStore.open` and ``store.namespace(...)``.
"""

from __future__ import annotations

import inspect
from functools import cached_property

import pytest

import memstore
from memstore import (
    Consolidation,
    KeyedEntries,
    Lessons,
    MemoryStore,
    Namespace,
    NamespaceTransaction,
    Procedures,
    Review,
    Scratchpad,
    Timeline,
)

CLASSES = (
    MemoryStore, Namespace, NamespaceTransaction, Timeline, Scratchpad, Lessons, Procedures,
    Consolidation, Review, KeyedEntries,
)  # fmt: skip

# class -> public member -> its signature, one parameter a string (``self`` left out, "*"
# where keyword-only parameters begin, the return last), or "property" / "cached_property".
EXPECTED: dict[str, dict[str, str | tuple[str, ...]]] = {
    "MemoryStore": {
        "close": ('-> None',),
        "engine": "property",
        "namespace": ("name: 'str'", '-> Namespace'),
        "namespaces": ('*', "privacy_ceiling: 'int | None' = None", '-> list[NamespaceInfo]'),
        "restore": (
            "source: 'str | os.PathLike[str] | IO[bytes]'",
            '*',
            "namespace: 'str'",
            "progress: 'Callable[[str, int], None] | None' = None",
            '-> RestoreSummary',
        ),
        "open": (
            "url: 'str | None' = None",
            '*',
            "settings: 'Settings | None' = None",
            "auto_upgrade: 'bool | None' = None",
            "embedder: 'Embedder | None' = None",
            "read_url: 'str | Sequence[str] | None' = None",
            '-> MemoryStore',
        ),
        "status": ('*', "privacy_ceiling: 'int | None' = None", '-> StoreStatus'),
        "transaction": ('-> Iterator[Connection]',),
    },
    "Namespace": {
        "activate": (
            "query: 'str | None' = None",
            '*',
            "seeds: 'list[int] | None' = None",
            "depth: 'int' = 2",
            "fanout: 'int' = 16",
            "limit: 'int' = 20",
            "learn: 'bool' = False",
            "as_of: 'datetime | None' = None",
            "privacy_ceiling: 'int | None' = None",
            "both_directions: 'bool' = False",
            "session_id: 'str | None' = None",
            "params: 'ActivationParams | None' = None",
            "tags: 'list[str] | None' = None",
            '-> Activation',
        ),
        "apply": (
            "ops: 'Sequence[Operation | Mapping[str, Any] | str]'",
            '*',
            "phase: 'Phase'",
            "actor: 'str | None' = None",
            "atomic: 'bool' = True",
            '-> Receipt',
        ),
        "clear": ('*', "reason: 'str'", "actor: 'str | None' = None", '-> int'),
        "confirm": ("node_id: 'int'", '-> Node'),
        "connection": ('*', "privacy_ceiling: 'int | None' = None", '-> Iterator[Connection]'),
        "consolidation": "cached_property",
        "cultivate": (
            "node_id: 'int'",
            "content: 'str | None' = None",
            '*',
            "reason: 'str'",
            "actor: 'str'",
            "retire: 'bool' = False",
            "kind: 'Kind | Unchanged' = KEEP",
            "node_type: 'str | Unchanged' = KEEP",
            "tier: 'str | Unchanged | None' = KEEP",
            "layer: 'int | Unchanged' = KEEP",
            "label: 'str | Unchanged | None' = KEEP",
            "data: 'dict[str, Any] | Unchanged | None' = KEEP",
            "importance: 'float | Unchanged' = KEEP",
            "confidence: 'float | Unchanged' = KEEP",
            "decay_rate: 'float | Unchanged' = KEEP",
            "privacy: 'int | Unchanged' = KEEP",
            "protected: 'bool | Unchanged' = KEEP",
            "subject: 'str | Unchanged | None' = KEEP",
            "scope: 'str | Unchanged | None' = KEEP",
            "source: 'str | Unchanged | None' = KEEP",
            "run_id: 'str | Unchanged | None' = KEEP",
            "observed_at: 'datetime | Unchanged | None' = KEEP",
            "valid_from: 'datetime | Unchanged | None' = KEEP",
            "valid_to: 'datetime | Unchanged | None' = KEEP",
            "embedding: 'Sequence[float] | np.ndarray[Any, Any] | Unchanged | None' = KEEP",
            "dedupe_key: 'str | Unchanged | None' = KEEP",
            "tags: 'Sequence[str] | Unchanged' = KEEP",
            '-> Node',
        ),
        "maintain": (
            '*',
            "dry_run: 'bool' = False",
            "retention: 'timedelta | None' = None",
            "decay_period: 'timedelta | None' = None",
            '-> MaintenanceReport',
        ),
        "decay_hebbian": (
            "factor: 'float'",
            '*',
            "unused_for: 'timedelta | None' = None",
            '-> int',
        ),
        "embedder": "property",
        "embedding_status": ('*', "privacy_ceiling: 'int | None' = None", '-> EmbeddingStatus'),
        "exists": ('*', "privacy_ceiling: 'int | None' = None", '-> bool'),
        "forget": (
            "target_id: 'int'",
            '*',
            "reason: 'str'",
            "target: 'TargetKind' = 'node'",
            "actor: 'str | None' = None",
            '-> int',
        ),
        "get": ("node_id: 'int'", '*', "privacy_ceiling: 'int | None' = None", '-> Node'),
        "export": (
            "destination: 'str | os.PathLike[str] | IO[bytes]'",
            '*',
            "with_vectors: 'bool' = False",
            "privacy_ceiling: 'int | None' = None",
            '-> ExportSummary',
        ),
        "id": "property",
        "keyed": ("tier: 'str'", '-> KeyedEntries'),
        "lessons": "cached_property",
        "lineage": ("node_id: 'int'", '*', "privacy_ceiling: 'int | None' = None", '-> list[Node]'),
        "list_memories": (
            '*',
            "after: 'int' = 0",
            "limit: 'int' = 50",
            "kinds: 'list[Kind] | None' = None",
            "tiers: 'list[str] | None' = None",
            "privacy_ceiling: 'int | None' = None",
            "tags: 'list[str] | None' = None",
            '-> MemoryPage',
        ),
        "link": (
            "src: 'int'",
            "dst: 'int'",
            '*',
            "relation: 'str' = 'related'",
            "weight: 'float' = 0.5",
            "inhibitory: 'bool' = False",
            "confidence: 'float' = 0.5",
            "layer: 'int' = 1",
            "source: 'str | None' = None",
            "actor: 'str | None' = None",
            "run_id: 'str | None' = None",
            '-> Edge',
        ),
        "name": "property",
        "policy": ('*', "privacy_ceiling: 'int | None' = None", '-> Policy'),
        "procedures": "cached_property",
        "reading": (
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> Iterator[NamespaceTransaction]',
        ),
        "rebuild_embeddings": (
            '*',
            "batch_size: 'int' = 256",
            "progress: 'Callable[[int], None] | None' = None",
            '-> int',
        ),
        "recall": (
            "query: 'str | None' = None",
            '*',
            "k: 'int' = 10",
            "mode: 'RecallMode' = 'hybrid'",
            "kinds: 'list[Kind] | None' = None",
            "node_types: 'list[str] | None' = None",
            "tiers: 'list[str] | None' = None",
            "as_of: 'datetime | None' = None",
            "valid_at: 'datetime | None' = None",
            "include_superseded: 'bool' = False",
            "include_tombstoned: 'bool' = False",
            "privacy_ceiling: 'int | None' = None",
            "fusion: 'Fusion' = 'weighted'",
            "semantic_weight: 'float | None' = None",
            "tags: 'list[str] | None' = None",
            "neighbour_share: 'float | None' = None",
            "vector: 'Sequence[float] | np.ndarray[Any, Any] | None' = None",
            '-> Recalled',
        ),
        "edges": (
            "node_id: 'int'",
            '*',
            "direction: 'Direction' = 'both'",
            "relation: 'str | None' = None",
            "limit: 'int' = 100",
            "privacy_ceiling: 'int | None' = None",
            '-> list[Edge]',
        ),
        "neighbours": (
            "node_id: 'int'",
            '*',
            "depth: 'int' = 1",
            "direction: 'Direction' = 'both'",
            "relation: 'str | None' = None",
            "limit: 'int' = 50",
            "privacy_ceiling: 'int | None' = None",
            '-> list[Neighbour]',
        ),
        "similarity": (
            "a: 'int'", "b: 'int'", '*', "privacy_ceiling: 'int | None' = None", '-> float',
        ),
        "strengthen": ("a: 'int'", "b: 'int'", "delta: 'float'", '-> list[Edge]'),
        "recall_context": (
            "query: 'str'",
            "budget_tokens: 'int' = 2000",
            '*',
            "allocation: 'dict[str, float] | None' = None",
            "token_counter: 'TokenCounter | None' = None",
            "session_id: 'str | None' = None",
            "privacy_ceiling: 'int | None' = None",
            "role: 'str | None' = None",
            "tags: 'list[str] | None' = None",
            '-> ContextPacket',
        ),
        "redact": (
            "node_id: 'int'",
            '*',
            "reason: 'str'",
            "actor: 'str | None' = None",
            "versions: 'RedactVersions' = 'all'",
            '-> Node',
        ),
        "remember": (
            "content: 'str'",
            '*',
            "kind: 'Kind' = 'episodic'",
            "node_type: 'str' = 'Memory'",
            "tier: 'str | None' = None",
            "layer: 'int' = 1",
            "label: 'str | None' = None",
            "data: 'dict[str, Any] | None' = None",
            "importance: 'float' = 0.5",
            "confidence: 'float' = 0.5",
            "decay_rate: 'float' = 0.5",
            "privacy: 'int' = 0",
            "protected: 'bool' = False",
            "subject: 'str | None' = None",
            "scope: 'str | None' = None",
            "source: 'str | None' = None",
            "actor: 'str | None' = None",
            "run_id: 'str | None' = None",
            "observed_at: 'datetime | None' = None",
            "valid_from: 'datetime | None' = None",
            "valid_to: 'datetime | None' = None",
            "embedding: 'Sequence[float] | np.ndarray[Any, Any] | None' = None",
            "dedupe_key: 'str | None' = None",
            "tags: 'Sequence[str] | None' = None",
            '-> Node',
        ),
        "remember_many": (
            "items: 'Iterable[str | Mapping[str, Any] | MemoryInput]'",
            '*',
            "batch_size: 'int' = 1000",
            "progress: 'Callable[[int], None] | None' = None",
            '-> list[int]',
        ),
        "review": "cached_property",
        "revise": (
            "node_id: 'int'",
            "content: 'str'",
            '*',
            "reason: 'str'",
            "kind: 'Kind | Unchanged' = KEEP",
            "node_type: 'str | Unchanged' = KEEP",
            "tier: 'str | Unchanged | None' = KEEP",
            "layer: 'int | Unchanged' = KEEP",
            "label: 'str | Unchanged | None' = KEEP",
            "data: 'dict[str, Any] | Unchanged | None' = KEEP",
            "importance: 'float | Unchanged' = KEEP",
            "confidence: 'float | Unchanged' = KEEP",
            "decay_rate: 'float | Unchanged' = KEEP",
            "privacy: 'int | Unchanged' = KEEP",
            "protected: 'bool | Unchanged' = KEEP",
            "subject: 'str | Unchanged | None' = KEEP",
            "scope: 'str | Unchanged | None' = KEEP",
            "source: 'str | Unchanged | None' = KEEP",
            "actor: 'str | Unchanged | None' = KEEP",
            "run_id: 'str | Unchanged | None' = KEEP",
            "observed_at: 'datetime | Unchanged | None' = KEEP",
            "valid_from: 'datetime | Unchanged | None' = KEEP",
            "valid_to: 'datetime | Unchanged | None' = KEEP",
            "embedding: 'Sequence[float] | np.ndarray[Any, Any] | Unchanged | None' = KEEP",
            "dedupe_key: 'str | Unchanged | None' = KEEP",
            "tags: 'Sequence[str] | Unchanged' = KEEP",
            '-> Node',
        ),
        "scratchpad": "cached_property",
        "set_policy": (
            "policy: 'Policy | Mapping[str, Any]'",
            '*',
            "reason: 'str'",
            "actor: 'str | None' = None",
            '-> Policy',
        ),
        "settings": "property",
        "sleep": (
            "ops: 'Sequence[Operation | Mapping[str, Any] | str] | None' = None",
            '*',
            "forced: 'bool' = False",
            "actor: 'str | None' = None",
            "distiller: 'Distiller | None' = None",
            "older_than: 'timedelta | None' = None",
            '-> Receipt',
        ),
        "status_summary": ('*', "privacy_ceiling: 'int | None' = None", '-> str'),
        "summary": ('*', "privacy_ceiling: 'int | None' = None", '-> NamespaceSummary'),
        "timeline": "cached_property",
        "transaction": (
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> Iterator[NamespaceTransaction]',
        ),
    },
    "NamespaceTransaction": {
        "current": ("node_id: 'int'", '*', "privacy_ceiling: 'int | None' = None", '-> Node'),
        "forget": (
            "target_id: 'int'",
            '*',
            "reason: 'str'",
            "target: 'TargetKind' = 'node'",
            "actor: 'str | None' = None",
            '-> int',
        ),
        "lineage": ("node_id: 'int'", '*', "privacy_ceiling: 'int | None' = None", '-> list[Node]'),
        "link": ("src: 'int'", "dst: 'int'", "**fields: 'Any'", '-> Edge'),
        "node": ("node_id: 'int'", '*', "privacy_ceiling: 'int | None' = None", '-> Node'),
        "policy": ('-> Policy',),
        "raise_missing": ("node_id: 'int'", '*', "edge: 'bool' = False", '-> None'),
        "redact": (
            "node_id: 'int'",
            '*',
            "reason: 'str'",
            "actor: 'str | None' = None",
            "versions: 'RedactVersions' = 'all'",
            '-> Node',
        ),
        "remember": (
            "content: 'str'",
            '*',
            "vector: 'np.ndarray[Any, Any] | None' = None",
            "**fields: 'Any'",
            '-> Node',
        ),
        "remember_item": (
            "item: 'MemoryInput'",
            '*',
            "vector: 'np.ndarray[Any, Any] | None' = None",
            '-> Node',
        ),
        "revise": (
            "node_id: 'int'",
            "content: 'str'",
            '*',
            "reason: 'str'",
            "**changes: 'Any'",
            '-> Node',
        ),
        "sanctioned": (
            "rights: 'Rights'",
            '*',
            "key: 'object'",
            "audit: 'Audit | None' = None",
            '-> NamespaceTransaction',
        ),
        "store_item": (
            "item: 'MemoryInput'",
            '*',
            "vector: 'np.ndarray[Any, Any] | None' = None",
            '-> tuple[Node, bool]',
        ),
    },
    "Timeline": {
        "entry_count": ('*', "privacy_ceiling: 'int | None' = None", '-> int'),
        "ingest_turn": (
            "role: 'str'",
            "content: 'str'",
            "session_id: 'str'",
            '*',
            "at: 'datetime | None' = None",
            "tags: 'Sequence[str] | None' = None",
            '-> Node',
        ),
        "ingest_turns": (
            "turns: 'Iterable[TurnInput | Mapping[str, Any]]'",
            '*',
            "batch_size: 'int' = 1000",
            "progress: 'Callable[[int], None] | None' = None",
            '-> TurnsReport',
        ),
        "recent": (
            "n: 'int' = 20",
            '*',
            "session_id: 'str | None' = None",
            "privacy_ceiling: 'int | None' = None",
            '-> list[Node]',
        ),
        "search": (
            "query: 'str'",
            "limit: 'int' = 10",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> list[Hit]',
        ),
    },
    "Scratchpad": {
        "all": ('*', "privacy_ceiling: 'int | None' = None", '-> list[Node]'),
        "count": ('*', "privacy_ceiling: 'int | None' = None", '-> int'),
        "get": ("key: 'str'", '*', "privacy_ceiling: 'int | None' = None", '-> Node | None'),
        "history": ("key: 'str'", '*', "privacy_ceiling: 'int | None' = None", '-> list[Node]'),
        "pin": (
            "key: 'str'",
            "value: 'str'",
            '*',
            "tags: 'Sequence[str] | None' = None",
            '-> Node',
        ),
        "unpin": ("key: 'str'", '*', "reason: 'str' = 'unpinned'", '-> int'),
    },
    "KeyedEntries": {
        "all": (
            '*',
            "where: 'Sequence[DataCondition | Mapping[str, Any]]' = ()",
            "limit: 'int' = 10",
            "offset: 'int' = 0",
            "ids: 'Sequence[int] | None' = None",
            "privacy_ceiling: 'int | None' = None",
            '-> list[Node]',
        ),
        "forget": ("key: 'str'", '*', "reason: 'str' = 'deleted'", '-> int | None'),
        "get": (
            "keys: 'Sequence[str]'",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> dict[str, Node]',
        ),
        "history": ("key: 'str'", '*', "privacy_ceiling: 'int | None' = None", '-> list[Node]'),
        "put": (
            "key: 'str'",
            "content: 'str'",
            '*',
            "data: 'Mapping[str, Any]'",
            "kind: 'Kind' = 'semantic'",
            "node_type: 'str' = 'Entry'",
            "observed_at: 'datetime | None' = None",
            "reason: 'str' = 'a new value for the key'",
            '-> Node',
        ),
        "put_many": (
            "entries: 'Sequence[Mapping[str, Any]]'",
            '*',
            "reason: 'str' = 'a new value for the key'",
            '-> list[Node]',
        ),
    },
    "Lessons": {
        "add": (
            "rule: 'str'",
            '*',
            "source: 'str'",
            "confidence: 'float'",
            "tags: 'Sequence[str] | None' = None",
            '-> Node',
        ),
        "add_if_new": (
            "rule: 'str'",
            '*',
            "source: 'str'",
            "confidence: 'float'",
            "tags: 'Sequence[str] | None' = None",
            '-> Node',
        ),
        "all": ('*', "privacy_ceiling: 'int | None' = None", '-> list[Lesson]'),
        "count": ('*', "privacy_ceiling: 'int | None' = None", '-> int'),
        "decay_unused": ("factor: 'float'", "min_confidence: 'float'", '-> DecayResult'),
        "enforce_cap": ("max_lessons: 'int'", '-> list[int]'),
        "find_duplicate": (
            "rule: 'str'",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> Node | None',
        ),
        "get": ("lesson_id: 'int'", '*', "privacy_ceiling: 'int | None' = None", '-> Lesson'),
        "high_confidence": (
            "threshold: 'float' = 0.8",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> list[Lesson]',
        ),
        "record_applied": ("lesson_id: 'int'", '-> Lesson'),
        "remove": ("lesson_id: 'int'", '*', "reason: 'str' = 'removed'", '-> Node'),
        "search": (
            "query: 'str'",
            "limit: 'int' = 10",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> list[Hit]',
        ),
    },
    "Procedures": {
        "add": (
            "name: 'str'",
            '*',
            "description: 'str'",
            "steps: 'Sequence[ProcedureStep | Mapping[str, Any]]'",
            "roles: 'Sequence[str] | None' = None",
            '-> Node',
        ),
        "add_if_new": (
            "name: 'str'",
            '*',
            "description: 'str'",
            "steps: 'Sequence[ProcedureStep | Mapping[str, Any]]'",
            "roles: 'Sequence[str] | None' = None",
            '-> Node',
        ),
        "all": ('*', "privacy_ceiling: 'int | None' = None", '-> list[Node]'),
        "find_by_name": (
            "name: 'str'",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> Node | None',
        ),
        "record_success": (
            "name_or_id: 'str | int'",
            '*',
            "success: 'bool' = True",
            '-> ProcedureStats',
        ),
        "refine": (
            "name_or_id: 'str | int'",
            "steps: 'Sequence[ProcedureStep | Mapping[str, Any]]'",
            '*',
            "description: 'str | None' = None",
            "reason: 'str' = 'refined'",
            "roles: 'Sequence[str] | None' = None",
            '-> Node',
        ),
        "record_outcome": (
            "name_or_id: 'str | int'",
            "success: 'bool'",
            '*',
            "episode: 'int | str | None' = None",
            "note: 'str | None' = None",
            '-> ProcedureOutcome',
        ),
        "outcomes": (
            "name_or_id: 'str | int'",
            '*',
            "success: 'bool | None' = None",
            "limit: 'int' = 100",
            "privacy_ceiling: 'int | None' = None",
            '-> list[ProcedureOutcome]',
        ),
        "roles": (
            "name_or_id: 'str | int'",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> list[str]',
        ),
        "remove": ("name_or_id: 'str | int'", '*', "reason: 'str' = 'removed'", '-> Node'),
        "stats": (
            "name_or_id: 'str | int'",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> ProcedureStats',
        ),
        "use": ("name_or_id: 'str | int'", '*', "actor: 'str | None' = None", '-> Node'),
        "count": ('*', "privacy_ceiling: 'int | None' = None", '-> int'),
        "last_used": (
            "name_or_id: 'str | int'",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> datetime | None',
        ),
        "steps": ("node: 'Node'", '-> list[ProcedureStep]'),
        "versions": (
            "name_or_id: 'str | int'",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> list[Node]',
        ),
    },
    "Consolidation": {
        "history": (
            "limit: 'int | None' = None",
            '*',
            "privacy_ceiling: 'int | None' = None",
            '-> list[Node]',
        ),
        "record": (
            "messages_consolidated: 'int'",
            "summary: 'str'",
            "context_length: 'int'",
            '-> Node',
        ),
        "total": ('*', "privacy_ceiling: 'int | None' = None", '-> int'),
    },
    "Review": {
        "accept": (
            "proposal_id: 'int'",
            '*',
            "reviewer: 'str'",
            "note: 'str | None' = None",
            '-> Receipt',
        ),
        "get": ("proposal_id: 'int'", '*', "privacy_ceiling: 'int | None' = None", '-> Proposal'),
        "pending": (
            '*',
            "limit: 'int' = 100",
            "privacy_ceiling: 'int | None' = None",
            '-> list[Proposal]',
        ),
        "reject": ("proposal_id: 'int'", '*', "reviewer: 'str'", "reason: 'str'", '-> Proposal'),
    },
}  # fmt: skip

EXPORTED = {
    "Activation",
    "ActivationParams",
    "Anatomy",
    "AsyncMemoryStore",
    "AsyncNamespace",
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
    "ExportSummary",
    "Hit",
    "InvalidInputError",
    "KeyedEntries",
    "Lesson",
    "Lessons",
    "LinkInput",
    "MemoryInput",
    "MemoryStore",
    "MaintenanceReport",
    "MemstoreError",
    "Namespace",
    "NamespaceInfo",
    "Neighbour",
    "NamespaceNotEmptyError",
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
    "ProcedureOutcome",
    "ProcedureStats",
    "ProcedureStep",
    "Procedures",
    "Proposal",
    "Recalled",
    "Receipt",
    "RestoreNotPermittedError",
    "RestoreSummary",
    "Review",
    "SchemaVersionError",
    "ScoreParts",
    "Scratchpad",
    "Settings",
    "SnapshotFileError",
    "StoreClosedError",
    "StoreStatus",
    "Timeline",
    "UnsupportedServerError",
    "TurnInput",
    "TurnsReport",
}


def signature_parts(member: object) -> tuple[str, ...]:
    """``inspect.signature(member)`` as the table writes it."""
    signature = inspect.signature(member)  # type: ignore[arg-type]
    parts: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.name == "self":
            continue
        if parameter.kind is parameter.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        parts.append(str(parameter))
    if signature.return_annotation is not inspect.Signature.empty:
        parts.append(f"-> {signature.return_annotation}")
    return tuple(parts)


def public_members(cls: type) -> dict[str, str | tuple[str, ...]]:
    found: dict[str, str | tuple[str, ...]] = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            found[name] = "property"
        elif isinstance(member, cached_property):
            found[name] = "cached_property"
        elif callable(member):
            found[name] = signature_parts(member)
    return found


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_public_signatures_are_pinned(cls):
    found = public_members(cls)
    expected = EXPECTED[cls.__name__]
    assert sorted(found) == sorted(expected), "public members added or removed"
    for name, signature in expected.items():
        assert found[name] == signature, f"{cls.__name__}.{name} changed"


def test_the_package_exports_the_public_types():
    assert set(memstore.__all__) == EXPORTED
    for name in EXPORTED:
        assert getattr(memstore, name) is not None


def test_an_unknown_keyword_is_refused_as_invalid_input_before_anything_runs():
    # The typed keywords keep the pydantic behaviour: an unknown field is an
    # InvalidInputError naming it, not a TypeError (tests/reliability/test_hostile_input.py).
    ns = object.__new__(Namespace)  # no database: the refusal comes before any use of it
    with pytest.raises(memstore.InvalidInputError, match="colour") as raised:
        ns.remember("x", colour="blue")  # type: ignore[call-arg]
    assert raised.value.field == "colour"
    with pytest.raises(memstore.InvalidInputError, match="colour"):
        ns.revise(1, "x", reason="r", colour="blue")  # type: ignore[call-arg]


def test_the_typed_keywords_are_the_models_fields():
    remember = inspect.signature(Namespace.remember).parameters
    fields = memstore.MemoryInput.model_fields
    assert set(remember) - {"self", "content"} == set(fields) - {"content"}
    for name, field in fields.items():
        if name != "content":
            assert remember[name].default == field.default, name
    link = inspect.signature(Namespace.link).parameters
    edge = memstore.LinkInput.model_fields
    assert set(link) - {"self"} == set(edge)
    for name in set(edge) - {"src", "dst"}:
        assert link[name].default == edge[name].default, name
    revise = inspect.signature(Namespace.revise).parameters
    assert set(revise) - {"self", "node_id", "content", "reason"} == set(fields) - {"content"}
    cultivate = inspect.signature(Namespace.cultivate).parameters
    assert set(cultivate) - {"self", "node_id", "content", "reason", "retire"} == set(fields) - {
        "content"
    }
