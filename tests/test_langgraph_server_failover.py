"""LangGraph Server through a failover (issue 93): two ``langgraph dev`` processes on
``langgraph.json``'s memory factories, both over one libpq multi-host DSN naming a primary and
its synchronous standby (`pg_cluster.Cluster`), driven with ``langgraph-sdk`` under the suite's
two identities. The primary is killed mid-conversation and the standby promoted: no
acknowledged run is lost, each thread's state equals memory, and each identity still sees only
its own.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_cluster import Cluster
from test_langgraph_server import Server, running_server

from langchain_mastra_memory import Memory, PostgresStorage

pytestmark = [
    pytest.mark.langgraph_server,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(sys.version_info < (3, 11), reason="langgraph-cli[inmem] needs Python 3.11"),
]
TOKENS = {"alice": "alice-token", "bob": "bob-token"}
BEFORE, AFTER = 2, 2  # acknowledged runs per thread before the kill, and after the promotion
DEADLINE = 240.0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster.start(tmp_path / "ha", {"standby1": {"sync": True}})
    yield made
    made.close()


def test_two_servers_through_a_failover_lose_no_acknowledged_run(
    cluster: Cluster, tmp_path: Path
) -> None:
    dsn = cluster.dsn("primary", "standby1")
    folders = [tmp_path / f"server-{n}" for n in range(2)]
    for folder in folders:
        folder.mkdir()
    with running_server(folders[0], dsn) as first, running_server(folders[1], dsn) as second:
        servers: list[Server] = [first, second]
        # one thread per (server, identity): the inmem runtime keeps its threads per process
        threads: dict[tuple[int, str], str] = {}
        for n, server in enumerate(servers):
            for who, token in TOKENS.items():
                threads[n, who] = str(server.client(token).threads.create()["thread_id"])
        acked: dict[tuple[int, str], list[str]] = {key: [] for key in threads}
        failed: dict[tuple[int, str], list[str]] = {key: [] for key in threads}
        failures: list[str] = []
        promoted = threading.Event()
        after = dict.fromkeys(threads, 0)

        def conversation(key: tuple[int, str]) -> None:
            n, who = key
            client = servers[n].client(TOKENS[who])
            deadline = time.monotonic() + DEADLINE
            turn = 0
            while after[key] < AFTER and time.monotonic() < deadline:
                was_promoted = promoted.is_set()
                text = f"{who} on server {n}, turn {turn}"
                try:
                    client.runs.wait(threads[key], "agent",
                                     input={"messages": [{"role": "user", "content": text}]},
                                     raise_error=True)  # fmt: skip
                    acked[key].append(text)
                    after[key] += was_promoted
                    turn += 1
                except Exception as exc:  # (a run lost with the primary: the client retries)
                    failed[key].append(text)
                    failures.append(f"{type(exc).__name__}: {exc}"[:200])
                    time.sleep(0.5)

        workers = [threading.Thread(target=conversation, args=(key,)) for key in threads]
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + DEADLINE
        while not all(len(texts) >= BEFORE for texts in acked.values()):
            assert time.monotonic() < deadline, f"the conversations did not start: {failures}"
            time.sleep(0.1)
        cluster.kill("primary")
        time.sleep(0.5)
        cluster.promote("standby1")
        promoted.set()
        for worker in workers:
            worker.join(DEADLINE + 30)
        print(f"\n{sum(map(len, acked.values()))} runs acknowledged, {len(failures)} failed")
        for failure in failures[:5]:
            print("  ", failure)
        assert all(n >= AFTER for n in after.values()), (after, failures[:5])
        memory = Memory(storage=PostgresStorage(dsn, connect_timeout=3))
        for (n, who), thread in threads.items():
            client = servers[n].client(TOKENS[who])
            state = client.threads.get_state(thread)["values"]["messages"]
            said = [m["content"] for m in state if m["type"] == "human"]
            assert set(acked[n, who]) <= set(said)  # no acknowledged run lost
            stored = memory.get_messages(thread_id=thread, resource_id=who)
            kept = {m["id"] for m in state}
            # the state's messages, in memory in the same order; memory may hold more only from
            # a run the client saw fail: its messages were saved (they must be, before the
            # checkpoint that refers to them) and the primary died before that checkpoint was
            # (a limitation noted on issue 96: nothing cleans them up yet)
            assert [m.id for m in stored if m.id in kept] == [m["id"] for m in state]
            extra = [m for m in stored if m.id not in kept]
            assert {str(m.content) for m in extra if m.type == "human"} <= set(failed[n, who])
            assert len(extra) <= 2 * len(failed[n, who])
            other = "bob" if who == "alice" else "alice"
            other_client = servers[n].client(TOKENS[other])
            with pytest.raises(Exception, match=r"404|[Nn]ot [Ff]ound"):
                other_client.threads.get_state(thread)
            theirs = {t.id for t in memory.list_threads(resource_id=other)}
            assert thread not in theirs  # under its owner only
            assert all(who not in str(m.content) for t in theirs
                       for m in memory.get_messages(thread_id=t, resource_id=other))  # fmt: skip
        memory.close()
