"""Recall's second stage: the first stage's pool reordered before the top k are kept.

- `context_stage` (on by default): each candidate scored with the conversation around it (its
  neighbours' vectors, follow-ups of a question), then grouped by thread (`ranking.context`);
- `rerank_stage` (with a ``reranker``): a LangChain document compressor reads the question beside
  each candidate; its order is fused with the first stage's (`ranking.rerank`), and a failing
  reranker leaves the first stage's order;
- `read_missing`: the pool's messages a stage needs, each read once for all stages (`Read`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from langchain_core.embeddings import Embeddings

from ..storage.base import MemoryStorage
from ..storage.records import StoredMessage
from ..twins import Steps, call, call_by_name
from .options import RecallOptions
from .ranking import (
    RecallHit,
    by_thread,
    candidate_documents,
    fuse_ranks,
    in_context,
    neighbours,
    remember,
    remembered,
    windows,
    with_follow_ups,
)

logger = logging.getLogger(__name__)

Read = dict[str, StoredMessage]  # message id -> the message, as a search's stages read it


def _keep(read: Read, stored: Iterable[StoredMessage]) -> None:
    """Note messages a stage read, by id, for the stages after it."""
    read.update({s.message.id or "": s for s in stored})


def read_missing(
    storage: MemoryStorage, hits: list[RecallHit], resource_id: str, read: Read
) -> Steps[None]:
    """The messages of `hits` that an earlier stage did not read, into `read`."""
    if missing := [h.message_id for h in hits if h.message_id not in read]:
        stored = yield from call(storage.get_messages_by_id, missing, resource_id=resource_id)
        _keep(read, stored)


def context_stage(
    storage: MemoryStorage,
    vector: Any,
    embedder: Embeddings,
    index_name: str,
    query: str,
    hits: list[RecallHit],
    resource_id: str,
    opts: RecallOptions,
) -> Steps[list[RecallHit]]:
    """`hits` reordered with the conversation around each (`ranking.context`)."""
    if len(hits) < 2:
        return hits
    around = yield from call(  # ids, threads, types, texts: no message objects built
        storage.message_neighbours, [h.message_id for h in hits], resource_id=resource_id
    )
    hits = with_follow_ups(hits, around, opts.follow_ups)
    ids = [h.message_id for h in hits]
    window_ids = neighbours(ids, around)
    wanted = sorted({*ids, *(m for ms in window_ids.values() for m in ms)})
    means = remembered(index_name, wanted)
    if missing := [m for m in wanted if m not in means]:
        # the store's own reading for ranking where it has one (a name chosen here: the one
        # string-dispatched step, as the store's class decides which it offers)
        read = "ranking_vectors" if hasattr(vector, "ranking_vectors") else "vectors"
        means |= remember(
            index_name, (yield from call_by_name(vector, read, index_name, resource_id, missing))
        )
    query_vector = yield from call(embedder.embed_query, query)  # (cached: the search's)
    threads = {n.id: n.thread_id for n in around}  # (read anyway: no second read)
    hits = [h if h.thread_id else replace(h, thread_id=threads.get(h.message_id, "")) for h in hits]
    weight = opts.context_weight
    ranked = in_context(hits, windows(window_ids, means), query_vector, weight=weight)
    return by_thread(ranked, weight=opts.thread_weight)


def rerank_stage(
    storage: MemoryStorage,
    query: str,
    hits: list[RecallHit],
    resource_id: str,
    opts: RecallOptions,
    read: Read,
) -> Steps[list[RecallHit]]:
    """`hits` reordered by the options' reranker fused with their first-stage order
    (`ranking.rerank`); a failing reranker (an API down, say) leaves the first stage's order
    and warns."""
    if len(hits) < 2 or opts.reranker is None:
        return hits
    yield from read_missing(storage, hits, resource_id, read)
    documents = candidate_documents(hits, read)
    try:
        reordered = yield from call(opts.reranker.compress_documents, documents, query)
    except Exception as exc:  # recall goes on without the second stage
        logger.warning("semantic recall: the reranker failed (%r); first-stage order", exc)
        return hits
    return fuse_ranks(hits, reordered, weight=opts.rerank_weight)
