"""Recall's second stage: any LangChain document compressor reorders the first stage's best
candidates, and the two rankings are fused.

The first stage (vector, keyword or hybrid search) is fast and finds most of what was said,
but ranks it coarsely; a reranker (a cross-encoder, Cohere's or Voyage's rerank API,
FlashRank, ...) reads the question beside each candidate and ranks better, at a cost per
candidate. So it scores only the first stage's top `rerank_pool` (each a `Document`: the
speaker and the date before the text, the ids in its metadata), and its order is fused with
the first stage's by weighted reciprocal rank (``1 / (60 + rank)``): a candidate both stages
like wins, and a reranker that drops a candidate (a compressor may) leaves it its first-stage
share. No reranker ships inside the package: none of the registries' packages bundles
cross-encoder weights usable offline (see the docs' "Semantic recall").

Examples:
    >>> from langchain_core.documents import Document
    >>> first = [RecallHit("m1", "t1", 0.9), RecallHit("m2", "t1", 0.8)]
    >>> reranked = [Document("...", metadata={"message_id": "m2"})]
    >>> [h.message_id for h in fuse_ranks(first, reranked, weight=2.0)]
    ['m2', 'm1']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document

from ...errors import ConfigurationError
from ...messages import mastra_role, message_text
from ...storage.records import StoredMessage
from .fusion import RecallHit

RRF_K = 60  # reciprocal-rank fusion's constant (Cormack et al.; Elasticsearch's default)


def check_reranker(reranker: Any) -> Any:
    """`reranker` if it reorders documents as a LangChain `BaseDocumentCompressor` does."""
    if reranker is not None and not callable(getattr(reranker, "compress_documents", None)):
        msg = (
            f"semantic_recall reranker must be a LangChain BaseDocumentCompressor (with "
            f"compress_documents(documents, query)), got {type(reranker).__name__}"
        )
        raise ConfigurationError(msg)
    return reranker


def candidate_documents(
    hits: Sequence[RecallHit], by_id: Mapping[str, StoredMessage]
) -> list[Document]:
    """The candidates as the reranker reads them: ``speaker (date): text``, in first-stage
    order (`by_id`: their stored messages; a hit whose message is gone is left out)."""
    documents = []
    for hit in hits:
        if (found := by_id.get(hit.message_id)) is None:
            continue
        speaker = getattr(found.message, "name", None) or mastra_role(found.message)
        text = f"{speaker} ({found.created_at:%Y-%m-%d}): {message_text(found.message)}"
        metadata = {"message_id": hit.message_id, "thread_id": found.thread_id}
        documents.append(Document(page_content=text, metadata=metadata))
    return documents


def fuse_ranks(
    first: Sequence[RecallHit], reranked: Sequence[Document], *, weight: float
) -> list[RecallHit]:
    """`first` reordered by ``1/(RRF_K + first rank) + weight/(RRF_K + reranker rank)``; a
    candidate the reranker did not return keeps only its first-stage share. The hits' scores
    become the fused ones."""
    second: dict[str, int] = {}
    threads: dict[str, str] = {}
    for rank, document in enumerate(reranked):
        message_id = document.metadata.get("message_id")
        if isinstance(message_id, str):
            second.setdefault(message_id, rank)
            threads[message_id] = str(document.metadata.get("thread_id") or "")
    scored = []
    for rank, hit in enumerate(first):
        score = 1 / (RRF_K + rank)
        if hit.message_id in second:
            score += weight / (RRF_K + second[hit.message_id])
        thread_id = hit.thread_id or threads.get(hit.message_id, "")
        scored.append(RecallHit(hit.message_id, thread_id, score))
    return sorted(scored, key=lambda h: -h.score)
