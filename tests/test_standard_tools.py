"""LangChain's standard tool suites (`langchain-tests`), bodies unchanged, over the working-memory
tool and the recall tool (the retriever's suite is in test_retriever.py)."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from langchain_mastra_memory import Memory, SQLiteStorage


def memory_with_a_past() -> Memory:
    memory = Memory(storage=SQLiteStorage(":memory:"),
                    options={"working_memory": {"enabled": True}})  # fmt: skip
    memory.create_thread(thread_id="t1", resource_id="alice", title="Pets")
    memory.save_messages([HumanMessage("my cat is called Tom")], thread_id="t1",
                         resource_id="alice")  # fmt: skip
    return memory


class WorkingMemoryTool:
    @property
    def tool_constructor(self) -> BaseTool:
        return memory_with_a_past().working_memory_tool(resource_id="alice", thread_id="t1")

    @property
    def tool_invoke_params_example(self) -> dict:
        return {"memory": "# User\n- **Name**: Alice\n- **Pets**: a cat, Tom"}


class RecallTool:
    @property
    def tool_constructor(self) -> BaseTool:
        return memory_with_a_past().recall_tool(resource_id="alice")

    @property
    def tool_invoke_params_example(self) -> dict:
        return {"query": "what is my cat called?", "mode": "keyword"}


class TestWorkingMemoryToolUnit(WorkingMemoryTool, ToolsUnitTests):
    pass


class TestWorkingMemoryToolIntegration(WorkingMemoryTool, ToolsIntegrationTests):
    pass


class TestRecallToolUnit(RecallTool, ToolsUnitTests):
    pass


class TestRecallToolIntegration(RecallTool, ToolsIntegrationTests):
    pass
