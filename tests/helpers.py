"""Test helpers: every scripted model checks its input as OpenAI and Anthropic do."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory.testing import ProviderStrictChatModel, strict_model

ScriptedChatModel = ProviderStrictChatModel
scripted = strict_model

__all__ = [
    "ScriptedChatModel",
    "garden",
    "scripted",
    "strict_model",
    "thread_columns_before_archiving",
]


def garden(memory) -> None:
    """Alice's garden thread (one message of two sentences: two pieces) and bob's secret, saved
    and embedded: what the vector-store tests search."""
    memory.create_thread(thread_id="g1", resource_id="alice", title="Garden")
    memory.create_thread(thread_id="b1", resource_id="bob")
    memory.save_messages([HumanMessage("I grow tomatoes on the balcony"),
                          AIMessage("Tomatoes need six hours of sun. Water them daily.")],
                         thread_id="g1", resource_id="alice")  # fmt: skip
    memory.save_messages([HumanMessage("bob's locker code is qx4471")], thread_id="b1",
                         resource_id="bob")  # fmt: skip
    memory.flush(60)


@contextmanager
def thread_columns_before_archiving() -> Iterator[None]:
    """Storage reading threads as a schema before ``archived_at`` did (every SQL room)."""
    from langchain_mastra_memory.storage import (
        sql,
        sql_messages,
        sql_search,
        sql_threads,
        sql_working_memory,
        statements,
    )  # fmt: skip

    rooms = (sql, sql_messages, sql_search, sql_threads, sql_working_memory, statements)
    saved = {room: room.THREAD_COLUMNS for room in rooms if hasattr(room, "THREAD_COLUMNS")}
    try:
        for room in saved:
            room.THREAD_COLUMNS = statements.NEW_THREAD_COLUMNS
        yield
    finally:
        for room, columns in saved.items():
            room.THREAD_COLUMNS = columns
