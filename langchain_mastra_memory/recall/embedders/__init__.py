"""The embedders: what turns a message's pieces and a query into vectors.

- `minilm`: `MiniLMEmbeddings`, the offline default (all-MiniLM-L6-v2 in ONNX Runtime), with
  the encoder written as an ONNX graph from its weights (`bert_onnx`) over the files it finds
  (installed at setup from the registry).
- `cache`: `CachedEmbeddings`, the process-wide LRU any `Embeddings` goes behind, and
  `default_embedder()`.

Imports nothing else of recall: the engines, the ranking stages and the front use it.
"""

from .cache import (
    EMBEDDING_CACHE,
    CachedEmbeddings,
    VectorCache,
    default_embedder,
    is_symmetric,
    model_id,
)
from .minilm import MODEL_NAME, MiniLMEmbeddings

__all__ = [
    "EMBEDDING_CACHE",
    "MODEL_NAME",
    "CachedEmbeddings",
    "MiniLMEmbeddings",
    "VectorCache",
    "default_embedder",
    "is_symmetric",
    "model_id",
]
