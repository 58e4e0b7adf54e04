"""Pydantic types at the API boundary: what memstore takes in and gives back."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

# Privacy levels: 0 public, 1 internal, 2 private, 3 secret. A caller's privacy
# ceiling hides every node above it.
PRIVACY_MAX = 3
# Layers: 0 SAFETY, 1 CORE, 2 CONTEXT, 3 TASK, 4 SUIT (lower fires first).
LAYER_MAX = 4
# Ids are PostgreSQL bigint: anything outside this range cannot name a row.
BIGINT_MIN = -(2**63)
BIGINT_MAX = 2**63 - 1


class StoreStatus(BaseModel):
    """What :meth:`memstore.MemoryStore.status` reports about a store."""

    model_config = ConfigDict(frozen=True)

    database_url: str
    """The URL in use, password hidden."""
    embedded: bool
    """True when memstore runs its own PostgreSQL."""
    server_version: str
    pgvector_version: str
    schema_revision: str | None
    package_revision: str
    row_counts: dict[str, int]
    """Rows per table of schema ``memstore``."""


class NamespaceInfo(BaseModel):
    """One namespace as :meth:`memstore.MemoryStore.namespaces` lists it."""

    model_config = ConfigDict(frozen=True)

    name: str
    created_at: datetime
    nodes: int
    """Its nodes (every version and status) up to the privacy ceiling of the call."""


# --- memories -----------------------------------------------------------------

Kind = Literal["working", "episodic", "semantic", "procedural"]
RecallMode = Literal["hybrid", "semantic", "lexical"]
TargetKind = Literal["node", "edge"]
# What ns.redact erases: every version of the memory's lineage, or the one named.
RedactVersions = Literal["all", "one"]
NODE_KINDS: tuple[str, ...] = get_args(Kind)

Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Layer = Annotated[int, Field(ge=0, le=LAYER_MAX)]
Privacy = Annotated[int, Field(ge=0, le=PRIVACY_MAX)]
RowId = Annotated[int, Field(strict=True, ge=BIGINT_MIN, le=BIGINT_MAX)]
"""A node or edge id: an int (not a bool, not text) in PostgreSQL's bigint range."""

# How deep input (``data`` above all) may nest: deeper input is junk, and
# walking it risks Python's recursion limit.
MAX_NESTING = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_clean(value: object, depth: int = 0) -> None:
    """Raise ValueError if ``value`` holds what PostgreSQL cannot store or compare.

    Text (or bytes) with a NUL character, text with a lone surrogate (not valid Unicode), a float
    that is NaN or infinite, nesting deeper than :data:`MAX_NESTING`. Lists,
    tuples, sets and dict keys and values are searched; other objects (numpy
    arrays, models) are left to their own validation.
    """
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("contains a NUL character")
        if _SURROGATE.search(value):
            raise ValueError("contains a lone surrogate: not valid Unicode text")
    elif isinstance(value, bytes | bytearray):
        if b"\x00" in value:  # pydantic would decode it to text with a NUL
            raise ValueError("contains a NUL character")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("is not a finite number")
    elif isinstance(value, dict | list | tuple | set | frozenset):
        if depth >= MAX_NESTING:
            raise ValueError(f"nests deeper than {MAX_NESTING} levels")
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        for item in items:
            check_clean(item, depth + 1)


# The data document (a memory's ``data``): how deep it may nest, and the largest
# ``MEMSTORE_MAX_DATA_BYTES`` may allow (the model checks this ceiling wherever a
# MemoryInput is built; the namespace checks the configured limit before it
# writes, see memstore.graph.content.checked_data).
MAX_DATA_DEPTH = 32
DEFAULT_MAX_DATA_BYTES = 64 * 1024
MAX_DATA_BYTES_CEILING = 16 * 1024 * 1024
# The most items a filter list (kinds, node_types, tiers, seeds) may hold.
MAX_FILTER_ITEMS = 100
_JSON_NAMES = {None: 4, True: 4, False: 5}  # null, true, false


class DataTooLarge(ValueError):
    """A JSON document is larger than ``limit`` bytes (raised before it was all read)."""

    def __init__(self, message: str, *, limit: int):
        super().__init__(message)
        self.limit = limit


def json_size(value: object, *, limit: int, max_depth: int = MAX_DATA_DEPTH) -> int:
    """The UTF-8 bytes of ``value`` as compact JSON, checked while it is walked.

    Raises ValueError for what is not JSON (text, numbers, booleans, null,
    lists, objects; object keys text or scalars, as :func:`json.dumps` takes
    them), text PostgreSQL cannot hold (NUL, lone surrogates), a float that is
    NaN or infinite, or nesting deeper than ``max_depth`` containers; and
    :class:`DataTooLarge` as soon as the running size passes ``limit``. The walk
    is iterative (no recursion limit) and stops at the first problem, so a
    50 MB document or a million-element list costs about ``limit`` bytes of
    work, never a serialisation of the whole thing.

    >>> json_size({"a": [1, "é"]}, limit=100)  # {"a":[1,"é"]}: é is two bytes
    14
    """
    size = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            size += _text_size(item, limit - size)
        elif item is None or isinstance(item, bool):
            size += _JSON_NAMES[item]
        elif isinstance(item, int):
            # ~3.3 bits a digit: refuse an absurd integer without printing it.
            if item.bit_length() > 4 * (limit - size + 1):
                raise DataTooLarge(f"is more than {limit} bytes as JSON", limit=limit)
            try:
                size += len(str(item))
            except ValueError:  # more digits than Python will print
                raise ValueError("holds an integer too large to store") from None
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError("is not a finite number")
            size += len(repr(item))
        elif isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                raise ValueError(f"nests deeper than {max_depth} levels")
            size += 2 + max(len(item) - 1, 0)  # brackets and commas
            if size > limit:  # before reading a million entries
                raise DataTooLarge(f"is more than {limit} bytes as JSON", limit=limit)
            if isinstance(item, dict):
                size += len(item)  # colons
                for key, child in item.items():
                    if not isinstance(key, str):
                        if key is not None and not isinstance(key, int | float):
                            raise ValueError(
                                f"must be JSON: object keys must be text, not {type(key).__name__}"
                            )
                        key = json.dumps(key)  # how json.dumps writes a scalar key
                    stack.append((key, depth + 1))
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        else:
            raise ValueError(
                "must be JSON (text, numbers, booleans, null, lists, objects), "
                f"not {type(item).__name__}"
            )
        if size > limit:
            raise DataTooLarge(f"is more than {limit} bytes as JSON", limit=limit)
    return size


def _text_size(text: str, room: int) -> int:
    """Bytes of ``text`` as a JSON string; more than ``room`` without encoding it when it is
    longer than ``room`` characters (a character is at least one byte)."""
    if len(text) > room:
        return len(text) + 2
    if "\x00" in text:
        raise ValueError("contains a NUL character")
    try:
        return len(json.dumps(text, ensure_ascii=False).encode())
    except UnicodeEncodeError:
        raise ValueError("contains a lone surrogate: not valid Unicode text") from None


ShortText = Annotated[str, Field(min_length=1, max_length=200)]
Reason = Annotated[str, Field(min_length=1, max_length=2000)]


# Tags (docs/recall.md, "Tags"): short labels a memory carries, filtered on by
# recall, activate, recall_context and list_memories (a memory matches when it
# carries every tag asked for).
TAG_MAX_LENGTH = 64
MAX_TAGS = 32
# Control (Cc), format (Cf: zero-width and direction marks), surrogate (Cs),
# private-use (Co) and unassigned (Cn) characters: a tag that looks like
# another, or prints as nothing, is refused.
_TAG_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})


def normalise_tag(tag: object) -> str:
    """A tag as stored: NFKC, whitespace runs collapsed to one space, trimmed, lower-cased.

    Raises ValueError (naming the tag) for what is not text, is empty once
    trimmed, is longer than :data:`TAG_MAX_LENGTH` characters, or holds a
    control or format character.

    >>> normalise_tag("  Project  X ")
    'project x'
    """
    if not isinstance(tag, str):
        raise ValueError(f"a tag must be text, not {type(tag).__name__}")
    if len(tag) > 16 * TAG_MAX_LENGTH:  # refused before it is read character by character
        raise ValueError(f"tag {tag[:20]!r}... is longer than {TAG_MAX_LENGTH} characters")
    for char in tag:
        if unicodedata.category(char) in _TAG_REFUSED_CATEGORIES and char not in "\t\n\r":
            raise ValueError(
                f"tag {tag[:20]!r} holds a control or format character (U+{ord(char):04X})"
            )
    text = " ".join(unicodedata.normalize("NFKC", tag).split()).lower()
    if not text:
        raise ValueError("a tag must not be empty")
    if len(text) > TAG_MAX_LENGTH:
        raise ValueError(f"tag {text[:20]!r}... is longer than {TAG_MAX_LENGTH} characters")
    return text


def normalise_tags(tags: object, *, limit: int = MAX_TAGS) -> list[str]:
    """``tags`` normalised (:func:`normalise_tag`), duplicates dropped, first occurrence kept.

    A bare string is refused (``"urgent"`` is not ``["urgent"]``: iterating it
    would store one tag per letter), and so are more than ``limit`` tags.

    >>> normalise_tags(["Work", "work ", "Urgent"])
    ['work', 'urgent']
    """
    if isinstance(tags, str | bytes) or not isinstance(tags, list | tuple | set | frozenset):
        raise ValueError(f"tags must be a list of texts, not {type(tags).__name__}")
    if len(tags) > limit:
        raise ValueError(f"at most {limit} tags, not {len(tags)}")
    return list(dict.fromkeys(normalise_tag(tag) for tag in tags))


def _tags_or_none(value: object) -> list[str] | None:
    return None if value is None else normalise_tags(value)


Tags = Annotated[list[str] | None, BeforeValidator(_tags_or_none)]
"""Tags as given: normalised and deduplicated (at most :data:`MAX_TAGS`), or None (none)."""
TagFilter = Tags
"""The tags a read asks for (every one must be carried); None or [] asks for none."""


class NodeStatus(StrEnum):
    """Where a node stands: readable now, replaced, forgotten, or erased."""

    CURRENT = "current"
    SUPERSEDED = "superseded"
    TOMBSTONED = "tombstoned"
    REDACTED = "redacted"


class MemoryInput(BaseModel):
    """One memory to remember: everything :meth:`Namespace.remember` accepts.

    Content limits (non-empty, at most ``MEMSTORE_MAX_CONTENT_BYTES``) are checked
    by the namespace, which knows the configured limit; so is the size of
    ``data`` (``MEMSTORE_MAX_DATA_BYTES``). The model itself holds ``data`` to
    JSON, :data:`MAX_DATA_DEPTH` levels and :data:`MAX_DATA_BYTES_CEILING`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str
    kind: Kind = "episodic"
    node_type: Annotated[str, Field(min_length=1, max_length=64)] = "Memory"
    tier: ShortText | None = None
    layer: Layer = 1
    label: Annotated[str, Field(max_length=1000)] | None = None
    data: dict[str, Any] | None = None
    importance: Unit = 0.5
    confidence: Unit = 0.5
    decay_rate: Unit = 0.5
    privacy: Privacy = 0
    protected: bool = False
    subject: ShortText | None = None
    scope: ShortText | None = None
    source: Annotated[str, Field(max_length=2000)] | None = None
    actor: ShortText | None = None
    run_id: ShortText | None = None
    observed_at: AwareDatetime | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    embedding: Any = Field(default=None, exclude=True, repr=False)
    """A precomputed vector for the namespace's embedder (numpy array or list)."""
    dedupe_key: Annotated[str, Field(min_length=1, max_length=500)] | None = Field(
        default=None, exclude=True
    )
    """Part of the idempotency key, not stored: equal content with another key is
    another memory (a repeated "ok" in a conversation is two turns)."""
    tags: Tags = None
    """Labels to filter reads on: normalised (NFKC, trimmed, lower case), deduplicated;
    None stores none."""

    @field_validator("*", mode="after")
    @classmethod
    def _clean(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name != "data":  # _json walks data once, with its limits
            check_clean(value)
        return value

    @field_validator("data", mode="after")
    @classmethod
    def _json(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # The ceiling of MEMSTORE_MAX_DATA_BYTES; the namespace checks the
        # configured limit (memstore.graph.content.checked_data) before it writes.
        json_size(value, limit=MAX_DATA_BYTES_CEILING)
        return value

    @model_validator(mode="after")
    def _valid_period(self) -> MemoryInput:
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            raise ValueError("valid_to must be later than valid_from")
        return self


class Node(BaseModel):
    """A memory as stored, with its status and provenance."""

    model_config = ConfigDict(frozen=True)

    id: int
    namespace: str
    kind: Kind
    node_type: str
    tier: str | None
    layer: int
    label: str | None
    content: str
    data: dict[str, Any]
    importance: float
    confidence: float
    decay_rate: float
    privacy: int
    protected: bool
    subject: str | None
    scope: str | None
    source: str | None
    actor: str | None
    run_id: str | None
    observed_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    status: NodeStatus
    superseded_by: int | None = None
    """The next version, when this node was revised."""
    tags: list[str] = Field(default_factory=list)
    """The memory's tags (empty for memories stored without, and once erased)."""
    last_confirmed_at: datetime | None = None
    """When a later observation last confirmed it: ``ns.confirm``, or ``ns.remember`` of
    the same content while it is current (None: never). Transaction time, as
    ``recorded_at``; a confirmation belongs to this version, not to its lineage."""


class Edge(BaseModel):
    """A typed, weighted link between two nodes of one namespace."""

    model_config = ConfigDict(frozen=True)

    id: int
    namespace: str
    src: int
    dst: int
    relation: str
    weight: float
    inhibitory: bool
    confidence: float
    layer: int
    source: str | None
    actor: str | None
    run_id: str | None
    recorded_at: datetime
    tombstoned: bool = False
    learned_weight: float | None = None
    """The Hebbian weight co-activation learned (0 to 1), where the read reports it
    (:meth:`~memstore.namespace.Namespace.edges`); None elsewhere."""


class ScoreParts(BaseModel):
    """How a hit scored: each signal that found it, and the fused result."""

    model_config = ConfigDict(frozen=True)

    similarity: float | None = None
    """Cosine similarity between the query and the node's vector."""
    lexical: float | None = None
    """BM25 score of the node for the query (None in semantic mode)."""
    semantic_rank: int | None = None
    lexical_rank: int | None = None
    fused_rank: int


class Hit(BaseModel):
    """One recalled memory: ``node``, its ``score`` (higher is better) and the parts."""

    model_config = ConfigDict(frozen=True)

    node: Node
    score: float
    parts: ScoreParts
    instruction_signals: tuple[str, ...] = ()
    """Why the memory reads like instructions aimed at the agent (empty: it does not).

    Names from :data:`memstore.recall.injection.SIGNALS`. The content is data
    whatever this says; the flag makes a stored prompt-injection attempt visible.
    """


class EmbeddingStatus(BaseModel):
    """Freshness of one namespace's vectors for one model."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    model: str
    dims: int
    nodes: int
    """Nodes that should have a vector (not redacted)."""
    fresh: int
    missing: int
    stale: int
    """Vectors whose source text no longer matches the node."""
    index: bool
    """Whether the model's HNSW index exists."""


class Neighbour(BaseModel):
    """A memory near another one: its current ``node`` and ``distance`` in live edges."""

    model_config = ConfigDict(frozen=True)

    node: Node
    distance: int


class Recalled(list[Hit]):
    """What :meth:`~memstore.namespace.Namespace.recall` returns: the hits, best first (a
    list), and what the semantic side could not see.

    ``missing_vectors`` counts the current memories (up to the privacy ceiling)
    without a vector for the store's embedder ``model``: recall found them by
    their text alone. ``missing_ids`` names the first of them (at most
    :data:`MISSING_IDS_SHOWN`). :attr:`notice` says it in a sentence, with the fix.
    """

    model: str | None
    namespace: str | None
    missing_vectors: int
    missing_ids: tuple[int, ...]

    def __init__(
        self,
        hits: Iterable[Hit] = (),
        *,
        model: str | None = None,
        namespace: str | None = None,
        missing_vectors: int = 0,
        missing_ids: Iterable[int] = (),
    ):
        super().__init__(hits)
        self.model = model
        self.namespace = namespace
        self.missing_vectors = missing_vectors
        self.missing_ids = tuple(missing_ids)

    @property
    def notice(self) -> str | None:
        """One sentence on the memories without a vector and how to fix it (None: none)."""
        return missing_vectors_notice(
            self.missing_vectors, self.missing_ids, self.model, self.namespace
        )


def missing_vectors_notice(
    missing: int, ids: Iterable[int], model: str | None, namespace: str | None
) -> str | None:
    """What a recall of ``namespace`` says when ``missing`` current memories (the first
    of them ``ids``) have no vector for the embedder ``model``; None when none lack one."""
    if not missing:
        return None
    shown = [str(i) for i in ids]
    more = ", ..." if missing > len(shown) else ""
    many = "memory has" if missing == 1 else "memories have"
    return (
        f"{missing} {many} no vector for the embedder {model!r}"
        f" (ids {', '.join(shown)}{more}): recall matched them by text only. Compute"
        f" their vectors with `memstore embed rebuild -n {namespace or 'NAME'}`"
        " (ns.rebuild_embeddings())."
    )


MISSING_IDS_SHOWN = 10


class ExportSummary(BaseModel):
    """What :meth:`~memstore.namespace.Namespace.export` wrote (docs/operations.md)."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    exported_at: datetime
    """The snapshot's time: the file holds the namespace as it was then."""
    rows: dict[str, int]
    """Lines per section (``node``, ``edge``, … ``embedding``)."""
    vectors: bool
    """Whether the file carries the store's embedding vectors."""
    bytes: int


class RestoreSummary(BaseModel):
    """What :meth:`~memstore.store.MemoryStore.restore` rebuilt (docs/operations.md)."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    source_namespace: str
    """The namespace the file was exported from."""
    exported_at: datetime
    rows: dict[str, int]
    """Rows written per section, under new ids."""
    vectors_restored: int
    """Vectors taken from the file (it carried them, for the store's embedder)."""
    vectors_embedded: int
    """Vectors computed by the store's embedder during the restore."""
