"""Pydantic types at the API boundary: what memstore takes in and gives back."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


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
