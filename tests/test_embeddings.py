"""The offline embedder matches sentence-transformers, and the cache embeds a text once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_mastra_memory.recall.embedders import (
    EMBEDDING_CACHE,
    CachedEmbeddings,
    MiniLMEmbeddings,
    default_embedder,
)

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "minilm_reference.json").read_text())


def test_vectors_match_sentence_transformers() -> None:
    ours = MiniLMEmbeddings().embed_array(REFERENCE["texts"])
    reference = np.array(REFERENCE["vectors"], dtype=np.float32)
    assert ours.shape == reference.shape == (len(REFERENCE["texts"]), 384)
    assert np.abs(ours - reference).max() < 1e-5  # measured: 2.3e-7
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_int8_keeps_the_float_models_geometry(caplog) -> None:
    """The quantized model is another model (its own name, so caches and collections never mix
    its vectors with the float model's) whose vectors stay close to the float ones and rank
    neighbours alike."""
    int8 = MiniLMEmbeddings(precision="int8")
    assert int8.model_name == "all-MiniLM-L6-v2-int8"
    assert "pre-processing" not in caplog.text
    ours = int8.embed_array(REFERENCE["texts"])
    reference = np.array(REFERENCE["vectors"], dtype=np.float32)
    cosine = (ours * reference).sum(axis=1)
    assert cosine.min() > 0.97 and cosine.mean() > 0.985  # measured: 0.98 / 0.99 on LoCoMo
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(ours, reference, atol=1e-4)  # really the quantized graph
    pairs = np.triu_indices(len(reference), k=1)  # every pair's similarity, as the float model
    assert np.corrcoef((ours @ ours.T)[pairs], (reference @ reference.T)[pairs])[0, 1] > 0.98
    alone = np.stack([int8.embed_array([text])[0] for text in REFERENCE["texts"]])
    assert np.allclose(alone, ours, atol=1e-6)  # a vector never depends on its batch-mates
    cached = CachedEmbeddings(int8)
    assert cached._key("x") != CachedEmbeddings(MiniLMEmbeddings())._key("x")


def test_an_unknown_precision_is_refused() -> None:
    import pytest

    from langchain_mastra_memory.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="precision must be"):
        MiniLMEmbeddings(precision="float16")  # type: ignore[arg-type]


def test_long_inputs_are_truncated_like_the_model() -> None:
    embedder = MiniLMEmbeddings()
    long_text = "memory " * 2_000
    assert len(embedder.tokenizer.encode(long_text).ids) == embedder.max_tokens
    assert np.allclose(
        embedder.embed_query(long_text), embedder.embed_query("memory " * 400), atol=1e-6
    )


async def test_async_matches_sync() -> None:
    embedder = default_embedder()
    assert np.allclose(await embedder.aembed_query("hello"), embedder.embed_query("hello"))
    assert np.allclose(
        await embedder.aembed_documents(["a", "b"]), embedder.embed_documents(["a", "b"])
    )


class Counting(Embeddings):
    """Wraps the real model and counts the texts it is asked to embed."""

    model_name = "counting-minilm"
    symmetric = True  # MiniLM's: a query's vector is the document's (one cache entry)

    def __init__(self) -> None:
        self.inner, self.texts = MiniLMEmbeddings(), 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.texts += 1
        return self.inner.embed_query(text)


def test_the_cache_is_shared_across_instances_and_embeds_each_text_once() -> None:
    counting = Counting()
    hits_before = EMBEDDING_CACHE.hits
    first, second = CachedEmbeddings(counting), CachedEmbeddings(counting)
    unique = f"a sentence seen for the first time {id(counting)}"
    first.embed_documents([unique, unique, "hello world again"])
    second.embed_query(unique)
    second.embed_documents(["hello world again", unique])
    assert counting.texts == 2
    assert CachedEmbeddings(first).embedder is counting  # no cache stacked on a cache
    assert EMBEDDING_CACHE.hits - hits_before == 3  # the later query and batch (a repeat
    # inside the first batch is embedded once without a cache lookup)


def test_the_cache_is_bounded_in_bytes_and_keeps_float32() -> None:
    from langchain_mastra_memory.recall.embedders import VectorCache

    cache = VectorCache(max_bytes=10 * 384 * 4)  # room for ten 384-dimensional vectors
    for i in range(25):
        cache.put(("m", bytes([i])), [i / 100] * 384)
    assert cache.bytes <= 10 * 384 * 4 and len(cache.data) == 10
    assert cache.get(("m", bytes([0]))) is None  # the oldest went first
    newest = cache.get(("m", bytes([24])))
    assert newest is not None and abs(newest[0] - 0.24) < 1e-6
    assert all(v.dtype.name == "float32" for v in cache.data.values())


class Prefixed(Embeddings):
    """An asymmetric model, as e5 is: ``query: `` and ``passage: `` before the text."""

    model_name = "prefixed-minilm"

    def __init__(self) -> None:
        self.inner = MiniLMEmbeddings()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents([f"passage: {t}" for t in texts])

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(f"query: {text}")


def test_an_asymmetric_embedder_gets_query_vectors_for_queries() -> None:
    """A question saved as a message (embedded as a document) and then searched for (as a
    query): the query gets the model's query vector, not the cached document one."""
    model = Prefixed()
    cached = CachedEmbeddings(model)
    text = f"where did I leave the keys {id(model)}"
    as_document = cached.embed_documents([text])[0]
    as_query = cached.embed_query(text)
    assert np.allclose(as_query, model.embed_query(text))
    assert not np.allclose(as_query, as_document)
    assert np.allclose(asyncio.run(cached.aembed_query(text)), as_query)
    assert np.allclose(cached.embed_documents([text])[0], model.embed_documents([text])[0])


def test_symmetry_is_known_for_ours_and_declared_for_others() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_mastra_memory.recall.embedders import is_symmetric

    assert is_symmetric(MiniLMEmbeddings()) and is_symmetric(DeterministicFakeEmbedding(size=8))
    assert not is_symmetric(Prefixed()) and is_symmetric(Counting())
