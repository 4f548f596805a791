"""The Milvus server restarted under load (issue 86): turns go on while it is down (the
messages are saved; their vectors wait in the durable backlog), and once it is back the writes
catch up by themselves: every message's vectors in Milvus, none twice, none of another
resource. The session's server (the `milvus` wheel's standalone Milvus), stopped and started
on its data folder as an operator restarts it, until it serves again (a second server beside
it does not start on 2 cores within 180 s, so the test cannot have one of its own)."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from typing import Any

import pytest
from helpers import drop_milvus_collections, milvus_answers
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.recall.engines.milvus import MilvusVectorStore

pytestmark = pytest.mark.slow

CONVERSATIONS, TURNS = 3, 12


def stop_cleanly(server: Any) -> None:
    """Stop the server as an operator does: SIGTERM, then its own time to deregister. The
    wheel's `stop` kills it one second after SIGTERM, before Milvus removes its nodes' sessions
    from etcd; the next start then waits for the dead node's session ("node not match
    expectedNodeID=2 actualNodeID=3") and never serves within a minute (seen 1 run in 4)."""
    process = server.server_proc
    if process is not None:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(30)
    server.stop()


def restart(server: Any, uri: str, *, down: float = 1.0) -> None:
    """Stop the server and start it on its data folder and port again, until it serves (a start
    can report healthy and serve only once the old sessions expire, or find its port not yet
    free: then, stopped cleanly, once more)."""
    stop_cleanly(server)
    time.sleep(down)
    for _attempt in range(4):
        try:
            server.start()
        except (RuntimeError, TimeoutError):  # its port still held, or slow: a moment later
            time.sleep(2)
            continue
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if milvus_answers(uri):
                return
            time.sleep(0.5)
        stop_cleanly(server)
        time.sleep(2)
    raise AssertionError("the Milvus server never served again after a restart (4 starts)")


def test_writes_catch_up_after_a_milvus_restart(
    milvus_server: Any, milvus_uri: str, tmp_path
) -> None:
    drop_milvus_collections(milvus_uri)
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "memory.db"),
        vector=MilvusVectorStore(uri=milvus_uri),
        options={"semantic_recall": {"mode": "vector"}},
    )
    restarted = threading.Event()
    failures: list[BaseException] = []

    def conversation(c: int) -> None:
        memory.create_thread(thread_id=f"t{c}", resource_id=f"u{c}")
        for turn in range(TURNS):
            if turn == TURNS // 2:
                restarted.wait(300)  # half the turns while Milvus is down or coming back
            try:
                memory.save_turn(
                    [HumanMessage(f"conversation {c} turn {turn}: the boat is blue"),
                     AIMessage(f"noted {c}.{turn}")],
                    thread_id=f"t{c}", resource_id=f"u{c}",
                )  # fmt: skip
            except Exception as exc:
                failures.append(exc)
            time.sleep(0.05)

    workers = [threading.Thread(target=conversation, args=(c,)) for c in range(CONVERSATIONS)]
    try:
        for worker in workers:
            worker.start()
        time.sleep(0.3)
        restart(milvus_server, milvus_uri)  # meanwhile the turns go on: their vectors wait
        restarted.set()
        for worker in workers:
            worker.join(300)
        assert failures == []  # a vector store down never fails a save
        deadline = time.monotonic() + 300
        while not memory.flush(60):  # the writer catches up by itself, no save needed
            assert time.monotonic() < deadline, memory.vector_backlog()
            time.sleep(0.5)
        assert memory.vector_backlog().pending == 0
        index = memory.recall_index
        assert index is not None
        name = index.upkeep.index_name()
        for c in range(CONVERSATIONS):
            ids = [m.id for m in memory.get_messages(thread_id=f"t{c}", resource_id=f"u{c}")]
            assert len(ids) == 2 * TURNS
            assert index.vector.present(name, f"u{c}", ids) == set(ids)  # complete
        rows = index.vector.client.query(
            collection_name=index.vector._name(name), filter="pk != ''",
            output_fields=["pk", "message_id", "resource_id"],
        )  # fmt: skip
        piece_ids = [r["pk"] for r in rows]
        assert len(piece_ids) == len(set(piece_ids))  # none twice
        owners = {r["message_id"]: r["resource_id"] for r in rows}
        for c in range(CONVERSATIONS):
            for m in memory.get_messages(thread_id=f"t{c}", resource_id=f"u{c}"):
                assert owners[m.id] == f"u{c}"  # none in another resource's partition
        hits = memory.recall(thread_id="t0", resource_id="u0",
                             new_messages=[HumanMessage("what colour is the boat?")])  # fmt: skip
        assert hits  # and recall reads them
    finally:
        restarted.set()
        if not milvus_answers(milvus_uri):  # (the test failed midway: the session's later
            with contextlib.suppress(AssertionError):  # Milvus tests get one that serves)
                restart(milvus_server, milvus_uri)
        memory.close(30)
        drop_milvus_collections(milvus_uri)
