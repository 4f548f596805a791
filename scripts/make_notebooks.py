"""Write the notebooks in notebooks/ (outputs stripped). Run after editing the cells here."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

OUT = Path(__file__).resolve().parents[1] / "notebooks"

MODEL_CELL = '''import os

from langchain_core.messages import AIMessage

from langchain_mastra_memory.testing import strict_model

OFFLINE = not os.environ.get("OPENAI_API_KEY")


def chat_model(*script):
    """Offline: a scripted model that refuses any input OpenAI or Anthropic would refuse."""
    if OFFLINE:
        return strict_model(*script)
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="gpt-4o-mini", temperature=0)


print("offline, scripted model" if OFFLINE else "using ChatOpenAI")'''

NOTEBOOKS = {
    "01_lcel_chain_with_memory.ipynb": [
        new_markdown_cell(
            "# An LCEL chain with memory\n\n`memory.wrap(chain)` assembles the context (working memory, recall, history), calls the chain, and saves the turn. Runs offline with a scripted model, or with `ChatOpenAI` when `OPENAI_API_KEY` is set."
        ),
        new_code_cell(MODEL_CELL),
        new_code_cell("""from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from langchain_mastra_memory import Memory, SQLiteStorage, TokenLimiter, ToolCallFilter

memory = Memory(
    storage=SQLiteStorage(":memory:"),
    options={"last_messages": 20},
    processors=[ToolCallFilter(), TokenLimiter(8_000)],
)
prompt = ChatPromptTemplate.from_messages([("system", "You are a {tone} assistant."), MessagesPlaceholder("messages")])
model = chat_model(AIMessage("Nice to meet you, Ada!"), AIMessage("Your name is Ada."))
chat = memory.wrap(prompt | model)  # gets {"tone": ..., "messages": [memory's context]}
config = {"configurable": {"thread_id": "lcel-demo", "resource_id": "ada"}}"""),
        new_code_cell("""print(chat.invoke({"input": "Hi, I'm Ada.", "tone": "concise"}, config).content)
answer = chat.invoke({"input": "What's my name?", "tone": "concise"}, config).content
print(answer)"""),
        new_code_cell('''stored = memory.get_messages(thread_id="lcel-demo")
for message in stored:
    print(f"{message.type:>5}: {message.content}")
assert len(stored) == 4
if OFFLINE:
    assert answer == "Your name is Ada."'''),
    ],
    "02_langgraph_agent_with_memory.ipynb": [
        new_markdown_cell(
            "# A LangGraph agent with memory and the checkpointer\n\n`memory.checkpointer()` stores checkpoints (SQLite by default) and mirrors each thread's messages into memory; `memory.pre_model_hook()` builds the model's input (working memory, semantic recall, processors) without rewriting the graph state."
        ),
        new_code_cell(MODEL_CELL),
        new_code_cell("""import tempfile
import warnings
from pathlib import Path

from langchain_core.messages import HumanMessage
from langgraph.prebuilt import create_react_agent

from langchain_mastra_memory import Memory, SQLiteStorage

workdir = Path(tempfile.mkdtemp())
memory = Memory(
    storage=SQLiteStorage(workdir / "memory.db"),
    options={"semantic_recall": {"top_k": 3, "message_range": 1}},
)
model = chat_model(AIMessage("Lisbon is lovely in spring."), AIMessage("You mentioned you moved to Lisbon."))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    agent = create_react_agent(model, [], pre_model_hook=memory.pre_model_hook(), checkpointer=memory.checkpointer())"""),
        new_code_cell("""def ask(text, thread):
    config = {"configurable": {"thread_id": thread, "resource_id": "ada"}}
    return agent.invoke({"messages": [HumanMessage(text)]}, config)["messages"][-1].content

print(ask("I moved to Lisbon in March.", "week-1"))
print(ask("Where did I say I moved?", "week-2"))  # a new thread: semantic recall finds week 1"""),
        new_code_cell("""print(sorted(t.id for t in memory.list_threads(resource_id="ada")))
# What a third thread would send to the model (as_runnable builds it without saving anything):
config = {"configurable": {"thread_id": "week-3", "resource_id": "ada"}}
context = memory.as_runnable().invoke({"input": "Which city do I live in now?"}, config)
print(context[0].content)
assert "I moved to Lisbon in March." in context[0].content"""),
    ],
    "03_working_memory_tool.ipynb": [
        new_markdown_cell(
            "# Working memory as an agent tool\n\nThe model keeps a notepad about the user with the `update_working_memory` tool; every thread of the same user sees it in its system message."
        ),
        new_code_cell(MODEL_CELL),
        new_code_cell("""import warnings

from langchain_core.messages import HumanMessage
from langgraph.prebuilt import create_react_agent

from langchain_mastra_memory import Memory, SQLiteStorage

memory = Memory(storage=SQLiteStorage(":memory:"), options={"working_memory": {"enabled": True}})
tool = memory.working_memory_tool()
update = AIMessage("", tool_calls=[{"name": "update_working_memory", "id": "w1",
                                    "args": {"memory": "# User Information\\n- **First Name**: Ada\\n- **Location**: Lisbon"}}])
model = chat_model(update, AIMessage("Got it, Ada."), AIMessage("You live in Lisbon."))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    agent = create_react_agent(model, [tool], pre_model_hook=memory.pre_model_hook(), checkpointer=memory.checkpointer())"""),
        new_code_cell("""for thread, text in [("t1", "I'm Ada and I live in Lisbon."), ("t2", "Where do I live?")]:
    config = {"configurable": {"thread_id": thread, "resource_id": "ada"}}
    print(agent.invoke({"messages": [HumanMessage(text)]}, config)["messages"][-1].content)
notes = memory.get_working_memory(resource_id="ada")
print(notes)
if OFFLINE:
    assert "Lisbon" in notes"""),
    ],
}

if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS.items():
        nb = new_notebook(
            cells=cells,
            metadata={
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
            },
        )
        nbformat.write(nb, OUT / name)
        print("wrote", OUT / name)
