"""Exact partitions kept on disk between runs, so a restart searches exactly at once.

Loading a partition of 100k pieces from embedded Chroma takes ~15 s (Chroma hands vectors back
a page at a time, holding the GIL while it converts each), and until it is loaded the graph
serves searches at 26 ms and more. A partition's matrix is small to keep (unit length, float32
or the float16 it is held in: 150 MB for 100k float32 pieces of 384 dimensions) and fast to
read back (~0.1 s), so
`ExactPartitions` saves a held partition beside the store's files when it has loaded it, and
at exit when writes changed it since; the next process reads the file instead of Chroma.

A snapshot is trusted only while the partition is unchanged: every write to the store first
removes the partition's snapshot (`Snapshots.drop`, before the store is touched, so a crash
between the two leaves no stale file), and a snapshot is written only when no write is under
way and none happened while it was written (`ExactPartitions` checks both). Files are written
whole under a temporary name and renamed into place; a file that cannot be read (a crash, a
format change) is removed and the partition loaded from the store. Only for a folder this
process writes alone (an embedded Chroma), as the matrices themselves.

Examples:
    >>> import tempfile
    >>> snapshots = Snapshots(tempfile.mkdtemp())
    >>> matrix = np.array([[1.0, 0.0]], dtype=np.float32)
    >>> snapshots.commit("p", snapshots.write("p", matrix, ["a"], ["a"], ["t1"]), valid=True)
    True
    >>> snapshots.read("p").ids
    ['a']
    >>> snapshots.drop("p")
    >>> snapshots.read("p") is None
    True
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .matrix import Loaded

logger = logging.getLogger(__name__)

FOLDER = "langchain_mastra_memory_exact"  # inside the Chroma folder: removed with it
FORMAT = 1
_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")  # partition keys are collection ids (uuids)


class Snapshots:
    """Saved partition matrices in `folder` (see the module docstring)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._on_disk: dict[str, bool] = {}  # known presence, so a write checks the disk once

    def _path(self, key: str) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a partition key: {key!r}")
        return self.folder / f"{key}.npz"

    def has(self, key: str) -> bool:
        """Whether `key` has a snapshot (the disk is asked once per partition)."""
        if (known := self._on_disk.get(key)) is None:
            known = self._on_disk[key] = self._path(key).exists()
        return known

    def saved(self) -> list[tuple[str, int]]:
        """``(key, file size)`` of every snapshot on disk, the most recently saved first
        (the partitions the last process held at its end)."""
        files = []
        try:
            for file in self.folder.iterdir():
                if file.suffix == ".npz" and _KEY.fullmatch(file.stem):
                    with contextlib.suppress(OSError):  # (removed meanwhile by a write)
                        stat = file.stat()
                        files.append((stat.st_mtime, file.stem, stat.st_size))
        except OSError:  # no folder: nothing saved yet
            return []
        return [(key, size) for _, key, size in sorted(files, reverse=True)]

    def drop(self, key: str) -> None:
        """Remove `key`'s snapshot, if any (before every write to the partition)."""
        if self._on_disk.get(key, True):
            self._path(key).unlink(missing_ok=True)
            self._on_disk[key] = False

    def read(self, key: str) -> Loaded | None:
        """`key`'s saved partition (unit-length rows), or None (none, or unreadable: removed)."""
        path = self._path(key)
        if not self._on_disk.get(key, True) or not path.exists():
            self._on_disk[key] = False
            return None
        try:
            with np.load(path, allow_pickle=False) as saved:
                header = json.loads(bytes(saved["meta"]).decode())
                if header["format"] != FORMAT:
                    raise ValueError(f"format {header['format']}")
                ids, message_ids, thread_ids = header["ids"], header["messages"], header["threads"]
                vectors = saved["vectors"]  # (float16 for a partition held so)
                if vectors.dtype not in (np.float32, np.float16):
                    raise ValueError(f"rows of {vectors.dtype}")
                vectors = np.ascontiguousarray(vectors)
                int8 = saved["int8"] if "int8" in saved.files else None
            if not len(ids) == len(message_ids) == len(thread_ids) == len(vectors):
                raise ValueError("rows and ids differ")
            if int8 is not None and (int8.dtype != np.int8 or int8.shape != vectors.shape):
                raise ValueError("int8 rows differ")
        except Exception as exc:  # a torn or old file: the store has the truth
            logger.debug("partition snapshot %s unreadable (%s): loading from the store", key, exc)
            self.drop(key)
            return None
        self._on_disk[key] = True
        return Loaded(ids, vectors, message_ids, thread_ids, is_unit=True, int8=int8)

    def write(
        self,
        key: str,
        vectors: np.ndarray,
        ids: Sequence[str],
        message_ids: Sequence[str],
        thread_ids: Sequence[str],
        int8: np.ndarray | None = None,
    ) -> Path | None:
        """Write `key`'s matrix (rows already at unit length, and their int8 copy if it has
        one) under a temporary name; `commit` puts it in place. None when it cannot be written
        (a full disk, a read-only folder: the next run loads the store)."""
        path = self._path(key)
        partial = path.with_name(f".{key}.{os.getpid()}.partial.npz")
        meta = json.dumps(
            {
                "format": FORMAT,
                "ids": list(ids),
                "messages": list(message_ids),
                "threads": list(thread_ids),
            }
        ).encode()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(partial, "wb") as out:
                arrays = {"vectors": vectors, "meta": np.frombuffer(meta, dtype=np.uint8)}
                if int8 is not None:
                    arrays["int8"] = int8
                np.savez(out, **arrays)  # type: ignore[arg-type]
        except OSError as exc:
            logger.debug("saving partition snapshot %s failed: %s", key, exc)
            partial.unlink(missing_ok=True)
            return None
        return partial

    def commit(self, key: str, partial: Path, *, valid: bool) -> bool:
        """Put a written snapshot in place (`valid`: no write to the partition began or ended
        since its rows were taken; the caller holds the lock its writes take), or discard it.
        True when the snapshot is on disk."""
        try:
            if valid:
                os.replace(partial, self._path(key))
                self._on_disk[key] = True
                return True
        except OSError as exc:
            logger.debug("saving partition snapshot %s failed: %s", key, exc)
        partial.unlink(missing_ok=True)
        return False
