"""Validated input at the service boundary: pydantic models and one way to check them."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memstore.errors import InvalidInputError
from memstore.models import Layer, Unit

M = TypeVar("M", bound=BaseModel)


class LinkInput(BaseModel):
    """What :meth:`~memstore.namespace.Namespace.link` accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    src: int
    dst: int
    relation: str = Field(default="related", min_length=1, max_length=64)
    weight: Unit = 0.5
    inhibitory: bool = False
    confidence: Unit = 0.5
    layer: Layer = 1
    source: str | None = Field(default=None, max_length=2000)
    actor: str | None = Field(default=None, max_length=200)
    run_id: str | None = Field(default=None, max_length=200)


def validated(model: type[M], **values: Any) -> M:
    """``model(**values)``, or an :class:`InvalidInputError` that names each bad field."""
    for name, value in values.items():
        if isinstance(value, str) and "\x00" in value:
            raise InvalidInputError(f"{name} contains a NUL character", field=name)
    try:
        return model(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'input'}: {error['msg']}"
            for error in exc.errors()
        )
        first = exc.errors()[0]["loc"]
        raise InvalidInputError(problems, field=str(first[0]) if first else None) from None


def checked_reason(reason: object) -> str:
    """A non-blank reason without NUL characters, trimmed."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInputError("a reason is required", field="reason")
    if "\x00" in reason:
        raise InvalidInputError("reason contains a NUL character", field="reason")
    return reason.strip()
