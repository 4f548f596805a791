"""PostgreSQL failover under load: the primary killed, its synchronous standby promoted.

A primary and a streaming standby with synchronous replication (`pg_cluster`: the session
server's binaries, ``pg_basebackup`` / ``pg_ctl promote``). Memory, `memory.checkpointer()`
(LangGraph's `PostgresSaver` in memory's schema, its own pool) or LangGraph's own saver beside
`memory.middleware()`, semantic recall in pgvector, all on one libpq multi-host DSN
(``host=a,b port=p,q target_session_attrs=read-write``). Several conversations run their turns
at once (threads, or one event loop); the primary is killed as a crash kills it (``pg_ctl stop
-m immediate``), the standby promoted, and the conversations go on, with no restart of the app:

- every turn acknowledged before the kill is there afterwards, in memory and in the graph's
  state, and memory holds exactly the state's messages, in its order (nothing half-saved);
- a turn that fails is a clear error (`StorageError`, or psycopg's `OperationalError` from
  LangGraph's saver), and turns are served again once the standby is up: the pools found the
  new primary by themselves;
- every stored message has its vectors in pgvector afterwards, none twice.

The outage each run saw (first failure to first acknowledged turn after the promotion) is
printed: `docs/deployment.md` reports it.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pg_cluster import Cluster

from langchain_mastra_memory import Memory, PostgresStorage, StorageError, VectorStoreError
from langchain_mastra_memory.provider_rules import provider_violations
from langchain_mastra_memory.storage.postgres.connections import acheck_alive, check_alive
from langchain_mastra_memory.storage.records import scope_key

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

CONVERSATIONS = 4
BEFORE, AFTER = 3, 3  # acknowledged turns each conversation makes before the kill, after it
DEADLINE = 120.0


class Replies(BaseChatModel):
    """A reply per call, each a new message with an id of its own; inputs checked as OpenAI
    and Anthropic check them."""

    problems: list[str] = []  # noqa: RUF012 - a pydantic field, copied per instance
    count: Any = None

    @property
    def _llm_type(self) -> str:
        return "failover-replies"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Replies:
        return self

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        self.problems.extend(provider_violations(messages))
        n = next(self.count)
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(f"noted {n}", id=f"ai-{n}"))]
        )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster.start(tmp_path / "ha", {"standby1": {"sync": True}})
    yield made
    made.close()


class Load:
    """The conversations' record: acknowledged turns, failures, and when each happened."""

    def __init__(self) -> None:
        self.acked: dict[int, list[int]] = {c: [] for c in range(CONVERSATIONS)}
        self.acked_at: list[float] = []
        self.started_at: list[float] = []  # when each acknowledged turn started
        self.failures: list[tuple[float, BaseException]] = []
        self.killed_at: float | None = None
        self.promoted_at: float | None = None
        self.states: dict[int, list[BaseMessage]] = {}  # each graph state, read afterwards
        self.model: Any = None
        self.lock = threading.Lock()

    def ack(self, c: int, turn: int, started: float) -> None:
        with self.lock:
            self.acked[c].append(turn)
            self.acked_at.append(time.monotonic())
            self.started_at.append(started)

    def fail(self, exc: BaseException) -> None:
        with self.lock:
            self.failures.append((time.monotonic(), exc))

    def before_kill(self) -> bool:
        return all(len(turns) >= BEFORE for turns in self.acked.values())

    def done(self, c: int) -> bool:
        if self.promoted_at is None:
            return False
        return len(self.acked[c]) >= BEFORE + AFTER and self.acked_at[-1] > self.promoted_at

    def outage(self) -> float:
        """From the kill to the first turn served that started after it."""
        assert self.killed_at is not None
        after = zip(self.started_at, self.acked_at, strict=True)
        served = [done for started, done in after if started > self.killed_at]
        return (min(served) if served else float("inf")) - self.killed_at


POOL = {"autocommit": True, "prepare_threshold": 0, "connect_timeout": 3}


def app_saver(dsn: str, mode: str) -> Any:
    """The application's own saver, LangGraph's, on the DSN (async: made in the loop)."""
    from psycopg.rows import dict_row

    if mode == "sync":
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg_pool import ConnectionPool

        pool = ConnectionPool(dsn, max_size=8, check=check_alive,
                              kwargs={**POOL, "row_factory": dict_row})  # fmt: skip
        saver = PostgresSaver(pool)
        saver.setup()
        return saver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg_pool import AsyncConnectionPool

    apool = AsyncConnectionPool(dsn, max_size=8, check=acheck_alive,
                                kwargs={**POOL, "row_factory": dict_row}, open=False)  # fmt: skip
    return AsyncPostgresSaver(apool)


def build(memory: Memory, saver: Any) -> Any:
    """`create_agent` with memory's middleware, over memory's checkpointer or `saver`."""
    from langchain.agents import create_agent

    model = Replies(count=itertools.count())
    checkpointer = memory.checkpointer() if saver is None else saver
    return create_agent(model, middleware=[memory.middleware()], checkpointer=checkpointer), model


def turn_input(c: int, turn: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"conversation {c}, turn {turn}", id=f"h-{c}-{turn}")]}


def config(c: int) -> dict[str, Any]:
    return {"configurable": {"thread_id": f"t{c}", "user_id": f"u{c}"}}


def fail_over(cluster: Cluster, load: Load) -> None:
    deadline = time.monotonic() + DEADLINE
    while not load.before_kill():
        assert time.monotonic() < deadline, "the conversations did not start"
        time.sleep(0.05)
    load.killed_at = time.monotonic()
    cluster.kill("primary")
    time.sleep(0.5)  # the operator's (or Patroni's) time to decide
    cluster.promote("standby1")
    load.promoted_at = time.monotonic()


def run_sync(make: Any, cluster: Cluster) -> Load:
    load = Load()
    agent, load.model = make()

    def conversation(c: int) -> None:
        deadline = time.monotonic() + DEADLINE
        for turn in itertools.count():
            if load.done(c) or time.monotonic() > deadline:
                return
            started = time.monotonic()
            try:
                agent.invoke(turn_input(c, turn), config(c))
                load.ack(c, turn, started)
            except Exception as exc:
                load.fail(exc)
                time.sleep(0.1)

    workers = [threading.Thread(target=conversation, args=(c,)) for c in range(CONVERSATIONS)]
    for worker in workers:
        worker.start()
    fail_over(cluster, load)
    for worker in workers:
        worker.join(DEADLINE + 30)
    load.states = {c: agent.get_state(config(c)).values["messages"] for c in load.acked}
    if hasattr(agent.checkpointer, "conn"):
        agent.checkpointer.conn.close()  # (the application's pool)
    return load


def run_async(make: Any, cluster: Cluster) -> Load:
    load = Load()
    agent: Any = None

    async def conversation(c: int) -> None:
        deadline = time.monotonic() + DEADLINE
        for turn in itertools.count():
            if load.done(c) or time.monotonic() > deadline:
                return
            started = time.monotonic()
            try:
                await agent.ainvoke(turn_input(c, turn), config(c))
                load.ack(c, turn, started)
            except Exception as exc:
                load.fail(exc)
                await asyncio.sleep(0.1)

    async def main() -> None:
        nonlocal agent
        agent, load.model = make()  # (an async saver is made in its loop)
        if hasattr(agent.checkpointer, "conn"):
            await agent.checkpointer.conn.open()  # (the application's async pool)
            await agent.checkpointer.setup()
        await asyncio.gather(
            asyncio.to_thread(fail_over, cluster, load),
            *(conversation(c) for c in range(CONVERSATIONS)),
        )
        for c in load.acked:
            load.states[c] = (await agent.aget_state(config(c))).values["messages"]
        if hasattr(agent.checkpointer, "conn"):
            await agent.checkpointer.conn.close()

    asyncio.run(main())
    return load


@pytest.mark.parametrize("shape", ["checkpointer", "middleware"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_promoted_standby_serves_every_acknowledged_turn(
    cluster: Cluster, mode: str, shape: str
) -> None:
    dsn = cluster.dsn("primary", "standby1")
    storage = PostgresStorage(dsn, connect_timeout=3, pool_timeout=60)
    memory = Memory(storage=storage, options={"semantic_recall": True})

    def make() -> tuple[Any, Replies]:
        return build(memory, None if shape == "checkpointer" else app_saver(dsn, mode))

    try:
        load = (run_sync if mode == "sync" else run_async)(make, cluster)
        outage = load.outage()
        print(f"\n{mode} {shape}: {sum(map(len, load.acked.values()))} turns acknowledged, "
              f"{len(load.failures)} failed, outage {outage:.2f} s")  # fmt: skip
        for at, exc in load.failures:
            print(f"  failed at +{at - load.killed_at:.2f} s: {type(exc).__name__}: {exc}"[:300])
        print("  acknowledged at", [round(t - load.killed_at, 2) for t in load.acked_at
                                    if t > load.killed_at][:8])  # fmt: skip
        assert load.model.problems == []
        assert all(len(turns) >= BEFORE + AFTER for turns in load.acked.values()), load.acked
        for _, exc in load.failures:  # a clear error: the database's, never a wrong answer
            assert isinstance(exc, StorageError | VectorStoreError | psycopg.OperationalError), exc
            if isinstance(exc, VectorStoreError):  # a failover is named first, not a crash
                assert "restarted or failed over" in str(exc)
        # the pools found the new primary by themselves
        with storage._transaction(write=False) as conn:
            port, recovering = conn.execute(
                "SELECT inet_server_port(), pg_is_in_recovery()"
            ).fetchone()
        assert (port, recovering) == (cluster.nodes["standby1"].port, False)
        assert memory.flush(60)
        for c, turns in load.acked.items():
            state = load.states[c]
            stored = memory.get_messages(thread_id=f"t{c}", resource_id=f"u{c}")
            ids = [m.id for m in state]
            kept = [m.id for m in stored]
            if shape == "checkpointer":  # the turn and its checkpoint: one transaction
                assert kept == ids  # nothing half-saved
            else:  # the middleware saves the turn before the app's saver writes the state:
                # a turn whose checkpoint writes failed stays in memory alone (its input, its
                # reply); never an acknowledged turn's, never one that did not fail
                assert [i for i in kept if i in set(ids)] == ids
                extra = [m for m in stored if m.id not in set(ids)]
                acknowledged = {f"h-{c}-{t}" for t in turns}
                assert all(m.id not in acknowledged for m in extra)
                assert len(extra) <= 2 * len(load.failures)
            for turn in turns:  # every acknowledged turn, with its reply after it
                at = ids.index(f"h-{c}-{turn}")
                assert isinstance(state[at + 1], AIMessage), (c, turn)
        assert memory.vector_backlog().pending == 0
        index = memory.recall_index
        assert index is not None
        name = index.upkeep.index_name()
        stored_ids = set()
        for c in range(CONVERSATIONS):
            ids = [m.id for m in memory.get_messages(thread_id=f"t{c}", resource_id=f"u{c}")]
            assert index.vector.present(name, f"u{c}", ids) == set(ids)  # every vector there
            stored_ids |= set(ids)
        table = index.vector._table(name, 384, create=False)
        with storage._transaction(write=False) as conn:
            vectors_of = {
                row[0] for row in conn.execute(f"SELECT DISTINCT message_id FROM {table}")
            }
        assert vectors_of == stored_ids  # and none of a message memory does not hold
    finally:
        memory.close(30)


@pytest.mark.parametrize("late", ["lapsed", "in time"])
def test_an_observers_lease_comes_through_a_failover_and_the_scope_is_observed_once(
    cluster: Cluster, late: str
) -> None:
    """An Observer holds a scope's lease when the primary dies. The lease was replicated with
    the claim (synchronous replication): on the promoted standby no second Observer runs while
    it holds. Its pass either commits on the new primary in time (once), or its lease lapses,
    the next run takes the scope and observes it, and the late commit writes nothing."""
    storage = PostgresStorage(cluster.dsn("primary", "standby1"), connect_timeout=3)
    try:
        storage.create_thread(thread_id="t", resource_id="alice")
        saved = storage.save_messages(
            [HumanMessage(f"q{i}") if i % 2 == 0 else AIMessage(f"a{i}") for i in range(6)],
            thread_id="t", resource_id="alice",
        )  # fmt: skip
        ids = [s.message.id for s in saved]
        key = scope_key("thread", resource_id="alice", thread_id="t")
        assert storage.claim_observation(key, owner="observer-1", seconds=3)
        cluster.kill("primary")
        cluster.promote("standby1")
        assert not storage.claim_observation(key, owner="observer-2", seconds=30)  # still held

        def commit(owner: str) -> Any:
            return storage.commit_observation(
                key, owner=owner, resource_id="alice", text=f"- [high] seen by {owner}",
                current_task=None, message_ids=ids, token_count=4.0,
            )  # fmt: skip

        if late == "lapsed":
            time.sleep(3.2)  # observer-1's process is gone: its lease lapses
            assert storage.claim_observation(key, owner="observer-2", seconds=30)
            assert commit("observer-1") is None  # the late result: nothing written
            assert commit("observer-2") is not None
        else:
            assert commit("observer-1") is not None  # its commit ends the lease
            assert storage.claim_observation(key, owner="observer-2", seconds=30)
        log = storage.observation_log(key)
        assert len(log) == 1 and log[0].message_ids == tuple(ids)  # observed once
        assert storage.unobserved_messages(key, resource_id="alice", thread_id="t") == []
    finally:
        storage.close()


def test_the_deployment_pages_example_runs_on_a_standby_pair(cluster: Cluster) -> None:
    """docs/deployment.md's example as written, its DSNs this cluster's (the standby as the
    replica), its model a scripted one: a turn through it is saved and read back."""
    import re

    page = (Path(__file__).parents[1] / "docs" / "deployment.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    code = block.replace(
        '"host=db-a,db-b port=5432,5432 dbname=app user=app target_session_attrs=read-write"',
        repr(cluster.dsn("primary", "standby1")),
    ).replace('"host=db-replica dbname=app user=app"', repr(cluster.nodes["standby1"].conninfo()))
    code = re.sub(r'ChatOpenAI\(model="[^"]+"\)', "__model__", code)
    assert "db-a" not in code and "__model__" in code
    namespace: dict[str, Any] = {"__model__": Replies(count=itertools.count())}
    exec(compile(code, "docs/deployment.md", "exec"), namespace)
    agent, memory = namespace["agent"], namespace["memory"]
    try:
        out = agent.invoke(turn_input(0, 0), config(0))
        assert out["messages"][-1].content == "noted 0"
        stored = memory.get_messages(thread_id="t0", resource_id="u0")
        assert [m.id for m in stored] == ["h-0-0", "ai-0"]
        assert memory.storage.replica is not None  # the read_dsn was taken
    finally:
        memory.close(30)


def om_memory_on(dsn: str, observer: Any, **option: Any) -> Memory:
    settings = {"model": observer, "message_tokens": 100, "buffer_tokens": None,
                "block_timeout": 0.2, **option}  # fmt: skip
    storage = PostgresStorage(dsn, connect_timeout=3)
    return Memory(storage=storage, options={"observational_memory": settings})


def wait_for(condition: Any, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_an_observer_mid_pass_through_a_failover_observes_once(cluster: Cluster) -> None:
    """The Observer is in its model call, holding the scope's lease, when the primary dies; it
    answers after the promotion: its result is committed once, on the new primary, and the
    observed messages are not observed again."""
    from test_observational_memory import Scripted, chat_turns

    gate = threading.Event()
    observer = Scripted(calls=[], gate=gate, gate_seconds=None)
    memory = om_memory_on(cluster.dsn("primary", "standby1"), observer)
    try:
        chat_turns(memory, 4)  # past the threshold: the Observer runs behind the turns
        wait_for(lambda: len(observer.calls) == 1, "the Observer did not start")
        cluster.kill("primary")
        cluster.promote("standby1")
        gate.set()  # the model answers; the pass commits on the promoted standby
        wait_for(lambda: memory.flush(5), "the Observer's pass did not land")
        key = scope_key("thread", resource_id="alice", thread_id="t1")
        (group,) = memory.storage.observation_log(key)
        assert len(group.message_ids) == 8
        chat_turns(memory, 1, start=4)
        assert memory.flush(60) and len(observer.calls) == 1  # nothing observed twice
    finally:
        gate.set()
        memory.close(30)


def test_an_observer_lost_with_the_primary_lapses_and_the_next_save_observes_once(
    cluster: Cluster,
) -> None:
    """The process whose Observer held the lease is gone with the primary (its model never
    answers). On the promoted standby the lease still holds, so another process's saves skip
    the scope; once it lapses, the next save observes everything once, and the lost pass's
    late answer writes nothing."""
    from test_observational_memory import Scripted, chat_turns

    dsn = cluster.dsn("primary", "standby1")
    gate = threading.Event()
    lost = Scripted(calls=[], gate=gate, gate_seconds=None)
    first = om_memory_on(dsn, lost, lease_seconds=2)
    observer = Scripted(calls=[])
    second: Memory | None = None
    try:
        chat_turns(first, 4)
        wait_for(lambda: len(lost.calls) == 1, "the first Observer did not start")
        cluster.kill("primary")
        cluster.promote("standby1")
        second = om_memory_on(dsn, observer, lease_seconds=2)  # another app process
        chat_turns(second, 1, start=4)
        assert second.flush(60) and observer.calls == []  # the lease holds: skipped
        time.sleep(2.2)  # the lost Observer's lease lapses
        chat_turns(second, 1, start=5)
        assert second.flush(60) and len(observer.calls) == 1  # the next save observes, once
        gate.set()  # the lost pass answers at last
        wait_for(lambda: first.flush(5), "the lost pass did not end")
        key = scope_key("thread", resource_id="alice", thread_id="t1")
        (group,) = second.storage.observation_log(key)  # its late commit wrote nothing
        assert len(group.message_ids) == 12
    finally:
        gate.set()
        first.close(30)
        if second is not None:
            second.close(30)
