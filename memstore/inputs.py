"""Validated input at the service boundary: pydantic models and one way to check them."""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memstore.errors import InvalidInputError
from memstore.models import (
    BIGINT_MAX,
    BIGINT_MIN,
    Layer,
    RowId,
    Unit,
    check_clean,
    normalise_tags,
)

M = TypeVar("M", bound=BaseModel)
P = ParamSpec("P")
R = TypeVar("R")


class Unchanged(enum.Enum):
    """The default of a revision's fields: the new version keeps the old version's value."""

    KEEP = "keep"

    def __repr__(self) -> str:
        return "KEEP"


KEEP = Unchanged.KEEP


def given(values: Mapping[str, Any], *leave_out: str) -> dict[str, Any]:
    """A verb's keyword fields as a dict for its model: ``values`` (the verb's ``locals()``
    on entry) without ``leave_out`` and without the fields left at :data:`KEEP`."""
    return {
        name: value for name, value in values.items() if name not in leave_out and value is not KEEP
    }


def known_keywords(verb: Callable[P, R]) -> Callable[P, R]:
    """Refuse a keyword ``verb`` does not name with :class:`InvalidInputError`, as the
    pydantic model behind it would (extra fields are forbidden), not with Python's
    ``TypeError``; the signature (``inspect.signature``, type checkers) stays ``verb``'s."""
    parameters = inspect.signature(verb).parameters.values()
    named = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}

    @functools.wraps(verb)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        unknown = sorted(set(kwargs) - named)
        if unknown:
            raise InvalidInputError(
                f"{unknown[0]}: Extra inputs are not permitted", field=unknown[0]
            )
        return verb(*args, **kwargs)

    return checked


class LinkInput(BaseModel):
    """What :meth:`~memstore.namespace.Namespace.link` accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    src: RowId
    dst: RowId
    relation: str = Field(default="related", min_length=1, max_length=64)
    weight: Unit = 0.5
    inhibitory: bool = False
    confidence: Unit = 0.5
    layer: Layer = 1
    source: str | None = Field(default=None, max_length=2000)
    actor: str | None = Field(default=None, max_length=200)
    run_id: str | None = Field(default=None, max_length=200)


def validated(model: type[M], **values: Any) -> M:
    """``model(**values)``, or an :class:`InvalidInputError` that names each bad field.

    Every value is first searched for what the database cannot hold (NUL
    characters, lone surrogates, NaN or infinite floats, absurd nesting:
    :func:`~memstore.models.check_clean`), so such input never reaches SQL.
    """
    for name, value in values.items():
        try:
            check_clean(value)
        except ValueError as exc:
            raise InvalidInputError(f"{name} {exc}", field=name) from None
    try:
        return model(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'input'}: {error['msg']}"
            for error in exc.errors()
        )
        first = exc.errors()[0]["loc"]
        raise InvalidInputError(problems, field=str(first[0]) if first else None) from None


def checked_id(value: object, field: str = "node_id") -> int:
    """``value`` if it can be a row id: an int (not a bool) within PostgreSQL's bigint."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            f"{field} must be an integer id, not {type(value).__name__}", field=field
        )
    if not BIGINT_MIN <= value <= BIGINT_MAX:
        raise InvalidInputError(f"{field} {value} is outside the range of ids", field=field)
    return value


def checked_text(value: object, field: str, *, max_length: int = 200) -> str:
    """``value`` if it is text of 1 to ``max_length`` characters that a database can hold."""
    if not isinstance(value, str) or not 1 <= len(value) <= max_length:
        raise InvalidInputError(
            f"{field} must be text of 1 to {max_length} characters", field=field
        )
    try:
        check_clean(value)
    except ValueError as exc:
        raise InvalidInputError(f"{field} {exc}", field=field) from None
    return value


# The longest reason (or review note) a verb records, as the operations' Reason type.
REASON_MAX = 2000


def checked_reason(reason: object, field: str = "reason") -> str:
    """A non-blank reason of at most :data:`REASON_MAX` characters without NUL, trimmed."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInputError("a reason is required", field=field)
    if len(reason) > REASON_MAX:
        raise InvalidInputError(
            f"{field} may be at most {REASON_MAX} characters, not {len(reason)}", field=field
        )
    try:
        check_clean(reason)
    except ValueError as exc:
        raise InvalidInputError(f"{field} {exc}", field=field) from None
    return reason.strip()


def checked_tags(tags: object, field: str = "tags") -> list[str]:
    """``tags`` normalised (:func:`~memstore.models.normalise_tags`), or an
    :class:`InvalidInputError` that names ``field`` and the bad tag."""
    try:
        check_clean(tags)
        return normalise_tags(tags)
    except ValueError as exc:
        raise InvalidInputError(f"{field}: {exc}", field=field) from None
