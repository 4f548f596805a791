"""PostgreSQL behind PgBouncer (issue 93), as teams deploy it: Debian's PgBouncer 1.18 in front of
the session's server (`pg_bouncer.Bouncer`), in transaction pooling mode (with the
``ignore_startup_parameters = options`` most psycopg deployments add) and in session mode (the
default config, which refuses ``options``).

Before: 8 threads saving at once failed (``prepared statement "_pg3_1" does not exist``), 16
async conversations failed (``already exists``), a `create_agent` turn over memory's checkpointer
failed, and, silently, every table went to ``public`` whatever the schema (the ``options``
that set the search path were dropped): two tenants in two schemas shared one set of tables.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from test_postgres_failover import Replies

from langchain_mastra_memory import ConfigurationError, Memory, PostgresStorage

pytestmark = pytest.mark.postgres

MODES = [("transaction", True), ("session", False)]  # (pool mode, ignore_startup_parameters)
IDS = ["transaction", "session"]


@pytest.fixture(params=MODES, ids=IDS)
def bouncer(request: pytest.FixtureRequest, pgbouncer: Any) -> Any:
    mode, ignore = request.param
    return pgbouncer(mode, ignore_options=ignore)


@pytest.fixture
def schema() -> Iterator[str]:
    name = f"b_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(os.environ["LMM_TEST_POSTGRES_DSN"], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def tables_in(schema: str) -> set[str]:
    """The tables of `schema`, read on the server directly (not through the pooler)."""
    with psycopg.connect(os.environ["LMM_TEST_POSTGRES_DSN"], autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
    return {r[0] for r in rows}


def test_a_pooler_is_found_and_every_table_goes_to_the_storage_s_schema(
    bouncer: Any, schema: str
) -> None:
    public_before = tables_in("public")
    storage = PostgresStorage(bouncer.dsn, schema=schema)
    assert storage.pooled is True
    storage.create_thread(thread_id="t1", resource_id="alice")
    storage.close()
    assert {"memory_threads", "memory_messages"} <= tables_in(schema)
    assert tables_in("public") == public_before  # nothing leaked to public


def test_two_tenants_in_two_schemas_behind_the_pooler_share_nothing(bouncer: Any) -> None:
    schemas = [f"b_{uuid.uuid4().hex[:12]}" for _ in range(2)]
    storages = [PostgresStorage(bouncer.dsn, schema=s) for s in schemas]
    try:
        for n, storage in enumerate(storages):
            storage.create_thread(thread_id=f"only-{n}", resource_id="alice")
        for n, storage in enumerate(storages):  # many times: each lands on any server connection
            for _ in range(20):
                ids = [t.id for t in storage.list_threads(resource_id="alice")]
                assert ids == [f"only-{n}"]
    finally:
        for storage in storages:
            storage.drop_schema()
            storage.close()


def test_eight_threads_save_at_once_with_recall_on_pgvector(bouncer: Any, schema: str) -> None:
    memory = Memory(storage=PostgresStorage(bouncer.dsn, schema=schema),
                    options={"semantic_recall": True})  # fmt: skip
    errors: list[BaseException] = []

    def conversation(i: int) -> None:
        try:
            memory.create_thread(thread_id=f"t{i}", resource_id="alice")
            for j in range(8):  # past psycopg's prepare threshold (5 runs of a statement)
                memory.save_messages(
                    [HumanMessage(f"thread {i} note {j}: my bike is {j} years old"),
                     AIMessage(f"noted {i}-{j}")],
                    thread_id=f"t{i}", resource_id="alice",
                )  # fmt: skip
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=conversation, args=(i,)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
    assert errors == []
    assert memory.flush(120)
    assert memory.storage.count_unembedded() == 0
    text = "thread 3 note 5: my bike is 5 years old"
    assert memory.recall_index is not None
    upkeep = memory.recall_index.upkeep
    [best] = memory.vector.query(upkeep.index_name(), upkeep.embedder.embed_query(text), top_k=1,
                                 resource_id="alice")  # fmt: skip
    assert memory.storage.get_messages_by_id([best.message_id])[0].message.content == text
    memory.close()


@pytest.mark.parametrize("saver", ["memory's", "the app's"])
def test_sixteen_async_agent_conversations_over_the_checkpointer(
    bouncer: Any, schema: str, saver: str
) -> None:
    """`create_agent` with memory's middleware, 16 conversations at once in one loop (more
    than the default executor's threads), over memory's checkpointer or the application's own
    `AsyncPostgresSaver` opened as the docs say behind a pooler (``prepare_threshold=None``):
    every turn served, and memory equals the state."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    memory = Memory(storage=PostgresStorage(bouncer.dsn, schema=schema),
                    options={"semantic_recall": True})  # fmt: skip
    model = Replies(count=itertools.count())

    async def main() -> dict[int, list[Any]]:
        pool = None
        checkpointer: Any = memory.checkpointer()
        if saver == "the app's":
            kwargs = {"autocommit": True, "prepare_threshold": None, "row_factory": dict_row}
            pool = AsyncConnectionPool(bouncer.dsn, max_size=8, kwargs=kwargs, open=False)
            await pool.open()
            checkpointer = AsyncPostgresSaver(pool)  # (in public: the app's own tables)
            await checkpointer.setup()
        agent = create_agent(model, middleware=[memory.middleware()], checkpointer=checkpointer)

        async def conversation(c: int) -> None:
            config = {"configurable": {"thread_id": f"t{c}-{schema}", "user_id": f"u{c}"}}
            for turn in range(3):
                message = HumanMessage(f"conversation {c}, turn {turn}", id=f"h-{c}-{turn}")
                await agent.ainvoke({"messages": [message]}, config)

        await asyncio.gather(*(conversation(c) for c in range(16)))
        states = {}
        for c in range(16):
            config = {"configurable": {"thread_id": f"t{c}-{schema}", "user_id": f"u{c}"}}
            states[c] = (await agent.aget_state(config)).values["messages"]
        if pool is not None:
            await pool.close()
        return states

    states = asyncio.run(main())
    assert model.problems == []
    for c, state in states.items():
        assert [m.content for m in state if isinstance(m, HumanMessage)] == [
            f"conversation {c}, turn {t}" for t in range(3)
        ]
        stored = memory.get_messages(thread_id=f"t{c}-{schema}", resource_id=f"u{c}")
        assert [m.id for m in stored] == [m.id for m in state]
    memory.close()


def test_observer_leases_are_each_transaction_s_own(bouncer: Any, schema: str) -> None:
    """A lease taken through the pooler is seen by every other connection (it is a row, not a
    session's lock), refused to another holder while it lives, and gone once given back."""
    storages = [PostgresStorage(bouncer.dsn, schema=schema) for _ in range(2)]
    first, second = storages
    assert first.claim_observation("thread:t1", owner="a", seconds=60)
    for _ in range(10):  # on whichever server connection each claim lands
        assert not second.claim_observation("thread:t1", owner="b", seconds=60)
    first.release_observation("thread:t1", owner="a")
    assert second.claim_observation("thread:t1", owner="b", seconds=60)
    for storage in storages:
        storage.close()


def test_the_replica_route_and_prune_behind_the_pooler(bouncer: Any, schema: str) -> None:
    """Reads through the replica route (here the same server, through the pooler) and a
    retention prune, both behind it."""
    from datetime import datetime, timedelta, timezone

    storage = PostgresStorage(bouncer.dsn, schema=schema, read_dsn=bouncer.dsn)
    memory = Memory(storage=storage, options={"retention": {"messages": "30d"}})
    memory.create_thread(thread_id="t1", resource_id="alice")
    old = datetime.now(timezone.utc) - timedelta(days=90)
    memory.storage.save_messages([HumanMessage("old news")], thread_id="t1",
                                 resource_id="alice", created_at=[old])  # fmt: skip
    memory.save_messages([HumanMessage("fresh news")], thread_id="t1", resource_id="alice")
    report = memory.prune()
    assert report.messages == 1
    assert [m.content for m in memory.get_messages(thread_id="t1", resource_id="alice")] == [
        "fresh news"
    ]
    assert storage.replica is not None and storage.replica.served["replica"] > 0
    memory.close()


def test_told_there_is_no_pooler_where_there_is_one_is_a_clear_error(
    bouncer: Any, schema: str
) -> None:
    """``pooler=False`` in front of a pooler is refused at once, naming the setting, before a
    table is made (they would all go to ``public``)."""
    public_before = tables_in("public")
    with pytest.raises(ConfigurationError, match=r"behind a connection pooler.*pooler=True"):
        PostgresStorage(bouncer.dsn, schema=schema, pooler=False)
    assert tables_in("public") == public_before and tables_in(schema) == set()


def test_a_plain_server_is_not_taken_for_a_pooler(schema: str) -> None:
    storage = PostgresStorage(os.environ["LMM_TEST_POSTGRES_DSN"], schema=schema)
    assert storage.pooled is False and storage.begin_statement() is None
    storage.close()


@pytest.mark.parametrize("pooler", ["yes", 1, 0.0])
def test_a_pooler_setting_that_is_not_a_bool_is_refused_before_connecting(pooler: Any) -> None:
    with pytest.raises(ConfigurationError, match="pooler must be True, False or None"):
        PostgresStorage("postgresql://nobody@127.0.0.1:1/none", pooler=pooler)
