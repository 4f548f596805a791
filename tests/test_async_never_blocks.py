"""Async code never blocks its event loop: a whole conversation on one loop, with storage set
to raise if any of its blocking methods runs on the loop's thread."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest
from helpers import scripted
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import BlockingCallError, Memory, SQLiteStorage
from langchain_mastra_memory.storage.base import forbid_blocking_calls

WM_CALL = AIMessage(
    "",
    tool_calls=[
        {"name": "update_working_memory", "args": {"memory": "# User\n- City: Lisbon"}, "id": "w1"}
    ],
)


def test_the_guard_catches_a_blocking_call_on_the_loop() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))

    async def blocking() -> None:
        memory.get_thread("t1")

    with forbid_blocking_calls(), pytest.raises(BlockingCallError, match="aget_thread"):
        asyncio.run(blocking())
    asyncio.run(blocking())  # outside the test mode it is allowed (and merely slow)
    memory.get_thread("t1")  # and a sync caller is never refused


def test_a_whole_conversation_on_one_loop_never_blocks(tmp_path: Path) -> None:
    from langgraph.prebuilt import create_react_agent

    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"),
        options={
            "working_memory": {"enabled": True},
            "semantic_recall": {"top_k": 2, "message_range": 1},
        },
    )
    model = scripted(WM_CALL, AIMessage("Noted."), AIMessage("Lisbon."), AIMessage("Hi again."))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(
            model,
            [memory.working_memory_tool()],
            pre_model_hook=memory.pre_model_hook(),
            checkpointer=memory.checkpointer(),
        )

    async def conversation() -> None:
        alice = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        await agent.ainvoke({"messages": [HumanMessage("I live in Lisbon now")]}, alice)
        later = {"configurable": {"thread_id": "t2", "resource_id": "alice"}}
        await agent.ainvoke({"messages": [HumanMessage("Where do I live?")]}, later)
        state = await agent.aget_state(alice)
        assert len(state.values["messages"]) == 4
        chat = memory.wrap(model)
        await chat.ainvoke("hello", {"configurable": {"thread_id": "t3", "resource_id": "alice"}})
        assert "Lisbon" in await memory.aget_working_memory(resource_id="alice")
        recalled = await memory.arecall(
            thread_id="t3", new_messages=[HumanMessage("Which city do I live in?")]
        )
        assert any("Lisbon" in str(m.content) for m in recalled)
        history = memory.chat_history(thread_id="t4", resource_id="alice")
        await history.aadd_messages([HumanMessage("note to self")])
        assert [m.content for m in await history.aget_messages()] == ["note to self"]
        await memory.aclone_thread("t1", new_thread_id="t1-copy")
        copied = await memory.aget_messages(thread_id="t1-copy")
        await memory.adelete_messages([m.id for m in copied if m.id][:1])
        await memory.aupdate_thread("t1", title="Moving")
        assert len(await memory.alist_threads(resource_id="alice")) == 5
        await agent.checkpointer.adelete_thread("t2")
        assert await memory.aget_thread("t2") is None

    with forbid_blocking_calls():
        asyncio.run(conversation())
