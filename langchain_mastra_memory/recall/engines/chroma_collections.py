"""Chroma's collections as `ChromaVectorStore` makes them: one per index and resource
(`partition_name`), cosine HNSW with a wide beam (`HNSW`; an older collection's beam is
widened), and the dimension each holds, checked against the embedder's.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from ...errors import VectorStoreError

logger = logging.getLogger(__name__)


# HNSW beam at query time. On 300,011 real chat pieces in one collection (LoCoMo, 60 questions,
# M 32, efConstruction 256) ef 400 / 800 / 1,200 / 1,600 / 2,000 found 0.920 / 0.935 / 0.965 /
# 0.977 / 0.982 of the exact top-10 at 1.9 / 2.3 / 2.7 / 3.3 / 4.2 ms p50 (2026-11-25)
SEARCH_EF = 1600
HNSW = {
    "hnsw:space": "cosine",
    "hnsw:search_ef": SEARCH_EF,
    "hnsw:construction_ef": 256,
    "hnsw:M": 32,
}


def widen_beam(col: Any) -> None:
    """Give a collection made with a narrower query beam this version's (Chroma keeps the
    setting with the collection; a process that has it loaded sees it after a restart)."""
    try:
        hnsw = (getattr(col, "configuration", None) or {}).get("hnsw") or {}
        if int(hnsw.get("ef_search", SEARCH_EF)) < SEARCH_EF:
            col.modify(configuration={"hnsw": {"ef_search": SEARCH_EF}})
    except Exception as exc:  # an older server or client: keep the collection's own beam
        logger.debug("could not widen the HNSW beam of %s: %s", getattr(col, "name", col), exc)


def check_dimension(col: Any, name: str, dimension: int) -> None:
    stored = (col.metadata or {}).get("dimension")
    if stored is not None and int(stored) != dimension:
        msg = (
            f"vector collection {name!r} holds {stored}-dimensional vectors but the "
            f"embedder makes {dimension}: use another index_name, or the same embedder"
        )
        raise VectorStoreError(msg)


def set_http_timeout(client: Any, seconds: float) -> None:
    """Bound every request of a Chroma ``HttpClient``: its httpx session is made with no timeout
    at all (chromadb 1.x, ``FastAPI._session``); other clients are left as they are."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if session is not None and hasattr(session, "timeout"):
        import httpx

        session.timeout = httpx.Timeout(seconds)


def partition_name(index_name: str, resource_id: str) -> str:
    """The collection holding `resource_id`'s vectors of `index_name`."""
    digest = hashlib.sha256(resource_id.encode("utf-8")).hexdigest()[:24]
    return f"{index_name[:480]}-r{digest}"
