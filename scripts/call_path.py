"""Which of the package's modules a middleware turn and a checkpointer ``put`` enter.

The redesign's measure (issue 95): a steady-state turn (the thread exists, its second turn),
traced with `sys.setprofile`, counting each module of the package a call enters, the
`twins` driver aside (it runs every step and is no room a reader walks into), and how many
times a call climbs back into a module it already left (a ping-pong).

    .venv/bin/python scripts/call_path.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

import langchain_mastra_memory
from langchain_mastra_memory import Memory, SQLiteStorage

ROOT = Path(langchain_mastra_memory.__file__).parent
DRIVER = {"twins"}


def module_of(filename: str) -> str | None:
    path = Path(filename)
    if ROOT not in path.parents:
        return None
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return None if name in DRIVER else name.removesuffix(".__init__")


def entered(run: Callable[[], Any]) -> tuple[list[str], int]:
    """The package's modules `run` enters, in order of first entry, and the climbs back."""
    order: list[str] = []
    stack: list[str | None] = []
    returns = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal returns
        if event == "call":
            module = module_of(frame.f_code.co_filename)
            if module is not None:
                if module not in order:
                    order.append(module)
                elif stack and module in stack[:-1] and stack[-1] != module:
                    returns += 1  # re-entered from below: a climb back up
            stack.append(module if module is not None else (stack[-1] if stack else None))
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return order, returns


def report(title: str, modules: list[str], returns: int) -> None:
    print(f"{title}: {len(modules)} modules, {returns} climbs back")
    for module in modules:
        print(f"    {module}")


def middleware_turn() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"), options={"semantic_recall": False})
    model = GenericFakeChatModel(messages=iter([AIMessage(f"reply {i}") for i in range(4)]))
    agent = create_agent(model, middleware=[memory.middleware()])
    config = {"configurable": {"thread_id": "t1", "resource_id": "ada"}}
    agent.invoke({"messages": [HumanMessage("first")]}, config)
    modules, returns = entered(lambda: agent.invoke({"messages": [HumanMessage("second")]}, config))
    report("a middleware turn (the agent's second)", modules, returns)


def checkpointer_put() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"), options={"semantic_recall": False})
    checkpointer = memory.checkpointer()
    graph = StateGraph(MessagesState)
    graph.add_node("reply", lambda state: {"messages": [AIMessage("hello")]})
    graph.add_edge(START, "reply")
    app = graph.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "t1", "resource_id": "ada"}}
    app.invoke({"messages": [HumanMessage("first")]}, config)
    state = app.get_state(config)
    latest = state.config
    checkpoint = checkpointer.get_tuple(latest)
    assert checkpoint is not None
    turn = {**checkpoint.checkpoint, "id": "1f0" + checkpoint.checkpoint["id"][3:-4] + "ffff"}
    messages = [*state.values["messages"], HumanMessage("again", id="again")]
    turn["channel_values"] = {**turn["channel_values"], "messages": messages}
    versions = {"messages": checkpointer.get_next_version(None, None)}
    modules, returns = entered(
        lambda: checkpointer.put(latest, turn, {"source": "input", "step": 2}, versions)
    )
    report("a checkpointer put (a thread's next turn)", modules, returns)


if __name__ == "__main__":
    middleware_turn()
    checkpointer_put()
