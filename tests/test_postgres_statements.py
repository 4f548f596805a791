"""What memory sends PostgreSQL in an agent turn, counted from the server's own statement log
(``log_statement = all``), so the count cannot creep back (a count, not a timing).

`create_agent` with `memory.middleware()`, `memory.checkpointer()` (LangGraph's `PostgresSaver`
on memory's database) and semantic recall on pgvector, against the same turns on the bare
`PostgresSaver` (`bench/pg_statements.py` prints the table and the statements themselves).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import Memory, PostgresStorage
from langchain_mastra_memory.testing import (
    logged_statements,
    mark_log,
    strict_model,
    throwaway_postgres,
    transaction_blocks,
)

pytestmark = pytest.mark.postgres

TURNS = 5
# measured 2026-11-28 (20 turns): memory adds 38.9 statements and 2.0 BEGIN blocks a turn (92
# and 24 on 2026-11-27); the ceilings leave a few turns' noise (an embedding batch split in two)
MAX_ADDED_STATEMENTS = 42
MAX_ADDED_BEGINS = 3


@pytest.fixture(scope="module")
def dsn() -> str:
    return throwaway_postgres(log_statements=True)  # a server of its own, logging everything


def counted(dsn: str, side: str) -> list[str]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    replies = [AIMessage(f"noted {i}") for i in range(TURNS + 2)]
    config = {"configurable": {"thread_id": f"{side}-{uuid.uuid4().hex}", "resource_id": "al"}}
    closers: list[Any] = []
    if side == "memory":
        storage = PostgresStorage(dsn, schema=f"s_{uuid.uuid4().hex[:10]}")
        memory = Memory(storage=storage, options={"semantic_recall": True})
        agent = create_agent(strict_model(*replies), middleware=[memory.middleware()],
                             checkpointer=memory.checkpointer())  # fmt: skip
        settle = memory.flush
        closers += [storage.drop_schema, storage.close]
    else:
        conn = Connection.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        saver = PostgresSaver(conn)
        saver.setup()
        agent = create_agent(strict_model(*replies), checkpointer=saver)
        settle = lambda _: True  # noqa: E731
        closers.append(conn.close)
    label = uuid.uuid4().hex
    for i in range(TURNS + 2):  # two turns to warm up, then the counted ones
        if i == 2:
            mark_log(dsn, f"{label}-start")
        agent.invoke({"messages": [HumanMessage(f"question {i} about my balcony garden")]}, config)
        settle(60)
    mark_log(dsn, f"{label}-end")
    for close in closers:
        close()
    return logged_statements(dsn, f"{label}-start", f"{label}-end")


def test_a_turn_sends_no_more_statements_than_measured(dsn: str) -> None:
    bare, mine = counted(dsn, "bare"), counted(dsn, "memory")
    assert bare and len(mine) > len(bare)  # the log is read, both sides counted
    added = (len(mine) - len(bare)) / TURNS
    begins = (transaction_blocks(mine) - transaction_blocks(bare)) / TURNS
    assert added <= MAX_ADDED_STATEMENTS, f"memory adds {added:.1f} statements a turn"
    assert begins <= MAX_ADDED_BEGINS, f"memory adds {begins:.1f} BEGIN blocks a turn"
    assert not any(s == "" for s in mine)  # no empty "is it alive?" query from a pool check
