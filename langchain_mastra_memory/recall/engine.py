"""What the stores over a vector engine's client share (`QdrantVectorStore`,
`MilvusVectorStore`): one place to talk to (an embedded file, a server URL, or a client), calls
serialized and their failures as `VectorStoreError`, and one collection per index, made on first
write with the embedder's dimension and refused for another dimension.

A store names its engine (`engine`) and implements `_exists`, `_dimension` and `_create`.
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import ConfigurationError, VectorStoreError
from .vector import AsyncTwins, _check_name


def dimension_mismatch(index_name: str, stored: int, dimension: int) -> VectorStoreError:
    """The error for an embedder whose vectors do not fit the index's."""
    return VectorStoreError(
        f"vector index {index_name!r} holds {stored}-dimensional vectors but the "
        f"embedder makes {dimension}: use another index_name, or the same embedder"
    )


def one_place(engine: str, embedded: str, remote: str, *given: Any) -> None:
    """Refuse anything but exactly one of an embedded place, a remote one, or a client."""
    if sum(x is not None for x in given) != 1:
        raise ConfigurationError(
            f"{engine}VectorStore takes one of: {embedded}, {remote}, or client="
        )


class EngineStore(AsyncTwins):
    """The shared plumbing of a store over an engine's client (see the module doc)."""

    engine = "engine"
    client: Any
    where: str

    def _start(self, client: Any, where: str) -> None:
        self.client, self.where = client, where
        self._lock = threading.RLock()  # embedded engines are not safe across threads
        self._known: dict[str, int] = {}  # collection -> dimension

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where!r})"

    def _call(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            with self._lock:
                return func(*args, **kwargs)
        except VectorStoreError:
            raise
        except Exception as exc:
            raise VectorStoreError(f"{self.engine} ({what}): {exc}") from exc

    @staticmethod
    def _name(index_name: str) -> str:
        return "lmm_" + _check_name(index_name).replace("-", "_").replace(".", "_")

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

    def _existing(self, index_name: str) -> str | None:
        """The collection of `index_name` whatever its dimension, or None."""
        name = self._name(index_name)
        return name if name in self._known or self._exists(name) else None

    def warm(self, index_name: str, resource_id: str) -> bool:
        """Nothing to load ahead (False, as for a part not held)."""
        _check_name(index_name)
        return False

    def close(self) -> None:
        """Release the client (an embedded engine: its files)."""
        self._call("close", self.client.close)
