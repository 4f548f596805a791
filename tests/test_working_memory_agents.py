"""The working-memory tool in real agent loops (scripted tool-calling model)."""

from __future__ import annotations

import warnings

from helpers import scripted
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from langchain_mastra_memory import Memory, WorkingMemory

FACT_CALL = AIMessage(
    "",
    tool_calls=[
        {
            "name": "update_working_memory",
            "args": {"memory": "# User Information\n- **First Name**: Ada\n- **Location**: Lisbon"},
            "id": "w1",
        }
    ],
)


def config(thread: str, resource: str) -> dict:
    return {"configurable": {"thread_id": thread, "resource_id": resource}}


def memory_for(storage) -> Memory:
    return Memory(storage=storage, options={"working_memory": {"enabled": True}})


def test_tool_node_passes_the_graph_config(storage) -> None:
    memory = memory_for(storage)
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([memory.working_memory_tool()]))
    graph.add_edge(START, "tools")
    out = graph.compile().invoke({"messages": [FACT_CALL]}, config("t1", "alice"))
    assert out["messages"][-1].status == "success"
    assert "Lisbon" in memory.get_working_memory(resource_id="alice")


def react_agent(memory: Memory, model):
    from langgraph.prebuilt import create_react_agent

    wm = WorkingMemory(memory.storage)
    prompt = RunnableLambda(lambda state, config: wm.invoke(state["messages"], config))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # create_react_agent moved to langchain
        return create_react_agent(model, [memory.working_memory_tool()], prompt=prompt)


def test_react_agent_stores_a_fact_that_a_new_thread_sees(storage) -> None:
    memory = memory_for(storage)
    model = scripted(
        FACT_CALL, AIMessage("Nice to meet you, Ada."), AIMessage("You live in Lisbon.")
    )
    agent = react_agent(memory, model)
    agent.invoke({"messages": [HumanMessage("I'm Ada, I live in Lisbon")]}, config("t1", "alice"))
    agent.invoke({"messages": [HumanMessage("Where do I live?")]}, config("t2", "alice"))
    first_prompt, _, new_thread_prompt = model.seen
    assert "Lisbon" not in first_prompt[0].content  # nothing known yet
    assert isinstance(new_thread_prompt[0], SystemMessage)
    assert "- **Location**: Lisbon" in new_thread_prompt[0].content
    assert [m.content for m in new_thread_prompt[1:]] == ["Where do I live?"]  # a fresh thread


def test_another_resource_never_sees_the_fact(storage) -> None:
    memory = memory_for(storage)
    model = scripted(FACT_CALL, AIMessage("Noted."), AIMessage("I don't know."))
    agent = react_agent(memory, model)
    agent.invoke({"messages": [HumanMessage("I'm Ada")]}, config("t1", "alice"))
    agent.invoke({"messages": [HumanMessage("Where do I live?")]}, config("t9", "mallory"))
    assert "Lisbon" not in model.seen[-1][0].content


async def test_create_agent_with_middleware_async(storage) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelRequest, dynamic_prompt

    memory = memory_for(storage)

    @dynamic_prompt
    async def working_memory_prompt(request: ModelRequest) -> str:
        resource = request.runtime.context["resource_id"]
        data = await memory.aget_working_memory(resource_id=resource)
        return WorkingMemory(memory.storage).message(data).content

    model = scripted(FACT_CALL, AIMessage("Noted."), AIMessage("Lisbon."))
    tool = memory.working_memory_tool()
    agent = create_agent(model, [tool], middleware=[working_memory_prompt], context_schema=dict)
    ctx = {"resource_id": "alice"}
    await agent.ainvoke({"messages": [HumanMessage("I'm Ada")]}, config("t1", "alice"), context=ctx)
    await agent.ainvoke({"messages": [HumanMessage("Where?")]}, config("t2", "alice"), context=ctx)
    assert "Lisbon" in model.seen[-1][0].content
    assert "Lisbon" in await memory.aget_working_memory(resource_id="alice")
