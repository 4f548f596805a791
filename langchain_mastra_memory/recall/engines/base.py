"""What the stores over a vector engine's client share (`QdrantVectorStore`,
`MilvusVectorStore`): one place to talk to (an embedded file, a server URL, or a client), calls
serialized and their failures as `VectorStoreError`, and one collection per index, made on first
write with the embedder's dimension and refused for another dimension.

A store names its engine (`engine`) and implements `_exists`, `_dimension`, `_create`,
`_filter` (this resource, these threads, these messages), `_delete` and `_rows` (the pieces a
filter selects, with their vectors); deleting and reading vectors back are written once here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ...errors import ConfigurationError, VectorStoreError
from ..vector import (
    AsyncTwinsWithVectors,
    MessageVectors,
    check_name,
    only_threads,
    pieces_by_message,
)

BATCH = 500  # message ids per filtered call


def batches(ids: Sequence[str]) -> Iterator[list[str]]:
    """`ids` without repeats, in filtered calls of at most `BATCH`."""
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), BATCH):
        yield unique[start : start + BATCH]


def dimension_mismatch(index_name: str, stored: int, dimension: int) -> VectorStoreError:
    """The error for an embedder whose vectors do not fit the index's."""
    return VectorStoreError(
        f"vector index {index_name!r} holds {stored}-dimensional vectors but the "
        f"embedder makes {dimension}: use another index_name, or the same embedder"
    )


def extra_missing(store: str, extra: str) -> ConfigurationError:
    """The error for a store whose engine client is not installed: the extra to install."""
    return ConfigurationError(
        f"{store} needs the {extra!r} extra: pip install 'langchain-mastra-memory[{extra}]'"
    )


def one_place(engine: str, embedded: str, remote: str, *given: Any) -> None:
    """Refuse anything but exactly one of an embedded place, a remote one, or a client."""
    if sum(x is not None for x in given) != 1:
        raise ConfigurationError(
            f"{engine}VectorStore takes one of: {embedded}, {remote}, or client="
        )


class EngineStore(AsyncTwinsWithVectors):
    """The shared plumbing of a store over an engine's client (see the module doc)."""

    engine = "engine"
    where: str

    def _start(self, client: Any, where: str, connect: Callable[[], Any] | None = None) -> None:
        """`client`: the engine's client; or None and `connect` making it (a server's:
        connected on first use, so a server that is down fails a call, as `VectorStoreError`,
        never the construction of `Memory`; saves go on and the backlog catches up)."""
        self._client, self._connect, self.where = client, connect, where
        self._lock = threading.RLock()  # embedded engines are not safe across threads
        self._known: dict[str, int] = {}  # collection -> dimension

    @property
    def client(self) -> Any:
        """The engine's client (a server's connects now, the first time)."""
        if self._client is None and self._connect is not None:
            with self._lock:
                try:
                    # (another thread may have connected while this one waited for the lock)
                    self._client = self._client or self._connect()  # type: ignore[redundant-expr]
                except Exception as exc:
                    msg = f"{self.engine} (connect to {self.where}): {exc}"
                    raise VectorStoreError(msg) from exc
        return self._client

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where!r})"

    def _call(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            with self._lock:
                return func(*args, **kwargs)
        except VectorStoreError:
            raise
        except Exception as exc:
            raise VectorStoreError(f"{self.engine} at {self.where} ({what}): {exc}") from exc

    @staticmethod
    def _name(index_name: str) -> str:
        return "lmm_" + check_name(index_name).replace("-", "_").replace(".", "_")

    def _exists(self, name: str) -> bool:
        raise NotImplementedError

    def _dimension(self, name: str) -> int:
        raise NotImplementedError

    def _create(self, name: str, dimension: int) -> None:
        raise NotImplementedError

    def _collection(self, index_name: str, dimension: int, *, create: bool) -> str | None:
        """The collection of `index_name` (made on first write), or None; another dimension
        is an error."""
        name = self._name(index_name)
        known = self._known.get(name)
        if known is None:
            if self._exists(name):
                self._open(name)
                known = self._dimension(name)
            elif not create:
                return None
            else:
                self._create(name, dimension)
                known = dimension
            self._known[name] = known
        if known != dimension:
            raise dimension_mismatch(index_name, known, dimension)
        return name

    def _searched(
        self,
        index_name: str,
        dimension: int,
        top_k: int,
        thread_id: str | None,
        thread_ids: Sequence[str] | None,
    ) -> tuple[str, frozenset[str] | None] | None:
        """What a query searches: the collection and the threads it may return (None: all
        of the resource's), or None when nothing can be found (no collection yet, `top_k`
        under 1, or no thread left once `thread_id` and `thread_ids` are both applied)."""
        threads = only_threads(thread_id, thread_ids)
        name = self._collection(index_name, dimension, create=False)
        if name is None or top_k <= 0 or (threads is not None and not threads):
            return None
        return name, threads

    def _existing(self, index_name: str) -> str | None:
        """The collection of `index_name` whatever its dimension, or None."""
        name = self._name(index_name)
        if name in self._known:
            return name
        if not self._exists(name):
            return None
        self._open(name)
        self._known[name] = self._dimension(name)
        return name

    def _open(self, name: str) -> None:
        """Ready a collection made before (by another process, or before a restart)."""

    def _filter(
        self,
        resource_id: str | None,
        threads: frozenset[str] | None = None,
        message_ids: Sequence[str] = (),
    ) -> Any:
        raise NotImplementedError

    def _delete(self, name: str, where: Any) -> None:
        raise NotImplementedError

    def _rows(self, name: str, where: Any) -> list[tuple[str, Sequence[float]]]:
        raise NotImplementedError

    def delete(
        self,
        index_name: str,
        *,
        ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Delete every piece of these messages, or every vector of a thread (of `resource_id`
        only, when given)."""
        name = self._existing(index_name)
        if name is None:
            return
        for chunk in batches(ids):
            self._delete(name, self._filter(resource_id, message_ids=chunk))
        if thread_id is not None:
            self._delete(name, self._filter(resource_id, frozenset([thread_id])))

    def vectors(
        self, index_name: str, resource_id: str, message_ids: Sequence[str]
    ) -> MessageVectors:
        """The stored vectors of these messages of `resource_id`, each message's pieces in
        order (what a clone copies instead of embedding again)."""
        name = self._existing(index_name)
        if name is None:
            return {}
        rows: list[tuple[str, Sequence[float]]] = []
        for chunk in batches(message_ids):
            rows += self._rows(name, self._filter(resource_id, message_ids=chunk))
        return pieces_by_message(rows)

    def warm(self, index_name: str, resource_id: str) -> bool:
        """Nothing to load ahead (False, as for a part not held)."""
        check_name(index_name)
        return False

    def close(self) -> None:
        """Release the client (an embedded engine: its files; nothing if never connected)."""
        if self._client is not None:
            self._call("close", self._client.close)
