"""Embedders: text -> unit vectors. The vectors are a cache; the nodes are the truth."""

from memstore.embedding.adapter import CallableEmbedder
from memstore.embedding.base import Embedder, normalise
from memstore.embedding.hashing import HashingEmbedder

__all__ = ["CallableEmbedder", "Embedder", "HashingEmbedder", "normalise"]
