"""MemstoreStore with LangGraph's ``index`` config: the named fields embedded with the
given function (as LangGraph's vector-store tests configure PostgresStore)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import sqlalchemy as sa
from langgraph.store.base import IndexConfig

from memstore.errors import ConfigurationError
from memstore.integrations.langgraph import MemstoreStore

DIMS = 64


def embed(texts: Sequence[str]) -> list[list[float]]:
    """A deterministic embedding of our own: counts of each character, folded into DIMS."""
    out = []
    for text in texts:
        vector = [0.0] * DIMS
        for char in text.lower():
            vector[ord(char) % DIMS] += 1.0
        out.append(vector)
    return out


def cosine(a: str, b: str) -> float:
    x, y = (np.asarray(v) for v in embed([a, b]))
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


@pytest.fixture
def vectors(memory_store):
    return MemstoreStore(
        memory_store, index=IndexConfig(dims=DIMS, embed=embed, fields=["text"]), mode="semantic"
    )


def test_index_config_is_kept(vectors):
    assert vectors.index_config["dims"] == DIMS
    assert vectors.index_config["embed"] is embed
    assert vectors.index_config["fields"] == ["text"]


def test_semantic_scores_are_the_cosine_of_the_index_fields(vectors, memory_store):
    vectors.put(("docs",), "a", {"text": "zany zebra xerxes", "other": "dogs"})
    vectors.put(("docs",), "b", {"text": "something about dogs"})
    found = vectors.search(("docs",), query="zany xerxes")
    assert [item.key for item in found] == ["a", "b"]
    # Only the "text" field was embedded: the score is its cosine with the query.
    assert found[0].score == pytest.approx(cosine("zany zebra xerxes", "zany xerxes"), abs=1e-4)
    assert found[1].score == pytest.approx(cosine("something about dogs", "zany xerxes"), abs=1e-4)
    # The vectors are stored under the index's embedder, not the store's.
    with memory_store.transaction() as conn:
        models = set(
            conn.execute(sa.text("SELECT DISTINCT model FROM memstore.embeddings")).scalars()
        )
    assert len(models) == 1 and next(iter(models)).startswith("langgraph:")


def test_an_update_is_embedded_again(vectors):
    vectors.put(("t",), "doc1", {"text": "zany zebra xerxes"})
    vectors.put(("t",), "doc2", {"text": "something about dogs"})
    before = vectors.search(("t",), query="zany xerxes")[0]
    assert before.key == "doc1"
    vectors.put(("t",), "doc1", {"text": "new text about birds"})
    after = {i.key: i.score for i in vectors.search(("t",), query="zany xerxes")}
    assert after["doc1"] < before.score
    assert vectors.search(("t",), query="new text about birds")[0].key == "doc1"


def test_fields_per_put_and_index_false(vectors):
    vectors.put(("t",), "d3", {"key0": "aaa", "key1": "bbb", "key2": "ccc"}, index=["key0", "key1"])
    vectors.put(("t",), "d4", {"key0": "eee", "key1": "bbb", "key2": "fff"}, index=["key1"])
    assert vectors.search(("t",), query="aaa")[0].key == "d3"
    scores = [item.score for item in vectors.search(("t",), query="bbb")]
    assert scores[0] > scores[1]  # d4 is "bbb" alone
    # index=False: not embedded from its value; the key is all recall sees.
    vectors.put(("t",), "d5", {"text": "hhh iii"}, index=False)
    assert len(vectors.search(("t",))) == 3
    assert all(item.key != "d5" or item.score < 0.5 for item in vectors.search(("t",), query="hhh"))


def test_hybrid_search_finds_words_the_vectors_miss(memory_store):
    hybrid = MemstoreStore(memory_store, index=IndexConfig(dims=DIMS, embed=embed, fields=["text"]))
    hybrid.put(("t",), "lisbon", {"text": "Alice moved to Lisbon"})
    hybrid.put(("t",), "other", {"text": "Alice moved to Porto"})
    assert hybrid.search(("t",), query="Lisbon")[0].key == "lisbon"
    lexical = MemstoreStore(memory_store, index=IndexConfig(dims=DIMS, embed=embed), mode="lexical")
    assert [i.key for i in lexical.search(("t",), query="Lisbon")] == ["lisbon"]


def test_non_ascii_text(vectors):
    texts = {"1": "这是中文", "2": "これは日本語です", "3": "이건 한국어야", "4": "Это русский"}
    for key, text in texts.items():
        vectors.put(("user_123", "memories"), key, {"text": text})
    for key, text in texts.items():
        assert vectors.search(("user_123", "memories"), query=text)[0].key == key


def test_bad_index_configs_are_refused(memory_store):
    with pytest.raises(ConfigurationError, match="dims"):
        MemstoreStore(memory_store, index={"dims": memory_store.embedder.dims + 1})
    with pytest.raises(ConfigurationError, match="dims"):
        MemstoreStore(memory_store, index={"embed": embed})
    # No embed: memstore's own embedder, whose dims it must state if it states any.
    own = MemstoreStore(memory_store, index={"dims": memory_store.embedder.dims, "fields": ["a"]})
    assert own.store is memory_store


def test_from_conn_string_with_an_index(fresh_url):
    index = IndexConfig(dims=DIMS, embed=embed, fields=["text"])
    with MemstoreStore.from_conn_string(fresh_url, index=index, mode="semantic") as store:
        assert store.store.embedder.dims == DIMS
        store.put(("a",), "k", {"text": "zany zebra"})
        assert store.search(("a",), query="zebra")[0].score == pytest.approx(
            cosine("zany zebra", "zebra"), abs=1e-4
        )


class Documents:
    """Shaped like LangChain's Embeddings (embed_documents, embed_query), not callable."""

    dims = DIMS

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return embed(texts)

    def embed_query(self, text: str) -> list[float]:
        return embed([text])[0]


def test_an_embeddings_object_is_used_as_it_is(memory_store):
    documents = Documents()
    index = IndexConfig(dims=DIMS, embed=documents)  # type: ignore[typeddict-item]
    store = MemstoreStore(memory_store, index=index, mode="semantic")
    assert store.index_config is not None
    assert store.index_config["embed"] is documents  # type: ignore[comparison-overlap]
    store.put(("t",), "k", {"text": "zany zebra"})
    assert store.search(("t",), query="zebra")[0].score == pytest.approx(
        cosine('{"text": "zany zebra"}', "zebra"), abs=1e-4
    )
