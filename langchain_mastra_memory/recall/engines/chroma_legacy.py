"""Moving a Chroma collection written before partitioning (every resource's vectors in one)
into per-resource partitions: what `ChromaVectorStore` does once per index, then drops it.

Examples:
    >>> from contextlib import nullcontext
    >>> import chromadb
    >>> client = chromadb.EphemeralClient()
    >>> legacy = client.create_collection("legacy-doc", embedding_function=None)
    >>> legacy.add(ids=["m1"], embeddings=[[1.0, 0.0]], metadatas=[{"resource_id": "alice"}])
    >>> parts = {}
    >>> def target_of(owner):
    ...     return parts.setdefault(owner, client.get_or_create_collection(
    ...         f"part-{owner}", embedding_function=None))
    >>> call = lambda what, func, *a, **k: func(*a, **k)
    >>> split_legacy(legacy, call, target_of, lambda col: nullcontext())
    1
    >>> parts["alice"].count(), legacy.count()
    (1, 0)
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

PAGE = 2000  # vectors moved a call


def split_legacy(
    legacy: Any,
    call: Callable[..., Any],
    target_of: Callable[[str], Any],
    writing: Callable[[Any], AbstractContextManager[None]],
) -> int:
    """Move every vector of `legacy` into its resource's partition (`target_of(resource)`,
    each write inside `writing(partition)`), page by page, deleting what was moved; the
    number moved. `call(what, func, ...)` runs the store's calls (errors as the store's)."""
    moved = 0
    while True:
        page = call("migrate", legacy.get, limit=PAGE, include=["embeddings", "metadatas"])
        if not page["ids"]:
            return moved
        groups: dict[str, list[int]] = {}
        for i, meta in enumerate(page["metadatas"]):
            groups.setdefault(str(meta["resource_id"]), []).append(i)
        for resource_id, rows in groups.items():
            target = target_of(resource_id)
            with writing(target):
                call(
                    "migrate",
                    target.upsert,
                    ids=[page["ids"][i] for i in rows],
                    embeddings=[page["embeddings"][i] for i in rows],
                    metadatas=[page["metadatas"][i] for i in rows],
                )
        call("migrate", legacy.delete, ids=list(page["ids"]))
        moved += len(page["ids"])
