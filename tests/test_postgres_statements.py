"""What memory sends PostgreSQL in an agent turn, counted from the server's own statement log
(``log_statement = all``), so the count cannot creep back (a count, not a timing).

`create_agent` with `memory.middleware()`, `memory.checkpointer()` (LangGraph's `PostgresSaver`
on memory's database) and semantic recall on pgvector, against the same turns on the bare
`PostgresSaver` (`bench/pg_statements.py` prints the table and the statements themselves).
"""

from __future__ import annotations

import pytest

from langchain_mastra_memory.testing import (
    agent_turn_statements,
    throwaway_postgres,
    transaction_blocks,
)

pytestmark = pytest.mark.postgres

TURNS = 5
# measured 2026-11-28 (20 turns): memory adds 29.0 statements and 2.0 BEGIN blocks a turn (92
# and 24 on 2026-11-27); the ceilings (a sweep of the embedding backlog, once a minute,
# or an embedding batch split in two is a few turns' noise within them)
MAX_ADDED_STATEMENTS = 30
MAX_ADDED_BEGINS = 3


@pytest.fixture(scope="module")
def dsn() -> str:
    return throwaway_postgres(log_statements=True)  # a server of its own, logging everything


def test_a_turn_sends_no_more_statements_than_measured(dsn: str) -> None:
    bare, mine = (
        agent_turn_statements(dsn, side, warmup=2, turns=TURNS) for side in ("bare", "memory")
    )
    assert bare and len(mine) > len(bare)  # the log is read, both sides counted
    added = (len(mine) - len(bare)) / TURNS
    begins = (transaction_blocks(mine) - transaction_blocks(bare)) / TURNS
    assert added <= MAX_ADDED_STATEMENTS, f"memory adds {added:.1f} statements a turn"
    assert begins <= MAX_ADDED_BEGINS, f"memory adds {begins:.1f} BEGIN blocks a turn"
    assert not any(s == "" for s in mine)  # no empty "is it alive?" query from a pool check
