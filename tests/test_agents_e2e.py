"""End to end: agents with memory hooked in, on a scripted tool-calling chat model."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from helpers import scripted
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import Memory, SQLiteStorage, TokenCounter, TokenLimiter

FACT_CALL = AIMessage(
    "",
    tool_calls=[
        {
            "name": "update_working_memory",
            "args": {"memory": "# User\n- Location: Lisbon"},
            "id": "w1",
        }
    ],
)


def cfg(thread: str, resource: str) -> dict:
    return {"configurable": {"thread_id": thread, "resource_id": resource}}


def full_memory(path: Path) -> Memory:
    return Memory(
        storage=SQLiteStorage(path),
        options={
            "working_memory": {"enabled": True},
            "semantic_recall": {"top_k": 2, "message_range": 0},
        },
    )


def react_agent(memory: Memory, model):
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(
            model,
            [memory.working_memory_tool()],
            pre_model_hook=memory.pre_model_hook(),
            checkpointer=memory.checkpointer(),
        )


def test_react_agent_remembers_across_threads_not_across_resources(tmp_path: Path) -> None:
    memory = full_memory(tmp_path / "m.db")
    model = scripted(
        FACT_CALL,
        AIMessage("Noted, Lisbon."),  # thread 1: stores the fact
        AIMessage("You live in Lisbon."),  # thread 2, same resource
        AIMessage("I don't know."),  # thread 3, another resource
    )
    agent = react_agent(memory, model)
    agent.invoke(
        {"messages": [HumanMessage("I just moved to Lisbon, my favourite city")]},
        cfg("t1", "alice"),
    )
    agent.invoke({"messages": [HumanMessage("Which city did I move to?")]}, cfg("t2", "alice"))
    agent.invoke({"messages": [HumanMessage("Which city did I move to?")]}, cfg("t3", "mallory"))
    second, third = model.seen[2], model.seen[3]
    assert "Location: Lisbon" in second[0].content  # via working memory
    assert any("I just moved to Lisbon" in str(m.content) for m in second)  # via semantic recall
    assert not any("Lisbon" in str(m.content) for m in third)
    # the graph's messages were mirrored, the hook's injected messages were not
    assert [m.type for m in memory.get_messages(thread_id="t1")] == ["human", "ai", "tool", "ai"]


async def test_create_agent_with_middleware(tmp_path: Path) -> None:
    from langchain.agents import create_agent

    memory = full_memory(tmp_path / "m.db")
    model = scripted(FACT_CALL, AIMessage("Noted."), AIMessage("Lisbon."), AIMessage("No idea."))
    agent = create_agent(model, [memory.working_memory_tool()], middleware=[memory.middleware()])
    await agent.ainvoke({"messages": [HumanMessage("I live in Lisbon")]}, cfg("t1", "alice"))
    await agent.ainvoke({"messages": [HumanMessage("Where do I live?")]}, cfg("t2", "alice"))
    await agent.ainvoke({"messages": [HumanMessage("Where do I live?")]}, cfg("t3", "mallory"))
    assert "Lisbon" in model.seen[2][0].content  # the merged system message
    assert not any("Lisbon" in str(m.content) for m in model.seen[3])
    stored = await memory.aget_messages(thread_id="t1")
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai"]


def test_resuming_a_thread_after_a_process_restart(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from langchain_core.messages import AIMessage, HumanMessage
        from helpers import scripted
        from langchain_mastra_memory import Memory, SQLiteStorage
        from langgraph.prebuilt import create_react_agent
        memory = Memory(storage=SQLiteStorage({str(tmp_path / "m.db")!r}))
        model = scripted(AIMessage(sys.argv[2]))
        agent = create_react_agent(model, [], pre_model_hook=memory.pre_model_hook(),
                                   checkpointer=memory.checkpointer())
        agent.invoke({{"messages": [HumanMessage(sys.argv[1])]}},
                     {{"configurable": {{"thread_id": "t1", "resource_id": "alice"}}}})
        print("|".join(str(m.content) for m in model.seen[0]))
        """
    )
    first = subprocess.run(
        [sys.executable, "-c", script, "hello", "hi there"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr
    second = subprocess.run(
        [sys.executable, "-c", script, "again", "welcome back"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().splitlines()[-1] == "hello|hi there|again"


@pytest.mark.slow
def test_a_500_turn_thread_stays_within_the_token_budget(tmp_path: Path) -> None:
    from langgraph.prebuilt import create_react_agent

    budget = 600
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), processors=[TokenLimiter(budget)])
    replies = [AIMessage(f"answer {i}: " + "words " * (i % 40)) for i in range(500)]
    model = scripted(*replies)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(
            model, [], pre_model_hook=memory.pre_model_hook(), checkpointer=memory.checkpointer()
        )
    counter = TokenCounter()
    for i in range(500):
        agent.invoke(
            {"messages": [HumanMessage(f"question {i}: " + "more " * (i % 30))]},
            cfg("long", "alice"),
        )
    assert len(model.seen) == 500
    assert all(counter.count_all(sent) <= budget + 1e-6 for sent in model.seen)  # float sums
    assert len(model.seen[-1]) > 2  # history was kept, just trimmed
    assert len(memory.get_messages(thread_id="long")) == 1000
