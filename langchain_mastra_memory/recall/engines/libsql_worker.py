"""A LibSQL connection in a process of its own, for `MastraVectorStore` on a LibSQL file.

Mastra's `LibSQLVector` keeps its vectors in an ``F32_BLOB`` column under a libsql vector
index (``libsql_vector_idx``: a DiskANN graph in shadow tables that only libsql maintains, and
that Mastra's query reads first). Python's sqlite3 cannot write that table at all ("unknown
function: libsql_vector_idx"), so the writes go through libsql itself (the ``libsql`` wheel).
Not in this process: two SQLite libraries in one process on one file corrupt it (POSIX locks
are per process, and closing any handle on the file drops the other library's locks). A
process of its own is one more client of the file, as Mastra's is.

`LibSQLWorker` starts ``python -m langchain_mastra_memory.recall.engines.libsql_worker FILE``
on first use and sends it one request per line: a list of ``[sql, args]`` statements, run in
one ``BEGIN IMMEDIATE`` transaction when there are several (or `write` is set), answered with
the last statement's rows. A worker that died is started again for the next request.

    worker = LibSQLWorker("mastra.db")
    worker.run([("SELECT count(*) FROM memory_messages_384", [])])  # [[12]]
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

from ...errors import ConfigurationError, VectorStoreError

BUSY_TIMEOUT_MS = 5000  # as Mastra's LibSQL clients wait for the file's write lock


class LibSQLWorker:
    """The parent's side: one worker process per file, its requests taken in turn."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    def __repr__(self) -> str:
        return f"LibSQLWorker({self.path!r})"

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            try:
                import libsql  # noqa: F401  (here, to name the extra in the error)
            except ImportError as exc:
                raise ConfigurationError(
                    "MastraVectorStore on a LibSQL file needs libsql (Mastra's vector index is "
                    "a libsql one): pip install 'langchain-mastra-memory[mastra]'"
                ) from exc
            self._process = subprocess.Popen(
                [sys.executable, "-m", __name__, self.path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
        return self._process

    def run(self, statements: Sequence[tuple[str, Sequence[Any]]], *, write: bool = False) -> Any:
        """The last statement's rows (lists); several statements, or `write`, in one
        transaction. A failed statement is a `VectorStoreError` and nothing of the request
        stays."""
        request = json.dumps({"statements": [list(s) for s in statements], "write": write})
        line = ""
        with self._lock:
            for attempt in (1, 2):  # a worker that died (killed, out of memory): once more
                process = self._started()
                assert process.stdin is not None and process.stdout is not None
                try:
                    process.stdin.write(request + "\n")
                    process.stdin.flush()
                    line = process.stdout.readline()
                except (BrokenPipeError, OSError):
                    line = ""
                if line:
                    break
                process.kill()
                process.wait()
                if attempt == 2:
                    raise VectorStoreError(f"the libsql worker for {self.path!r} stopped")
        answer = json.loads(line)
        if "error" in answer:
            raise VectorStoreError(f"libsql at {self.path!r}: {answer['error']}")
        return answer["rows"]

    def close(self) -> None:
        """End the worker (it finishes the request it is on)."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None and process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __del__(self) -> None:
        process = getattr(self, "_process", None)
        if process is not None and process.poll() is None:
            process.kill()


def serve(path: str) -> None:  # pragma: no cover  (runs in the worker process)
    """The worker's loop: one request per line on stdin until it closes."""
    import libsql

    conn = libsql.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    for line in sys.stdin:
        request = json.loads(line)
        statements = request["statements"]
        atomic = request["write"] or len(statements) > 1
        try:
            if atomic:
                conn.execute("BEGIN IMMEDIATE")
            rows: list[Any] = []
            for sql, args in statements:
                rows = [list(row) for row in conn.execute(sql, tuple(args)).fetchall() or ()]
            if atomic:
                conn.execute("COMMIT")
            answer: dict[str, Any] = {"rows": rows}
        except Exception as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    conn.close()


if __name__ == "__main__":  # pragma: no cover
    serve(sys.argv[1])
