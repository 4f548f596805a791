"""Recall filtered by thread metadata, a read-only memory, and options changed for one call
through the run's config (Mastra 1.x's ``semanticRecall.filter``, ``readOnly``, per-call
``memory.options``), in the shapes users run: LCEL, a LangGraph agent with the checkpointer."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

from langchain_mastra_memory import ConfigurationError, Memory, MemoryStorage
from langchain_mastra_memory.testing import strict_model

RECALL = {"mode": "keyword", "top_k": 2, "message_range": 0}


def cfg(thread: str, **options: object) -> dict:
    configurable: dict = {"thread_id": thread, "user_id": "alice"}
    if options:
        configurable["memory_options"] = options
    return {"configurable": configurable}


def seeded(storage: MemoryStorage, **options: object) -> Memory:
    """alice's threads: 'x1' and 'x2' of project x, 'y1' of project y (closed), each with one
    fact about the harbour; a current thread 'now' with four messages."""
    memory = Memory(storage=storage, options={"semantic_recall": RECALL, **options})
    for thread, project, extra in (("x1", "x", {}), ("x2", "x", {}), ("y1", "y", {"closed": 1})):
        memory.create_thread(
            thread_id=thread, resource_id="alice", metadata={"project": project, **extra}
        )
        memory.save_messages(
            [HumanMessage(f"the harbour fact of {thread}", id=f"f-{thread}")],
            thread_id=thread, resource_id="alice",
        )  # fmt: skip
    memory.create_thread(thread_id="now", resource_id="alice")
    memory.save_messages(
        [HumanMessage("first", id="n1"), AIMessage("one", id="n2"),
         HumanMessage("second", id="n3"), AIMessage("two", id="n4")],
        thread_id="now", resource_id="alice",
    )  # fmt: skip
    return memory


def recalled_ids(messages: list) -> set[str]:
    text = " ".join(str(m.content) for m in messages)
    return {t for t in ("x1", "x2", "y1") if f"harbour fact of {t}" in text}


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [({"project": "x"}, {"x1", "x2"}), ({"project": {"$ne": "x"}}, {"y1"}),
     ({"closed": {"$gte": 1}}, {"y1"}), ({"project": "z"}, set())],
)  # fmt: skip
def test_recall_keeps_to_threads_whose_metadata_matches(
    storage: MemoryStorage, call, wanted: dict, expected: set
) -> None:
    memory = seeded(storage)
    memory.recall_index.options = memory.recall_index.options.model_copy(
        update={"filter": wanted, "top_k": 3}
    )
    turn = [HumanMessage("tell me the harbour fact", id="q")]
    found = call(memory, "recall", thread_id="now", resource_id="alice", new_messages=turn)
    assert recalled_ids(found) == expected


def test_a_filter_is_an_option_and_bad_operators_are_refused(storage: MemoryStorage) -> None:
    memory = Memory(storage=storage, options={"semantic_recall": {**RECALL, "filter": {"p": 1}}})
    assert memory.recall_index.options.filter == {"p": 1}
    with pytest.raises(ConfigurationError, match=r"\$regex"):
        Memory(storage=storage, options={"semantic_recall": {"filter": {"p": {"$regex": "x"}}}})
    with pytest.raises(ConfigurationError):
        Memory(storage=storage, options={"semantic_recall": {"filter": ["p"]}})


def test_a_read_only_memory_assembles_but_saves_nothing(storage: MemoryStorage) -> None:
    memory = seeded(storage, read_only=True)
    model = strict_model(AIMessage("Here you go."))
    chain = memory.wrap(model)
    chain.invoke("what was second?", cfg("now"))
    assert [m.content for m in model.seen[0]][-3:] == ["second", "two", "what was second?"]
    assert len(memory.get_messages(thread_id="now")) == 4  # nothing of the turn saved
    assert memory.get_thread("fresh") is None
    chain.invoke("hello", cfg("fresh"))
    assert memory.get_thread("fresh") is None  # not even an empty thread
    with pytest.raises(ConfigurationError, match="read-only"):
        Memory(storage=storage, options={"read_only": True, "working_memory": {"enabled": True}}
               ).working_memory_tool()  # fmt: skip


def react_agent(memory: Memory, model, tools=()):
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(
            model, list(tools), pre_model_hook=memory.pre_model_hook(),
            checkpointer=memory.checkpointer(),
        )  # fmt: skip


def test_one_call_can_be_read_only_in_a_graph(storage: MemoryStorage, call) -> None:
    memory = seeded(storage)
    model = strict_model(AIMessage("Routed."), AIMessage("Saved."))
    agent = react_agent(memory, model)
    run = agent.invoke if call.mode == "sync" else (lambda *a: asyncio.run(agent.ainvoke(*a)))
    run({"messages": [HumanMessage("route me")]}, cfg("side", read_only=True))
    assert memory.get_messages(thread_id="side", resource_id="alice") == []  # the graph's only
    assert agent.get_state(cfg("side")).values["messages"][-1].content == "Routed."
    run({"messages": [HumanMessage("keep me")]}, cfg("side"))
    assert [m.content for m in memory.get_messages(thread_id="side")][-2:] == ["keep me", "Saved."]


def test_read_only_edits_and_time_travel_leave_memory_alone(storage: MemoryStorage) -> None:
    """LangGraph's documented state edits under a read-only call: a RemoveMessage through
    update_state and a replay from an earlier checkpoint neither delete nor add anything in
    memory, while the graph's own state follows each edit."""
    from langchain_core.messages import RemoveMessage

    memory = seeded(storage)
    model = strict_model(AIMessage("First."), AIMessage("Second."), AIMessage("Replayed."))
    agent = react_agent(memory, model)
    agent.invoke({"messages": [HumanMessage("one", id="u1")]}, cfg("g"))
    agent.invoke({"messages": [HumanMessage("two", id="u2")]}, cfg("g"))
    stored = [m.content for m in memory.get_messages(thread_id="g")]
    assert stored == ["one", "First.", "two", "Second."]
    agent.update_state(cfg("g", read_only=True), {"messages": [RemoveMessage(id="u1")]})
    assert "one" not in [m.content for m in agent.get_state(cfg("g")).values["messages"]]
    assert [m.content for m in memory.get_messages(thread_id="g")] == stored
    earlier = list(agent.get_state_history(cfg("g")))[-3]  # after the first turn's input
    replay = {"configurable": {**earlier.config["configurable"], "user_id": "alice",
                               "memory_options": {"read_only": True}}}  # fmt: skip
    out = agent.invoke(None, replay)
    assert len(model.seen) == 3 and out["messages"][-1].content == "Replayed."  # it did run
    assert [m.content for m in memory.get_messages(thread_id="g")] == stored


def test_one_call_changes_history_and_recall(storage: MemoryStorage, call) -> None:
    memory = seeded(storage)
    turn = [HumanMessage("the harbour fact please", id="q")]

    def context(**options: object) -> list:
        model = strict_model(AIMessage("ok"))
        chain = memory.as_runnable() | model
        if call.mode == "sync":
            chain.invoke({"input": turn}, cfg("now", **options))
        else:
            asyncio.run(chain.ainvoke({"input": turn}, cfg("now", **options)))
        return model.seen[0]

    default = context()
    assert [m.content for m in default if m.id in ("n1", "n3")] == ["first", "second"]
    assert len(recalled_ids(default)) == 2
    short = context(last_messages=1)
    assert [m.id for m in short if m.id and m.id.startswith("n")] == ["n4"]
    assert recalled_ids(context(semantic_recall=False)) == set()
    assert len(recalled_ids(context(semantic_recall={"top_k": 1}))) == 1
    assert recalled_ids(context(semantic_recall={"filter": {"project": "y"}})) == {"y1"}
    assert len(recalled_ids(context())) == 2  # the memory's own options again
    with pytest.raises(ConfigurationError, match="memory_options"):
        context(last_messages=-2)
    with pytest.raises(ConfigurationError, match="memory_options"):
        context(semantic_recall={"index_name": "other"})
    with pytest.raises(ConfigurationError, match="memory_options"):
        context(colour="red")


def test_without_semantic_recall_a_call_cannot_tune_it(storage: MemoryStorage) -> None:
    memory = Memory(storage=storage)
    memory.create_thread(thread_id="t", resource_id="alice")
    with pytest.raises(ConfigurationError, match="no semantic recall"):
        memory.as_runnable().invoke({"input": "hi"}, cfg("t", semantic_recall={"top_k": 2}))


def test_the_working_memory_tool_refuses_a_read_only_call(storage: MemoryStorage) -> None:
    memory = Memory(storage=storage, options={"working_memory": {"enabled": True}})
    update = AIMessage("", tool_calls=[{"name": "update_working_memory", "id": "w1",
                                        "args": {"memory": "# User\n- Name: Ada"}}])  # fmt: skip
    model = strict_model(update, AIMessage("Not saved."))
    agent = react_agent(memory, model, [memory.working_memory_tool()])
    out = agent.invoke({"messages": [HumanMessage("I'm Ada")]}, cfg("t", read_only=True))
    reply = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert reply.status == "error" and "read-only" in reply.content
    assert memory.get_working_memory(resource_id="alice") is None
    assert not isinstance(out["messages"][0], SystemMessage)


def test_a_memory_method_takes_the_call_options_it_is_given(storage: MemoryStorage, call) -> None:
    """Outside a run (a script, a web handler), a call passes its own ``memory_options``; inside
    a run, what it passes wins over the run's config. Read once where the call enters memory."""
    memory = seeded(storage)
    turn = [HumanMessage("the harbour fact please", id="q")]
    ids = {"thread_id": "now", "resource_id": "alice"}

    def run(method: str, *args: object, **kwargs: object) -> list:
        if call.mode == "sync":
            return getattr(memory, method)(*args, **ids, **kwargs)
        return asyncio.run(getattr(memory, f"a{method}")(*args, **ids, **kwargs))

    assert len(recalled_ids(run("context", turn))) == 2
    assert recalled_ids(run("context", turn, memory_options={"semantic_recall": False})) == set()
    short = run("context", turn, memory_options={"last_messages": 1})
    assert [m.id for m in short if m.id and m.id.startswith("n")] == ["n4"]
    assert recalled_ids(run("recall", new_messages=turn, memory_options={
        "semantic_recall": {"filter": {"project": "y"}}})) == {"y1"}  # fmt: skip
    # inside a run whose config says read-only, the call's own options say otherwise
    config = cfg("now", read_only=True)

    def save(_: object) -> list:
        kept = run("save_turn", [HumanMessage("kept", id="k1")])
        run("save_turn", [HumanMessage("dropped", id="k2")], memory_options={"read_only": True})
        written = run("save_turn", [HumanMessage("written", id="k3")],
                      memory_options={"read_only": False})  # fmt: skip
        return [kept, written]

    kept, written = RunnableLambda(save).invoke(None, config)
    assert kept == [] and [m.id for m in written] == ["k3"]  # the run's, then the call's own
    stored = {m.id for m in memory.get_messages(thread_id="now")}
    assert "k3" in stored and not {"k1", "k2"} & stored
    with pytest.raises(ConfigurationError, match="memory_options"):
        run("context", turn, memory_options={"last_messages": -2})
    with pytest.raises(ConfigurationError, match="memory_options"):
        run("save_new", [HumanMessage("x")], memory_options={"colour": "red"})
    assert {m.id for m in memory.get_messages(thread_id="now")} == stored  # nothing lost
