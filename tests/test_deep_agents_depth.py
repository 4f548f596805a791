"""Deep agents in depth (deepagents' ``create_deep_agent``): sub-agents, the ToolMessage
deepagents inserts for a dangling or malformed tool call, AGENTS.md beside memory, and memory's
share of a model call under a model profile.

Every scenario runs in each shape a user wires (``checkpointer=memory.checkpointer()``,
``middleware=[memory.middleware()]`` with LangGraph's own saver, and both) and each way a run
is driven (``invoke``, ``ainvoke``, ``stream``, ``astream``). The scripted model checks each
input as OpenAI and Anthropic do.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import pkgutil
import warnings
from typing import Any

import deepagents
import pytest
from deepagents.backends.utils import create_file_data
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.memory import InMemorySaver

from langchain_mastra_memory import Memory, SQLiteStorage, UnsavedTurnWarning
from langchain_mastra_memory.integrations.middleware import NAME
from langchain_mastra_memory.testing import ProviderStrictChatModel, strict_model

SHAPES = ["checkpointer", "middleware", "both"]
MODES = ["invoke", "ainvoke", "stream", "astream"]
CONFIG = {"configurable": {"thread_id": "t", "user_id": "alice"}}
WORKING = "# User\n- Name: Alice\n- City: Lisbon"
NOTE = "SUBAGENT-NOTE-4117"  # said only inside a sub-agent


def wired(memory: Memory, shape: str) -> dict[str, Any]:
    """`create_deep_agent` arguments for a shape (the middleware alone keeps LangGraph's own
    saver, as a user of that shape would)."""
    kwargs: dict[str, Any] = {
        "checkpointer": InMemorySaver() if shape == "middleware" else memory.checkpointer()
    }
    if shape != "checkpointer":
        kwargs["middleware"] = [memory.middleware()]
    return kwargs


def run(agent: Any, value: Any, mode: str, config: dict = CONFIG) -> None:
    """Drive one run to its end the way `mode` names (streams in two modes at once)."""
    if mode == "invoke":
        agent.invoke(value, config)
    elif mode == "ainvoke":
        asyncio.run(agent.ainvoke(value, config))
    elif mode == "stream":
        for _ in agent.stream(value, config, stream_mode=["updates", "messages"]):
            pass
    else:

        async def drain() -> None:
            async for _ in agent.astream(value, config, stream_mode=["updates", "messages"]):
                pass

        asyncio.run(drain())


def memory_on(tmp_path: Any, **options: Any) -> Memory:
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "memory.db"),
        options={"working_memory": {"enabled": True}, **options},
    )
    memory.update_working_memory(WORKING, resource_id="alice")
    return memory


def state_of(agent: Any) -> list[BaseMessage]:
    return agent.get_state(CONFIG).values["messages"]


def assert_memory_is_the_state(memory: Memory, agent: Any) -> None:
    state = state_of(agent)
    kept = memory.get_messages(thread_id="t")
    assert [(m.type, m.id) for m in kept] == [(m.type, m.id) for m in state]


def text(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


def calls(*names: str) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": n, "args": {"path": "/"}, "id": f"c-{n}"} for n in names]
    )


def delegate(subagent: str) -> AIMessage:
    return AIMessage("", tool_calls=[{
        "name": "task", "id": "c-task",
        "args": {"description": "List the files, then report.", "subagent_type": subagent},
    }])  # fmt: skip


# -- 1. sub-agents ---------------------------------------------------------------------------------
def subagent_script() -> ProviderStrictChatModel:
    """The parent delegates, the sub-agent thinks aloud (the note), lists files and answers,
    the parent answers the user."""
    return strict_model(
        delegate("helper"),
        AIMessage(f"Working on it: {NOTE}.", tool_calls=calls("ls").tool_calls),
        AIMessage("The folder is empty."),
        AIMessage("Your folder is empty."),
    )


def assert_nothing_of_the_subagent_kept(memory: Memory, agent: Any) -> None:
    assert_memory_is_the_state(memory, agent)
    kept = text(memory.get_messages(thread_id="t"))
    assert NOTE not in kept and "you are that subagent" not in kept
    assert "List the files, then report." not in kept  # the sub-agent's task prompt
    assert [t.id for t in memory.list_threads(resource_id="alice")] == ["t"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_forked_subagents_turns_stay_out_of_the_users_thread(
    tmp_path: Any, shape: str, mode: str
) -> None:
    """deepagents copies the parent's middleware into a fork, with the parent's thread_id in
    its config; the fork's preamble, calls and answer are not the user's conversation."""
    memory = memory_on(tmp_path)
    model = subagent_script()
    subagent = {"name": "helper", "description": "Lists files.", "system_prompt": "Help.",
                "mode": "fork"}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # forks are a beta feature of deepagents
        agent = deepagents.create_deep_agent(
            model, tools=[], system_prompt="Be brief.", subagents=[subagent],
            **wired(memory, shape),
        )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsavedTurnWarning)  # the parent's shapes keep it
        run(agent, {"messages": [HumanMessage("What is in my folder?")]}, mode)
    assert len(state_of(agent)) == 4  # question, task call, the sub-agent's answer, answer
    assert_nothing_of_the_subagent_kept(memory, agent)
    fork_inputs = [seen for seen in model.seen if "you are that subagent" in text(seen)]
    assert len(fork_inputs) == 2
    if shape != "checkpointer":  # memory's middleware, copied into the fork, gave it context
        assert all("Lisbon" in text(seen) for seen in fork_inputs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
def test_memory_in_a_subagents_spec_reads_and_saves_nothing_of_the_users_thread(
    tmp_path: Any, shape: str, mode: str
) -> None:
    """A declarative (isolated) sub-agent with ``memory.middleware()`` in its spec sees the
    user's working memory, not the user's thread, and stores nothing."""
    memory = memory_on(tmp_path)
    memory.save_turn(
        [HumanMessage("EARLIER-TURN: my cat is called Miso."), AIMessage("Noted.")],
        thread_id="t", resource_id="alice",
    )  # fmt: skip
    model = subagent_script()
    subagent = {"name": "helper", "description": "Lists files.", "system_prompt": "Help.",
                "middleware": [memory.middleware()]}  # fmt: skip
    agent = deepagents.create_deep_agent(
        model, tools=[], system_prompt="Be brief.", subagents=[subagent], **wired(memory, shape)
    )
    run(agent, {"messages": [HumanMessage("What is in my folder?")]}, mode)
    sub_inputs = [seen for seen in model.seen if "List the files, then report." in text(seen)]
    assert len(sub_inputs) == 2
    for seen in sub_inputs:
        assert "Lisbon" in text(seen)  # the user's working memory, read-only
        assert "EARLIER-TURN" not in text(seen)  # not the parent's thread
    kept = memory.get_messages(thread_id="t")
    assert [str(m.content) for m in kept[:2]] == ["EARLIER-TURN: my cat is called Miso.", "Noted."]
    assert NOTE not in text(kept) and "List the files, then report." not in text(kept)
    if shape != "middleware":  # the state holds this run's turn (the checkpointer's thread)
        assert [m.id for m in kept[2:]] == [m.id for m in state_of(agent)][-4:]


def test_the_next_thread_recalls_nothing_a_subagent_said(tmp_path: Any) -> None:
    memory = memory_on(tmp_path, semantic_recall={"scope": "resource", "top_k": 5})
    model = subagent_script()
    subagent = {"name": "helper", "description": "Lists files.", "system_prompt": "Help.",
                "middleware": [memory.middleware()]}  # fmt: skip
    agent = deepagents.create_deep_agent(
        model, tools=[], system_prompt="Be brief.", subagents=[subagent],
        **wired(memory, "both"),
    )  # fmt: skip
    run(agent, {"messages": [HumanMessage("What is in my folder?")]}, "invoke")
    memory.flush(60)
    reader = strict_model(AIMessage("I do not know."))
    nxt = deepagents.create_deep_agent(
        reader, tools=[], system_prompt="Be brief.", **wired(memory, "both")
    )
    config = {"configurable": {"thread_id": "t2", "user_id": "alice"}}
    run(nxt, {"messages": [HumanMessage(f"What was {NOTE} about?")]}, "invoke", config)
    assert "Your folder is empty." in text(reader.seen[-1])  # recall works, across threads
    assert NOTE not in text(reader.seen[-1][:-1])  # memory brought nothing of it


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_hook_in_a_subgraph_reads_its_own_state_and_warns_of_nothing(
    tmp_path: Any, mode: str
) -> None:
    """The pre-model hook decides as the middleware: in a subgraph (an agent graph added as a
    node of the user's graph) its history is the subgraph's state, read-only; the root
    checkpointer keeps the conversation, once."""
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import create_react_agent

    memory = memory_on(tmp_path)
    model = strict_model(AIMessage("one"), AIMessage("two"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        inner = create_react_agent(model, tools=[], pre_model_hook=memory.pre_model_hook())
    graph = StateGraph(MessagesState)
    graph.add_node("agent", inner)
    graph.add_edge(START, "agent")
    app = graph.compile(checkpointer=memory.checkpointer())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no UnsavedTurnWarning, nor any other
        run(app, {"messages": [HumanMessage("first")]}, mode)
        run(app, {"messages": [HumanMessage("second")]}, mode)
    assert [text(seen[1:]) for seen in model.seen] == ["first", "first\none\nsecond"]
    assert "Lisbon" in text(model.seen[-1])
    assert_memory_is_the_state(memory, app)


@pytest.mark.parametrize("root", ["memory", "langgraph"])
def test_an_agent_run_from_a_node_saves_through_the_root_or_says_nothing_does(
    tmp_path: Any, root: str
) -> None:
    """An agent with the middleware, invoked from a node function of the user's graph, is a
    subgraph: its turns are the root graph's to save. Under memory's checkpointer they are
    kept once; under LangGraph's own saver nothing saves them, and memory says so, once."""
    from langgraph.graph import START, MessagesState, StateGraph

    memory = memory_on(tmp_path)
    model = strict_model(AIMessage("one"), AIMessage("two"))
    agent = create_agent(model, system_prompt="Be brief.", middleware=[memory.middleware()])

    def call_agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": agent.invoke({"messages": state["messages"]})["messages"]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_agent)
    graph.add_edge(START, "agent")
    saver = memory.checkpointer() if root == "memory" else InMemorySaver()
    app = graph.compile(checkpointer=saver)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app.invoke({"messages": [HumanMessage("first")]}, CONFIG)
        app.invoke({"messages": [HumanMessage("second")]}, CONFIG)
    unsaved = [w for w in caught if issubclass(w.category, UnsavedTurnWarning)]
    if root == "memory":
        assert unsaved == []
        assert_memory_is_the_state(memory, app)
    else:
        assert len(unsaved) == 1 and "subgraph" in str(unsaved[0].message)
        assert memory.get_thread("t") is None  # nothing saved it


# -- 2. the ToolMessage deepagents inserts ---------------------------------------------------------
def malformed_call() -> AIMessage:
    return AIMessage("", invalid_tool_calls=[{
        "name": "ls", "args": '{path: "/"}', "id": "c-bad", "error": "key not quoted",
        "type": "invalid_tool_call",
    }])  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
def test_the_toolmessage_for_a_malformed_call_is_stored_in_its_place(
    tmp_path: Any, shape: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory = memory_on(tmp_path)
    model = strict_model(malformed_call(), AIMessage("second"), AIMessage("third"))
    agent = deepagents.create_deep_agent(
        model, tools=[], system_prompt="Be brief.", **wired(memory, shape)
    )
    with caplog.at_level(logging.WARNING):
        for question in ["first", "again", "more"]:
            run(agent, {"messages": [HumanMessage(question)]}, mode)
    state = state_of(agent)
    assert [m.type for m in state] == ["human", "ai", "tool", "human", "ai", "human", "ai"]
    assert_memory_is_the_state(memory, agent)
    assert "matches no earlier tool call" not in caplog.text  # the call is a call
    # the model saw the call and deepagents' answer to it, as OpenAI and Anthropic take them
    last = model.seen[-1]
    assert [m.type for m in last[1:]] == ["human", "ai", "tool", "human", "ai", "human"]
    assert last[2].invalid_tool_calls and last[3].tool_call_id == "c-bad"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
def test_an_interrupt_left_unanswered_then_a_new_message(
    tmp_path: Any, shape: str, mode: str
) -> None:
    memory = memory_on(tmp_path)
    model = strict_model(calls("ls"), AIMessage("second"), AIMessage("third"))
    agent = deepagents.create_deep_agent(
        model, tools=[], system_prompt="Be brief.", interrupt_on={"ls": True},
        **wired(memory, shape),
    )  # fmt: skip
    run(agent, {"messages": [HumanMessage("list my files")]}, mode)
    assert agent.get_state(CONFIG).interrupts  # waiting for approval
    run(agent, {"messages": [HumanMessage("never mind, hello")]}, mode)
    run(agent, {"messages": [HumanMessage("and again")]}, mode)
    state = state_of(agent)
    assert [m.type for m in state] == ["human", "ai", "tool", "human", "ai", "human", "ai"]
    assert "did not complete" in str(state[2].content)
    assert_memory_is_the_state(memory, agent)


def test_an_insertion_keeps_its_place_when_another_process_reads_the_thread(
    tmp_path: Any,
) -> None:
    """The inserted message is stored between its neighbours (by time), so any reader of the
    thread (another process, the explorer, `get_messages`) sees the state's order."""
    memory = memory_on(tmp_path)
    model = strict_model(malformed_call(), AIMessage("second"))
    agent = deepagents.create_deep_agent(
        model, tools=[], system_prompt="Be brief.", **wired(memory, "checkpointer")
    )
    run(agent, {"messages": [HumanMessage("first")]}, "invoke")
    run(agent, {"messages": [HumanMessage("again")]}, "invoke")
    other = Memory(storage=SQLiteStorage(tmp_path / "memory.db"))
    kept = other.get_messages(thread_id="t")
    assert [m.id for m in kept] == [m.id for m in state_of(agent)]
    stored, total = other.storage.page_messages("t", limit=10)
    assert total == 5 and [s.message.id for s in stored] == [m.id for m in state_of(agent)]
    times = [s.created_at for s in stored]
    assert times == sorted(times) and len(set(times)) == 5


# -- 3. AGENTS.md beside memory --------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", ["middleware", "both"])
def test_agents_md_and_memory_both_reach_the_model(tmp_path: Any, shape: str, mode: str) -> None:
    memory = memory_on(tmp_path)
    model = strict_model(AIMessage("ok"))
    agent = deepagents.create_deep_agent(
        model, tools=[], system_prompt="Be brief.", memory=["/AGENTS.md"],
        **wired(memory, shape),
    )  # fmt: skip
    files = {"/AGENTS.md": create_file_data("Project rule: ANSWER-IN-HAIKU.")}
    run(agent, {"messages": [HumanMessage("hi")], "files": files}, mode)
    system = str(model.seen[-1][0].content)
    assert "ANSWER-IN-HAIKU" in system and "Lisbon" in system
    assert_memory_is_the_state(memory, agent)


def shipped_middleware() -> dict[str, type[AgentMiddleware]]:
    """Every middleware class LangChain (``langchain.agents.middleware``,
    ``langchain_anthropic.middleware``) and deepagents ship."""
    import langchain.agents.middleware as langchain_middleware
    import langchain_anthropic.middleware as anthropic_middleware

    found: dict[str, type[AgentMiddleware]] = {}
    for package in (langchain_middleware, anthropic_middleware, deepagents):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for obj in vars(module).values():
                if (
                    inspect.isclass(obj) and issubclass(obj, AgentMiddleware)
                    and obj is not AgentMiddleware and obj.__module__ == module.__name__
                ):  # fmt: skip
                    found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def name_of(cls: type[AgentMiddleware]) -> str:
    """A middleware's name: an instance's when it builds with no arguments, else the class
    name the default `name` returns."""
    try:
        return cls().name
    except Exception:  # needs arguments: the default name is the class name
        return cls.__name__


def test_no_shipped_middleware_takes_memorys_name() -> None:
    shipped = shipped_middleware()
    assert len(shipped) > 30
    assert "deepagents.middleware.memory.MemoryMiddleware" in shipped  # the one that collided
    names = {qualified: name_of(cls) for qualified, cls in shipped.items()}
    taken = [q for q, n in names.items() if n == NAME or n.startswith("langchain_mastra_memory")]
    assert taken == []
    assert Memory(storage=SQLiteStorage(":memory:")).middleware().name == NAME


def test_memory_beside_every_buildable_shipped_middleware(tmp_path: Any) -> None:
    """create_agent keeps both (it refuses duplicate names), and create_deep_agent keeps its
    whole default stack with memory added."""
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"))
    built = 0
    for cls in shipped_middleware().values():
        try:
            other = cls()
        except Exception:  # needs arguments; its name is checked above
            continue
        agent = create_agent(strict_model(AIMessage("ok")), middleware=[other, memory.middleware()])
        nodes = set(agent.get_graph().nodes)
        assert any(n.startswith(f"{NAME}.") for n in nodes), cls
        built += 1
    assert built >= 5

    def deep_nodes(**kwargs: Any) -> set[str]:
        agent = deepagents.create_deep_agent(
            strict_model(AIMessage("ok")), tools=[], memory=["/AGENTS.md"],
            interrupt_on={"ls": True}, **kwargs,
        )  # fmt: skip
        return set(agent.get_graph().nodes)

    alone, beside = deep_nodes(), deep_nodes(middleware=[memory.middleware()])
    assert alone < beside
    assert all(n.startswith(f"{NAME}.") for n in beside - alone)
    assert any(n.startswith("MemoryMiddleware.") for n in alone)  # deepagents' AGENTS.md one


# -- the summarization budget ----------------------------------------------------------------------
def profiled_model(n: int) -> ProviderStrictChatModel:
    model = strict_model(*[AIMessage(f"Reply {i}: " + "fine " * 30) for i in range(n)])
    model.profile = {"max_input_tokens": 4_000}
    return model


def agent_calls(model: ProviderStrictChatModel) -> list[list[BaseMessage]]:
    """The agent's own model calls (deepagents also asks the model for its summaries)."""
    return [s for s in model.seen if "Be brief." in str(s[0].content)]


@pytest.mark.parametrize("mode", ["invoke", "astream"])
def test_memorys_share_stays_within_the_models_input_budget(tmp_path: Any, mode: str) -> None:
    """deepagents' summarization measures the request before memory's middleware adds its
    blocks; memory bounds its share by the same budget (95% of the profile's 4,000 tokens,
    counted as deepagents counts, tools included), so no call goes over it."""
    memory = memory_on(tmp_path, semantic_recall={"scope": "resource"})
    memory.update_working_memory(
        WORKING + "\n" + "- Likes: long walks by the river\n" * 20, resource_id="alice"
    )
    memory.create_thread(thread_id="old", resource_id="alice")
    memory.save_messages(
        [HumanMessage(f"Garden topic {i}: compost and soil.") for i in range(8)],
        thread_id="old", resource_id="alice",
    )  # fmt: skip
    memory.flush(60)
    model = profiled_model(120)
    agent = deepagents.create_deep_agent(
        model, tools=[], system_prompt="Be brief.", **wired(memory, "both")
    )
    for i in range(30):
        question = f"Tell me about garden topic {i}. " + "compost soil " * 25
        run(agent, {"messages": [HumanMessage(question)]}, mode)
    assert agent.get_state(CONFIG).values.get("_summarization_event"), "no summarization ran"
    sent = agent_calls(model)
    counts = [count_tokens_approximately(s, tools=model.tool_schemas) for s in sent]
    assert max(counts) <= 3_800
    assert "Lisbon" in text(sent[0]) and "Garden topic" in text(sent[0])  # room at first
    assert any("Garden topic" not in text(s) for s in sent)  # then recall gave way
    kept = [str(m.content) for m in memory.get_messages(thread_id="t")]
    assert len([k for k in kept if k.startswith("Tell me")]) == 30  # every turn once


def test_langchains_summarization_middleware_beside_memory_stays_within_budget(
    tmp_path: Any,
) -> None:
    from langchain.agents.middleware import SummarizationMiddleware

    memory = memory_on(tmp_path)
    memory.update_working_memory(WORKING + "\n" + "- Likes: rivers\n" * 60, resource_id="alice")
    model = profiled_model(80)
    summarizer = SummarizationMiddleware(model, trigger=("fraction", 0.8), keep=("messages", 6))
    agent = create_agent(
        model, system_prompt="Be brief.", middleware=[summarizer, memory.middleware()],
        checkpointer=memory.checkpointer(),
    )  # fmt: skip
    for i in range(20):
        agent.invoke({"messages": [HumanMessage(f"Topic {i}. " + "soil " * 120)]}, CONFIG)
    sent = agent_calls(model)
    assert max(count_tokens_approximately(s) for s in sent) <= 3_800
    assert "Lisbon" in text(sent[0])


def test_a_model_without_a_profile_is_not_bounded(tmp_path: Any) -> None:
    memory = memory_on(tmp_path)
    memory.update_working_memory(WORKING + "\n" + "- Likes: rivers\n" * 300, resource_id="alice")
    model = strict_model(AIMessage("ok"))
    agent = create_agent(model, system_prompt="Be brief.", middleware=[memory.middleware()])
    agent.invoke({"messages": [HumanMessage("hi")]}, CONFIG)
    assert "Lisbon" in text(model.seen[-1])


def test_within_budget_gives_way_in_order_and_never_drops_what_it_was_given() -> None:
    from langchain_core.messages import SystemMessage

    from langchain_mastra_memory.integrations.middleware import within_budget
    from langchain_mastra_memory.messages import tag

    working = tag(SystemMessage("working " * 100), "working_memory")
    log = tag(SystemMessage("observed " * 100), "observations")
    question = HumanMessage("old question " * 50, id="o1")
    call = calls("ls")
    result = ToolMessage("listing " * 50, tool_call_id="c-ls", id="o3")
    recalled = tag(HumanMessage("recalled " * 100), "semantic_recall")
    given = [HumanMessage("summary " * 100, id="s"), HumanMessage("now?", id="n")]
    context = [working, log, question, call, result, given[0], recalled, given[1]]

    def kept(budget: int) -> list[str]:
        out = within_budget(context, given, budget=budget, fixed=0)
        return [str(m.content).split(" ")[0] or m.type for m in out]

    def size(*messages: BaseMessage) -> int:
        return count_tokens_approximately(messages)

    every = size(*context)
    assert kept(every) == ["working", "observed", "old", "ai", "listing", "summary",
                           "recalled", "now?"]  # fmt: skip
    without_recall = every - size(recalled)
    assert kept(every - 1) == kept(without_recall) == [
        "working", "observed", "old", "ai", "listing", "summary", "now?"]  # fmt: skip
    without_question = without_recall - size(question)
    assert kept(without_recall - 1) == kept(without_question) == [
        "working", "observed", "ai", "listing", "summary", "now?"]  # fmt: skip
    without_history = without_question - size(call, result)  # a call goes with its result
    assert kept(without_question - 1) == ["working", "observed", "summary", "now?"]
    assert kept(without_history - 1) == ["working", "summary", "now?"]  # observations next
    assert kept(0) == ["summary", "now?"]  # what it was given is never dropped


# -- 4. the test model's rules, checked against the providers' own conversions --------------------
def openai_pairs_calls(messages: list[BaseMessage]) -> bool:
    """Whether langchain-openai sends every tool result right after an assistant message
    whose ``tool_calls`` hold its id with a function name, and every call is answered."""
    from langchain_openai.chat_models.base import _convert_message_to_dict

    sent = [_convert_message_to_dict(m) for m in messages]
    open_calls: set[str] = set()
    for item in sent:
        if item["role"] == "tool":
            if item["tool_call_id"] not in open_calls:
                return False
            open_calls.discard(item["tool_call_id"])
            continue
        if open_calls:
            return False
        calls = item.get("tool_calls") or []
        if not all(c["function"]["name"] for c in calls):
            return False
        open_calls = {c["id"] for c in calls}
    return not open_calls


def anthropic_pairs_calls(messages: list[BaseMessage]) -> bool:
    """Whether langchain-anthropic sends every ``tool_result`` after the ``tool_use`` it
    answers (in the assistant turn right before) and every ``tool_use`` is answered."""
    from langchain_anthropic.chat_models import _format_messages

    _, sent = _format_messages(messages, model="claude-sonnet-4-5")
    open_calls: set[str] = set()
    for item in sent:
        blocks = item["content"] if isinstance(item["content"], list) else []
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        if item["role"] == "user":
            if not results <= open_calls or open_calls - results:
                return False
            open_calls = set()
        else:
            if open_calls:
                return False
            open_calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    return not open_calls


def invalid_call(name: str | None, call_id: str = "c-bad") -> AIMessage:
    return AIMessage("", invalid_tool_calls=[{"name": name, "args": '{path: "/"}',
                                              "id": call_id, "error": "not JSON",
                                              "type": "invalid_tool_call"}])  # fmt: skip


def answer(call_id: str = "c-bad") -> ToolMessage:
    return ToolMessage("could not be executed", tool_call_id=call_id, name="ls", status="error")


@pytest.mark.parametrize(
    ("messages", "accepted"),
    [
        ([HumanMessage("a"), invalid_call("ls"), answer(), HumanMessage("b")], True),
        ([HumanMessage("a"), invalid_call("ls"), HumanMessage("b")], False),  # unanswered
        ([HumanMessage("a"), invalid_call(None), answer(), HumanMessage("b")], False),
        (
            [
                HumanMessage("a"),
                calls("ls"),
                answer("c-ls"),
                invalid_call("ls"),
                answer(),
                HumanMessage("b"),
            ],
            True,
        ),
        ([HumanMessage("a"), answer(), HumanMessage("b")], False),  # an orphan result
    ],
    ids=["named-answered", "named-unanswered", "nameless", "after-a-call", "orphan"],
)
def test_the_strict_model_accepts_what_both_providers_send_as_pairs(
    messages: list[BaseMessage], accepted: bool
) -> None:
    from langchain_mastra_memory.provider_rules import provider_violations, repair_history

    assert (openai_pairs_calls(messages) and anthropic_pairs_calls(messages)) is accepted
    assert (provider_violations(messages) == []) is accepted
    repaired = repair_history(messages)  # what memory sends of such a remembered history
    assert provider_violations(repaired) == []
    assert openai_pairs_calls(repaired) and anthropic_pairs_calls(repaired)


# -- every backend, and a second tenant ------------------------------------------------------------
@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_an_insertion_is_stored_in_its_place_on_every_backend(storage: Any, mode: str) -> None:
    """SQLite (file and in-process) and PostgreSQL, with the checkpointer's default saver on
    each: the patch ToolMessage lands between the call and the next question, by time."""
    memory = Memory(storage=storage)
    model = strict_model(malformed_call(), AIMessage("second"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an in-process SQLite's checkpoints are volatile
        agent = deepagents.create_deep_agent(
            model, tools=[], system_prompt="Be brief.", checkpointer=memory.checkpointer()
        )
    run(agent, {"messages": [HumanMessage("first")]}, mode)
    run(agent, {"messages": [HumanMessage("again")]}, mode)
    assert_memory_is_the_state(memory, agent)
    stored, total = storage.page_messages("t", limit=10)
    assert total == 5 and [s.message.type for s in stored][2] == "tool"
    times = [s.created_at for s in stored]
    assert times == sorted(times) and len(set(times)) == 5


def test_a_subagent_reads_only_its_own_users_memory(tmp_path: Any) -> None:
    """Two users, one agent: bob's sub-agent is given bob's memory, none of alice's, and each
    thread holds its own user's turn."""
    memory = memory_on(tmp_path)  # alice's working memory says Lisbon
    memory.update_working_memory("# User\n- Name: Bob\n- City: Oslo", resource_id="bob")
    model = strict_model(*[m for _ in range(2) for m in subagent_script().responses])
    subagent = {"name": "helper", "description": "Lists files.", "system_prompt": "Help.",
                "middleware": [memory.middleware()]}  # fmt: skip
    agent = deepagents.create_deep_agent(
        model, tools=[], system_prompt="Be brief.", subagents=[subagent], **wired(memory, "both")
    )
    bob = {"configurable": {"thread_id": "b", "user_id": "bob"}}
    run(agent, {"messages": [HumanMessage("What is in my folder?")]}, "invoke")
    run(agent, {"messages": [HumanMessage("What is in my folder, please?")]}, "invoke", bob)
    bobs = [s for s in model.seen[4:] if "List the files, then report." in text(s)]
    assert len(bobs) == 2
    assert all("Oslo" in text(s) and "Lisbon" not in text(s) for s in bobs)
    assert [t.id for t in memory.list_threads(resource_id="bob")] == ["b"]
    assert str(memory.get_messages(thread_id="b")[0].content) == "What is in my folder, please?"
    assert NOTE not in text(memory.get_messages(thread_id="b"))
