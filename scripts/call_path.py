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
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

import langchain_mastra_memory
from langchain_mastra_memory import Memory, SQLiteStorage

ROOT = Path(langchain_mastra_memory.__file__).parent
DRIVER = {"twins"}
CROSSINGS = {"across": 0, "up": 0}  # the last run's, counted by `entered`


def module_of(filename: str) -> str | None:
    path = Path(filename)
    if ROOT not in path.parents:
        return None
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return None if name in DRIVER else name.removesuffix(".__init__")


def entered(run: Callable[[], Any]) -> tuple[list[str], list[str], set[str]]:
    """The package's modules `run` enters, in order of first entry, the climbs back (a call
    from a module into one already on the stack further up, ``from -> to``), and the steps (each
    distinct call from one of the package's modules into another)."""
    order: list[str] = []
    stack: list[str | None] = []
    climbs: list[str] = []
    steps: set[str] = set()
    crossings = CROSSINGS  # every call into another module, and those into one up the stack
    crossings.update(across=0, up=0)

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            module = module_of(frame.f_code.co_filename)
            if module is not None:
                if stack and stack[-1] is not None and stack[-1] != module:
                    steps.add(f"{stack[-1]} -> {module}")
                    crossings["across"] += 1
                    crossings["up"] += module in stack[:-1]
                if module not in order:
                    order.append(module)
                elif stack and module in stack[:-1] and stack[-1] != module:
                    climb = f"{stack[-1]} -> {module}"  # re-entered from below
                    if climb not in climbs:
                        climbs.append(climb)
            stack.append(module if module is not None else (stack[-1] if stack else None))
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return order, climbs, steps


def report(title: str, modules: list[str], climbs: list[str], steps: set[str]) -> None:
    outside = [m for m in modules if not m.startswith(("storage", "recall"))]
    print(
        f"{title}: {len(modules)} modules ({len(outside)} outside storage/ and recall/), "
        f"{len(steps)} steps between modules ({CROSSINGS['across']} calls across, "
        f"{CROSSINGS['up']} of them back up the stack), {len(climbs)} climbs back"
    )
    for module in modules:
        print(f"    {module}")
    for climb in climbs:
        print(f"    climb: {climb}")


def middleware_turn(recall: bool) -> None:
    semantic = {"scope": "resource"} if recall else False
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        embedder=DeterministicFakeEmbedding(size=64) if recall else None,
        options={"semantic_recall": semantic},
    )
    model = GenericFakeChatModel(messages=iter([AIMessage(f"reply {i}") for i in range(4)]))
    agent = create_agent(model, middleware=[memory.middleware()])
    config = {"configurable": {"thread_id": "t1", "resource_id": "ada"}}
    agent.invoke({"messages": [HumanMessage("first")]}, config)
    modules, climbs, steps = entered(
        lambda: agent.invoke({"messages": [HumanMessage("second")]}, config)
    )
    memory.flush()
    report(
        f"a middleware turn (the agent's second, recall {'on' if recall else 'off'})",
        modules,
        climbs,
        steps,
    )
    first = next(i for i, m in enumerate(modules) if m.startswith(("storage", "recall")))
    print(f"    before it reaches recall or storage: {first} modules")


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
    modules, climbs, steps = entered(
        lambda: checkpointer.put(latest, turn, {"source": "input", "step": 2}, versions)
    )
    report("a checkpointer put (a thread's next turn)", modules, climbs, steps)


if __name__ == "__main__":
    middleware_turn(recall=False)
    middleware_turn(recall=True)
    checkpointer_put()
