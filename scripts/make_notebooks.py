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
    "04_observational_memory.ipynb": [
        new_markdown_cell(
            "# Observational memory\n\nAn Observer model compresses the messages not yet observed into a dated log, a Reflector condenses the log, and the turn sees the log (one leading system block) plus the messages it does not cover yet. Buffering runs the Observer ahead of the threshold in a worker thread; at the threshold the buffered observations are activated without a model call.\n\nThresholds here are tiny (200 / 2,000 tokens) so a short conversation shows every stage; Mastra's defaults are 30,000 / 40,000."
        ),
        new_code_cell(MODEL_CELL),
        new_code_cell(r'''import re

from langchain_core.language_models.fake_chat_models import FakeListChatModel


class ScriptedObserver(FakeListChatModel):
    """Offline Observer and Reflector: one high-priority line per thing the user said."""

    responses: list = ["unused"]

    def _call(self, messages, *args, **kwargs):
        said = re.findall(r"user\] (.*)", messages[-1].content)
        lines = [f"- [high] User said: {line}" for line in said] or ["- [low] small talk"]
        return "Date: 2026-11-22\n" + "\n".join(lines)


def observer_model():
    if OFFLINE:
        return ScriptedObserver()
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="gpt-4o-mini", temperature=0)'''),
        new_code_cell(r"""from langchain_mastra_memory import Memory, SQLiteStorage

memory = Memory(
    storage=SQLiteStorage(":memory:"),
    options={
        "observational_memory": {
            "model": observer_model(),
            "message_tokens": 200,       # put observations into the log past 200 unobserved tokens
            "observation_tokens": 2_000,  # condense the log past 2,000
            "buffer_tokens": 0.25,        # observe ahead every 50 new tokens, in a worker thread
        }
    },
)
facts = [
    "I moved to Lisbon in March.",
    "My daughter Ines starts school in September.",
    "I'm allergic to peanuts, so no satay please.",
    "I'm training for the Porto half marathon in October.",
    "My partner Joao is a pastry chef.",
    "We are thinking of adopting a beagle.",
]
replies = [AIMessage(f"Noted: {fact.lower()}") for fact in facts] + [AIMessage("You live in Lisbon.")]
model = chat_model(*replies)
chat = memory.wrap(model)
config = {"configurable": {"thread_id": "t1", "resource_id": "ada"}}
for fact in facts:
    chat.invoke(f"{fact} Could you keep that in mind while we plan the next few weeks together?", config)
    memory.flush()  # wait for the Observer here so the notebook is repeatable"""),
        new_code_cell(r"""from langchain_mastra_memory.storage.sql.observations import scope_key

key = scope_key("thread", resource_id="ada", thread_id="t1")
for group in memory.storage.observation_log(key, buffered=True):
    state = "in the log" if group.active else "buffered"
    print(f"{state}: covers {len(group.message_ids)} messages ({group.message_tokens:.0f} tokens)")
    print(group.text, "\n")"""),
        new_code_cell(r"""answer = chat.invoke("Where do I live again?", config)
sent = model.seen[-1] if OFFLINE else memory.context("Where do I live again?", thread_id="t1", resource_id="ada")
print(type(sent[0]).__name__, "|", sent[0].content[:400], "...")
print(len(sent) - 2, "raw messages not observed yet, then the question")
print(answer.content)
if OFFLINE:
    assert type(sent[0]).__name__ == "SystemMessage" and "Lisbon" in sent[0].content  # the log
    assert all(not m.content.startswith("I moved to Lisbon") for m in sent[1:])  # observed: not raw"""),
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
