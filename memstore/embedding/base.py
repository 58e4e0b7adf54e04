"""The Embedder protocol every embedding model implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``name`` identifies the model *and* its configuration: it is stored with
    every vector (``memstore.embeddings.model``), so two embedders that could
    produce different vectors for the same text must have different names.
    """

    @property
    def name(self) -> str:
        """Model id stored with every vector, e.g. ``"hashing-384-v1"``."""
        ...

    @property
    def dims(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """A ``(len(texts), dims)`` float32 array of unit vectors (zero rows for empty texts)."""
        ...


def normalise(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: Vectors = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return out
