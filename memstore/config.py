"""Settings: one pydantic-settings object, every variable prefixed ``MEMSTORE_``."""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstore.models import DEFAULT_MAX_DATA_BYTES, MAX_DATA_BYTES_CEILING, MAX_DATA_DEPTH


def default_data_dir() -> Path:
    """Per-user home of the embedded server: ``~/.local/share/memstore`` on Linux."""
    return platformdirs.user_data_path("memstore")


class Settings(BaseSettings):
    """How memstore finds its database.

    With no ``database_url`` memstore runs the embedded PostgreSQL in ``data_dir``.

    >>> Settings(database_url="postgresql://u@db/memory").database_url
    'postgresql://u@db/memory'
    """

    model_config = SettingsConfigDict(env_prefix="MEMSTORE_", extra="ignore")

    database_url: str | None = Field(
        default=None,
        description="PostgreSQL >= 15 with pgvector >= 0.8. Unset: the embedded server.",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Where the embedded server keeps its data (only without database_url).",
    )
    max_content_bytes: int = Field(
        default=64 * 1024,
        ge=1,
        le=100 * 1024 * 1024,
        description="Largest content (UTF-8 bytes) one memory may hold.",
    )
    max_data_bytes: int = Field(
        default=DEFAULT_MAX_DATA_BYTES,
        ge=2,
        le=MAX_DATA_BYTES_CEILING,
        description=(
            "Largest data document (UTF-8 bytes as compact JSON) one memory may hold;"
            f" it may also nest at most {MAX_DATA_DEPTH} levels deep."
        ),
    )
    embedder: str = Field(
        default="auto",
        description=(
            "Embedding model: 'auto' (the neural model when installed, else hashing),"
            " 'hashing' or 'neural'. Set but empty (or blank) means 'auto'."
        ),
    )

    @field_validator("embedder", mode="before")
    @classmethod
    def _empty_embedder_is_default(cls, value: object) -> object:
        # MEMSTORE_EMBEDDER= (exported empty, e.g. by a shell profile) means the default.
        if isinstance(value, str) and not value.strip():
            return "auto"
        return value

    prepared_statements: bool = Field(
        default=True,
        description=(
            "Keep recall's statements prepared on each pooled connection (no parsing and"
            " planning per call). Turn off behind a pooler in transaction mode that does"
            " not track prepared statements (pgbouncer before 1.21, or with"
            " max_prepared_statements = 0)."
        ),
    )
    privacy_ceiling: int = Field(
        default=3,
        ge=0,
        le=3,
        description=(
            "Highest privacy level (0-3) a read returns when the call names no"
            " privacy_ceiling of its own; 3 returns every memory. Writes run under it"
            " too: a memory above it cannot be read, linked, revised or written."
        ),
    )
    actor: str = Field(
        default="memstore",
        min_length=1,
        description="Actor recorded on tombstones, supersessions and redactions by default.",
    )
    serve_host: str = Field(
        default="127.0.0.1",
        min_length=1,
        description="Address `memstore serve` listens on (0.0.0.0: every interface).",
    )
    serve_port: int = Field(
        default=8750, ge=1, le=65535, description="Port `memstore serve` listens on."
    )
    serve_rate_limit: float = Field(
        default=0.0,
        ge=0.0,
        le=1_000_000,
        description=(
            "Requests per second each API key may send to `memstore serve` (a token"
            " bucket; 0 turns the limit off)."
        ),
    )
    serve_rate_burst: int = Field(
        default=20,
        ge=1,
        le=1_000_000,
        description="How many requests an API key may send at once before the rate applies.",
    )
    serve_max_body_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        le=1024 * 1024 * 1024,
        description="Largest request body `memstore serve` reads (larger: 413).",
    )
    serve_embedder_threads: int | None = Field(
        default=1,
        ge=1,
        le=64,
        description=(
            "ONNX intra-op threads of the neural embedder in `memstore serve`: 1, because"
            " concurrent requests each embed a query and 1 thread measured faster than 2"
            " at 1, 8 and 32 clients (docs/benchmark-notes.md). Unset: the embedder's 2."
        ),
    )
    serve_key_cache_seconds: float = Field(
        default=5.0,
        ge=0.0,
        le=3600.0,
        description=(
            "How long `memstore serve` trusts a key it has checked before asking the"
            " database again (0: every request); a revocation takes effect within it."
        ),
    )
    serve_access_log: bool = Field(
        default=True,
        description="Log one line per request of `memstore serve` (method, path, status).",
    )
    serve_embedder_batching: bool = Field(
        default=True,
        description=(
            "In `memstore serve`, embed the queries of concurrent requests in one batch"
            " (neural embedder): one run over 8 short texts costs about a third of 8 runs."
        ),
    )
    activation_retention_days: float = Field(
        default=30.0,
        ge=0.0,
        le=36500.0,
        description=(
            "How long `memstore maintain` keeps rows of the activation log (telemetry);"
            " older rows are summarised per day and node into activation_summaries, then"
            " removed. Truth tables are never pruned."
        ),
    )
    maintain_decay_period_hours: float = Field(
        default=24.0,
        gt=0.0,
        le=24.0 * 3650,
        description=(
            "One decay step of `memstore maintain` per this many hours since the last one"
            " (lesson confidence, Hebbian weights); a pass applies only the steps due, so"
            " a second pass at once changes nothing."
        ),
    )
    maintain_lesson_decay: float = Field(
        default=0.95,
        ge=0.0,
        le=1.0,
        description="Factor one decay step multiplies a never-applied lesson's confidence by.",
    )
    maintain_lesson_min_confidence: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="A never-applied lesson decayed below this confidence is retired (tombstoned).",
    )
    maintain_hebbian_decay: float = Field(
        default=0.9,
        ge=0.0,
        le=1.0,
        description=(
            "Factor one decay step multiplies the learned (Hebbian) weight of an edge not"
            " fired within the decay period by."
        ),
    )
    read_database_url: str | None = Field(
        default=None,
        description=(
            "Streaming replicas for reads (recall, activate, recall_context, get, lineage,"
            " listings, tier reads): one URL or several separated by commas. Writes and"
            " reads inside a write transaction use database_url (docs/operations.md)."
        ),
    )
    max_replica_lag: float = Field(
        default=10.0,
        ge=0.0,
        le=86_400.0,
        description=(
            "Seconds a replica may lag behind its primary and still serve reads; a replica"
            " further behind (or unreachable) is skipped with a warning."
        ),
    )
    stale_ok: bool = Field(
        default=False,
        description=(
            "Let reads use a replica that has not yet replayed this store's own last write"
            " (no read-your-writes; saves a round trip to the primary after each write)."
        ),
    )
