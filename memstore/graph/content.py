"""Content normalisation: what makes two memories "the same" for idempotent ingest."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from memstore.errors import ContentTooLargeError, DataTooLargeError, InvalidInputError
from memstore.models import MAX_DATA_DEPTH, DataTooLarge, check_clean, json_size

_SPACE = re.compile(r"\s+")


def normalise(content: str) -> str:
    """NFC, whitespace runs collapsed to one space, trimmed.

    >>> normalise("  Alice\\n moved   to Lisbon ")
    'Alice moved to Lisbon'
    """
    return _SPACE.sub(" ", unicodedata.normalize("NFC", content)).strip()


def content_hash(content: str, dedupe_key: str | None = None) -> bytes:
    """sha256 of the normalised content: the idempotency key (with kind and node_type).

    A ``dedupe_key`` (e.g. a conversation turn's session and time) makes equal
    content with a different key a different memory.
    """
    text = normalise(content)
    if dedupe_key is not None:
        text += "\x1f" + dedupe_key  # a separator no normalised content contains
    return hashlib.sha256(text.encode()).digest()


def source_hash(text: str) -> bytes:
    """sha256 of exactly the text an embedder saw, to tell a stale vector."""
    return hashlib.sha256(text.encode()).digest()


def checked_content(content: object, *, limit: int, field: str = "content") -> str:
    """``content`` trimmed, or a clear error: not text, empty, NUL bytes, too large."""
    if not isinstance(content, str):
        raise InvalidInputError(f"{field} must be text, not {type(content).__name__}", field=field)
    text = content.strip()
    if not text:
        raise InvalidInputError(f"{field} is empty", field=field)
    try:
        check_clean(text)
    except ValueError as exc:
        raise InvalidInputError(f"{field} {exc}", field=field) from None
    size = len(text.encode())
    if size > limit:
        raise ContentTooLargeError(
            f"{field} is {size} bytes; the limit is {limit} (MEMSTORE_MAX_CONTENT_BYTES)",
            size=size,
            limit=limit,
        )
    return text


def checked_data(data: object, *, limit: int, field: str = "data") -> None:
    """Raise unless ``data`` is a JSON document of at most ``limit`` bytes and
    :data:`~memstore.models.MAX_DATA_DEPTH` levels (``MEMSTORE_MAX_DATA_BYTES``).

    Cheap whatever the input: the walk stops at the first level too deep or as
    soon as the running size passes the limit (:func:`~memstore.models.json_size`).
    """
    if data is None:
        return
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"{field} must be a JSON object (a dict), not {type(data).__name__}", field=field
        )
    try:
        json_size(data, limit=limit, max_depth=MAX_DATA_DEPTH)
    except DataTooLarge:
        raise DataTooLargeError(
            f"{field} is more than {limit} bytes as JSON; the limit is {limit}"
            " (MEMSTORE_MAX_DATA_BYTES)",
            limit=limit,
            field=field,
        ) from None
    except ValueError as exc:
        raise InvalidInputError(f"{field} {exc}", field=field) from None
