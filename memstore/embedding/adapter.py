"""Any embedding function as an :class:`~memstore.embedding.base.Embedder`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memstore.embedding.base import Vectors, normalise
from memstore.errors import DimensionMismatchError, InvalidInputError


class CallableEmbedder:
    """Wraps ``fn(texts) -> vectors`` (lists, numpy, anything ``np.asarray`` takes).

    Use it for an OpenAI-compatible client, sentence-transformers, or a service
    of your own; the output is checked (shape, finite) and L2-normalised.

    >>> import numpy as np
    >>> e = CallableEmbedder("ones-4", 4, lambda texts: np.ones((len(texts), 4)))
    >>> e.embed(["a", "b"]).shape
    (2, 4)

    With an OpenAI-compatible client (not a dependency of memstore)::

        client = openai.OpenAI()
        embedder = CallableEmbedder(
            "text-embedding-3-small", 1536,
            lambda texts: [d.embedding for d in client.embeddings.create(
                model="text-embedding-3-small", input=list(texts)).data],
        )
    """

    def __init__(self, name: str, dims: int, fn: Callable[[list[str]], Any]):
        if not name or not isinstance(name, str):
            raise InvalidInputError("an embedder needs a name", field="name")
        if not 1 <= dims <= 16000:
            raise InvalidInputError("dims must be between 1 and 16000", field="dims")
        self._name = name
        self._dims = dims
        self._fn = fn

    @property
    def name(self) -> str:
        """The model id given at construction."""
        return self._name

    @property
    def dims(self) -> int:
        """The vector length given at construction."""
        return self._dims

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Call the function and check what it returns."""
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        vectors = np.asarray(self._fn(list(texts)), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise InvalidInputError(
                f"embedder {self._name!r} returned shape {vectors.shape} for {len(texts)} texts"
            )
        if vectors.shape[1] != self._dims:
            raise DimensionMismatchError(
                f"embedder {self._name!r} returned {vectors.shape[1]} dimensions,"
                f" declared {self._dims}",
                expected=self._dims,
                got=int(vectors.shape[1]),
            )
        if not np.isfinite(vectors).all():
            raise InvalidInputError(f"embedder {self._name!r} returned NaN or infinity")
        return normalise(vectors)
