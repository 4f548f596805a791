"""Faults behind PgBouncer (issue 93), with 32 agent conversations at once in one event loop:
PgBouncer told to ``RECONNECT`` (every server connection closed once its client lets go),
PgBouncer killed and started again (every client connection cut), and PostgreSQL restarted
behind it (every server connection cut; PgBouncer refuses logins for ``server_login_retry``). Every acknowledged turn is kept, memory equals the graph's state in every thread,
and every failure is a documented error (`StorageError`, `VectorStoreError`, psycopg's
``OperationalError``).

The server is one of this module's own (pgserver's PostgreSQL 18, as the session's), so that
a fault disturbs no other test.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage
from pg_bouncer import Bouncer
from test_postgres_failover import Replies
from test_postgres_restart import restart

from langchain_mastra_memory import Memory, PostgresStorage, StorageError, VectorStoreError

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

CONVERSATIONS = 32
AFTER = 2  # acknowledged turns each conversation makes after the fault
DEADLINE = 180.0
DOCUMENTED = (StorageError, VectorStoreError, psycopg.OperationalError)


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    import pgserver

    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    pg = pgserver.get_server(tempfile.mkdtemp(prefix="lmm-pg-bouncer-"), cleanup_mode="delete")
    yield pg
    pg.cleanup()


@pytest.fixture
def bouncer(server: Any) -> Iterator[Bouncer]:
    folder = Path(tempfile.mkdtemp(prefix="lmm-pgbouncer-faults-"))
    started = Bouncer.start(folder, str(server.get_uri()), mode="transaction",
                            ignore_options=True, pool_size=10)  # fmt: skip
    yield started
    started.stop()
    shutil.rmtree(folder, ignore_errors=True)


def inject(fault: str, bouncer: Bouncer, server: Any) -> None:
    if fault == "reconnect":
        bouncer.reconnect()
    elif fault == "pgbouncer restarted":
        bouncer.restart(down=0.5)
    else:
        restart(server)


@pytest.mark.parametrize("fault", ["reconnect", "pgbouncer restarted", "postgres restarted"])
def test_thirty_two_conversations_through_a_fault_behind_the_pooler(
    bouncer: Bouncer, server: Any, fault: str
) -> None:
    from langchain.agents import create_agent

    storage = PostgresStorage(bouncer.dsn, schema="faults", connect_timeout=3, pool_timeout=60)
    assert storage.pooled
    memory = Memory(storage=storage, embedder=DeterministicFakeEmbedding(size=16),
                    options={"semantic_recall": True})  # fmt: skip
    model = Replies(count=itertools.count())
    agent = create_agent(
        model, middleware=[memory.middleware()], checkpointer=memory.checkpointer()
    )
    acked: dict[int, list[int]] = {c: [] for c in range(CONVERSATIONS)}
    failures: list[BaseException] = []
    faulted = threading.Event()
    after: dict[int, int] = dict.fromkeys(range(CONVERSATIONS), 0)

    def config(c: int) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"{fault}-{c}", "user_id": f"u{c}"}}

    async def conversation(c: int) -> None:
        deadline = time.monotonic() + DEADLINE
        for turn in itertools.count():
            if after[c] >= AFTER or time.monotonic() > deadline:
                return
            was_faulted = faulted.is_set()
            message = HumanMessage(f"conversation {c}, turn {turn}", id=f"h-{fault}-{c}-{turn}")
            try:
                await agent.ainvoke({"messages": [message]}, config(c))
                acked[c].append(turn)
                after[c] += was_faulted
            except Exception as exc:
                failures.append(exc)
                await asyncio.sleep(0.2)

    def fault_when_started() -> None:
        deadline = time.monotonic() + DEADLINE
        while not all(len(turns) >= 2 for turns in acked.values()):
            assert time.monotonic() < deadline, "the conversations did not start"
            time.sleep(0.05)
        inject(fault, bouncer, server)
        faulted.set()

    async def main() -> dict[int, list[Any]]:
        await asyncio.gather(
            asyncio.to_thread(fault_when_started), *(conversation(c) for c in range(CONVERSATIONS))
        )
        return {c: (await agent.aget_state(config(c))).values["messages"] for c in acked}

    try:
        states = asyncio.run(main())
        print(f"\n{fault}: {sum(map(len, acked.values()))} turns acknowledged, "
              f"{len(failures)} failed")  # fmt: skip
        for exc in failures[:5]:
            print(f"  {type(exc).__name__}: {exc}"[:300])
        assert all(isinstance(exc, DOCUMENTED) for exc in failures), failures[:3]
        assert model.problems == []
        assert all(n >= AFTER for n in after.values()), after  # every one served again
        for c, state in states.items():
            said = {m.id for m in state if isinstance(m, HumanMessage)}
            assert {f"h-{fault}-{c}-{t}" for t in acked[c]} <= said  # every acknowledged turn
            stored = memory.get_messages(thread_id=f"{fault}-{c}", resource_id=f"u{c}")
            assert [m.id for m in stored] == [m.id for m in state]  # memory equals the state
        assert memory.flush(60)
    finally:
        storage.drop_schema()
        memory.close()
