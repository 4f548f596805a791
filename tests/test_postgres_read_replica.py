"""Reads from a replica, with replication lag injected (``recovery_min_apply_delay``).

`PostgresStorage(dsn, read_dsn=...)`: a turn's reads (history, recall's vector and keyword
searches) and the browsing reads (pages, search) go to the replica once it has replayed every
write this storage made, else to the primary (`storage.postgres.replicas`). With the replica
applying WAL a second late:

- read-your-writes: each turn's context holds the previous turn, every time (the reads right
  after a write go to the primary while the replica is behind, and to it once it caught up);
- another process (a second storage that wrote nothing) reads from the replica at once, and
  sees the first one's write only after the lag: the staleness a user can see, measured;
- a replica that stops answering sends the reads to the primary; nothing fails.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pg_cluster import Cluster

from langchain_mastra_memory import Memory, PostgresStorage

pytestmark = pytest.mark.postgres

LAG = 1.0  # seconds the replica waits before applying what it received


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    made = Cluster.start(tmp_path_factory.mktemp("replica"), {"replica": {"apply_delay": "1s"}})
    yield made
    made.close()


def storage_on(cluster: Cluster, schema: str) -> PostgresStorage:
    return PostgresStorage(
        cluster.nodes["primary"].conninfo(), schema=schema,
        read_dsn=cluster.nodes["replica"].conninfo(),
    )  # fmt: skip


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_turn_reads_its_own_writes_wherever_the_reads_go(cluster: Cluster, mode: str) -> None:
    storage = storage_on(cluster, f"ryw_{mode}")
    memory = Memory(storage=storage, options={"semantic_recall": True, "last_messages": 4})
    memory.create_thread(thread_id="t", resource_id="alice")
    misses = 0
    try:
        for turn in range(8):
            question = HumanMessage(f"question {turn} about the harbour", id=f"q{turn}")
            if mode == "sync":
                sent = memory.context([question], thread_id="t", resource_id="alice")
            else:
                sent = asyncio.run(memory.acontext([question], thread_id="t", resource_id="alice"))
            if turn and f"a{turn - 1}" not in {m.id for m in sent}:
                misses += 1
            answer = AIMessage(f"answer {turn}: the harbour is north", id=f"a{turn}")
            memory.save_turn([question, answer], thread_id="t", resource_id="alice")
            memory.flush(30)  # (the vectors written too: a write the next read must see)
            if turn % 3 == 2:
                time.sleep(LAG * 1.5)  # a pause in the conversation: the replica catches up
        assert misses == 0
        served = storage.replica.served  # type: ignore[union-attr]
        assert served["replica"] > 0  # reads the replica had caught up for
        assert served["primary: behind"] > 0  # reads right after a write, while it lagged
        page = memory.page_messages("t", resource_id="alice", per_page=100)  # browsing
        assert [m.id for m in page.items][-2:] == ["q7", "a7"]
    finally:
        memory.close(30)


def test_another_process_sees_a_write_after_the_replication_lag(cluster: Cluster) -> None:
    writer = storage_on(cluster, "lag")
    reader = storage_on(cluster, "lag")  # a second process: it wrote nothing
    try:
        writer.create_thread(thread_id="t", resource_id="alice")
        time.sleep(LAG * 1.5)  # (the thread itself replayed)
        writer.save_messages([HumanMessage("fresh", id="m1")], thread_id="t", resource_id="alice")
        written = time.monotonic()
        first = [s.message.id for s in reader.list_messages("t", resource_id="alice")]
        assert first == []  # read on the replica at once: a second behind
        while "m1" not in [s.message.id for s in reader.list_messages("t", resource_id="alice")]:
            assert time.monotonic() - written < LAG * 10
            time.sleep(0.05)
        seen_after = time.monotonic() - written
        print(f"\nanother process saw the write after {seen_after:.2f} s (apply delay {LAG} s)")
        assert seen_after >= LAG * 0.9  # the lag was there, and is what a user can see
        assert reader.replica.served["primary: behind"] == 0  # type: ignore[union-attr]
        # the writer itself read it at once, from the primary
        assert [s.message.id for s in writer.list_messages("t", resource_id="alice")] == ["m1"]
    finally:
        writer.close()
        reader.close()


def test_the_explorer_and_the_recall_tool_read_from_the_replica(cluster: Cluster) -> None:
    """A read-only service (the explorer, an agent's recall tool in another process) reads
    from the replica what it has replayed; nothing of theirs goes to the primary."""
    from starlette.testclient import TestClient

    from langchain_mastra_memory.ui.app import create_app

    writer = Memory(storage=storage_on(cluster, "browse"), options={"semantic_recall": True})
    writer.create_thread(thread_id="t", resource_id="alice")
    writer.save_messages([HumanMessage("our sailboat is named Albatross", id="m1")],
                         thread_id="t", resource_id="alice")  # fmt: skip
    assert writer.flush(60)
    time.sleep(LAG * 1.5)  # replayed on the replica
    reader = Memory(storage=storage_on(cluster, "browse"), options={"semantic_recall": True})
    served = reader.storage.replica.served  # type: ignore[attr-defined]
    try:
        page = TestClient(create_app(reader), base_url="http://127.0.0.1").get("/r/alice/t/t")
        assert page.status_code == 200 and "Albatross" in page.text
        found = reader.recall_tool(resource_id="alice").invoke({"query": "sailboat name"})
        assert "Albatross" in found
        assert served["replica"] > 0 and served["primary: behind"] == 0
    finally:
        reader.close(30)
        writer.close(30)


def test_a_replica_that_stops_answering_sends_the_reads_to_the_primary(cluster: Cluster) -> None:
    storage = storage_on(cluster, "down")
    try:
        storage.create_thread(thread_id="t", resource_id="alice")
        storage.save_messages([HumanMessage("kept", id="m1")], thread_id="t", resource_id="alice")
        cluster.stop("replica")
        try:
            ids = [s.message.id for s in storage.list_messages("t", resource_id="alice")]
            assert ids == ["m1"]
            assert storage.replica.served["primary: down"] > 0  # type: ignore[union-attr]
        finally:
            cluster.up(cluster.nodes["replica"])
    finally:
        storage.close()


def test_a_read_dsn_that_is_not_one_is_refused_by_name() -> None:
    import os

    from langchain_mastra_memory import ConfigurationError

    with pytest.raises(ConfigurationError, match="read_dsn is not a PostgreSQL DSN"):
        PostgresStorage(os.environ["LMM_TEST_POSTGRES_DSN"], schema="bad_read", read_dsn="replica")


def test_a_write_whose_position_cannot_be_read_sends_reads_to_the_primary(cluster: Cluster) -> None:
    """The connection lost just after a commit: the write stands, its WAL position is unknown,
    so reads go to the primary until a later write's position is noted and replayed."""
    import psycopg

    storage = storage_on(cluster, "unknown")
    replica = storage.replica
    assert replica is not None
    try:
        storage.create_thread(thread_id="t", resource_id="alice")
        time.sleep(LAG * 1.5)
        lost = psycopg.connect(cluster.nodes["primary"].conninfo())
        lost.close()
        replica.wrote(lost)  # (what a write's after-commit step meets: no exception)
        before = replica.served["primary: behind"]
        storage.list_messages("t", resource_id="alice")
        assert replica.served["primary: behind"] == before + 1  # read from the primary
        storage.save_messages([HumanMessage("later", id="m1")], thread_id="t", resource_id="alice")
        time.sleep(LAG * 1.5)
        served = replica.served["replica"]
        assert [s.message.id for s in storage.list_messages("t", resource_id="alice")] == ["m1"]
        assert replica.served["replica"] == served + 1  # a later write noted: the replica again
    finally:
        storage.close()
