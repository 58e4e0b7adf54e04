"""Concurrent single-text embeddings run as one batch: :class:`BatchingEmbedder`.

Every recall embeds its query, one text a call. Under concurrent requests the
calls queue behind each other; one ONNX run over eight short queries costs
about a third of eight runs (docs/benchmark-notes.md, "Serving over HTTP").
So while one run is in progress, the texts that arrive wait, and the next run
takes all of them (up to :data:`MAX_BATCH`). No call waits for company: alone,
a text is embedded at once, exactly as without the wrapper.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memstore.embedding.base import Embedder, Vectors

MAX_BATCH = 32


class _Slot:
    __slots__ = ("error", "result", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.result: Vectors | None = None
        self.error: BaseException | None = None


class BatchingEmbedder:
    """``inner`` with concurrent one-text calls merged into batches; other calls pass through."""

    def __init__(self, inner: Embedder, *, max_batch: int = MAX_BATCH) -> None:
        self.inner = inner
        self.max_batch = max_batch
        self._pending: list[_Slot] = []
        self._running = False
        self._ready = threading.Condition()
        self.runs = 0
        """How many times the inner embedder ran for single texts (for measurements)."""

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dims(self) -> int:
        return self.inner.dims

    def __getattr__(self, attribute: str) -> Any:
        # semantic_weight, threads, max_length …: whatever the inner embedder says.
        return getattr(self.inner, attribute)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if len(texts) != 1:
            return self.inner.embed(texts)
        slot = _Slot(texts[0])
        with self._ready:
            self._pending.append(slot)
        while True:
            with self._ready:
                while self._running and slot.result is None and slot.error is None:
                    self._ready.wait()
                if slot.error is not None:
                    raise slot.error
                if slot.result is not None:
                    return slot.result
                # Nobody is running and this text is still waiting: run a batch.
                self._running = True
                batch = self._pending[: self.max_batch]
                del self._pending[: self.max_batch]
            self._run(batch)

    def _run(self, batch: list[_Slot]) -> None:
        try:
            vectors = self.inner.embed([slot.text for slot in batch])
            for row, slot in enumerate(batch):
                slot.result = np.ascontiguousarray(vectors[row : row + 1])
        except BaseException as exc:
            for slot in batch:
                slot.error = exc
        finally:
            with self._ready:
                self.runs += 1
                self._running = False
                self._ready.notify_all()


__all__ = ["MAX_BATCH", "BatchingEmbedder"]
