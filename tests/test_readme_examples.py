"""The README's examples and the integration pages' run as written, with `ChatOpenAI(...)`
swapped for a scripted model that refuses any input OpenAI or Anthropic would refuse."""

from __future__ import annotations

import json
import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest
from helpers import scripted
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from printed import PROMISE, run_checking_prints

from langchain_mastra_memory.observational.prompts import (
    OBSERVER_INSTRUCTIONS,
    REFLECTOR_INSTRUCTIONS,
)
from langchain_mastra_memory.testing import ProviderStrictChatModel

README = Path(__file__).resolve().parents[1] / "README.md"
MODEL = 'ChatOpenAI(model="gpt-4o-mini")'
WM_CALL = AIMessage(
    "",
    tool_calls=[
        {
            "name": "update_working_memory",
            "args": {
                "memory": "# User Information\n- **First Name**: Alice\n- **Location**: Lisbon"
            },
            "id": "w1",
        }
    ],
)


DOCS = README.parent / "docs" / "integrations"


def examples() -> dict[str, str]:
    """The python blocks of the integration pages (one page per shape, its title the first
    line) that use a chat model: the first by page title, any further one as "title,
    example N"."""
    found = {}
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text()
        title = text.splitlines()[0].removeprefix("# ").strip()
        blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if MODEL in b]
        for number, block in enumerate(blocks, start=1):
            found[title if number == 1 else f"{title}, example {number}"] = block
    return found


def readme_examples() -> dict[str, str]:
    """The README's one example per shape (every python block), by heading."""
    section = README.read_text().split("## One example per shape", 1)[1].split("\n## ", 1)[0]
    return {
        part.splitlines()[0].strip(): block
        for part in section.split("\n### ")[1:]
        for block in re.findall(r"```python\n(.*?)```", part, flags=re.S)
    }


SCRIPTS = {
    "LCEL: memory around a chain": [
        AIMessage("Lisbon is lovely."),
        AIMessage("You live in Lisbon."),
    ],
    "LangGraph: the checkpointer adapter and the pre-model hook": [
        WM_CALL,
        AIMessage("Noted."),
        AIMessage("You moved to Lisbon in March."),
    ],
    "LangChain agents: middleware": [WM_CALL, AIMessage("Hi Alice!"), AIMessage("In Lisbon.")],
    "Deep agents": [WM_CALL, AIMessage("Noted."), AIMessage("You moved to Lisbon in March.")],
    "Deep agents, example 2": [
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "task",
                    "id": "t1",
                    "args": {
                        "description": "Find what the notes say about the garden.",
                        "subagent_type": "researcher",
                    },
                }
            ],
        ),
        AIMessage("The notes say: tomatoes on the balcony."),
        AIMessage("Tomatoes, on the balcony."),
    ],
    "LangGraph Server": [WM_CALL, AIMessage("Hi Alice!")],
    "The agent tool": [WM_CALL, AIMessage("Nice to meet you, Ada.")],
    "The recall tool: the model searches its own past": [
        AIMessage("A fine name."),
        AIMessage(
            "", tool_calls=[{"name": "search_memory", "args": {"query": "boat name"}, "id": "s1"}]
        ),
        AIMessage("It is called Albatross."),
    ],
    "A retriever: `memory.as_retriever()`": [AIMessage("Tomatoes, on the balcony.")],
    "LangGraph's store: `memory.store()`": [
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "manage_memory",
                    "args": {"content": "User is allergic to peanuts", "action": "create"},
                    "id": "m1",
                }
            ],
        ),
        AIMessage("Noted."),
    ],
}
STORE = "LangGraph's store: `memory.store()`"


def test_every_integration_example_is_covered() -> None:
    assert set(examples()) == set(SCRIPTS)


@pytest.mark.parametrize("title", sorted(SCRIPTS))
def test_readme_example_runs_as_written(title: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the examples write memory.db in the current directory
    model = scripted(*SCRIPTS[title])
    code = examples()[title].replace(MODEL, "__model__")
    module = types.ModuleType("readme_example")  # dataclasses look their module up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    namespace["__model__"] = model
    if title == "LangGraph Server":  # the server's module reads its Memory from the environment
        monkeypatch.setenv("LMM_DB", str(tmp_path / "server.db"))  # as the page's command
        monkeypatch.setenv("LMM_OPTIONS", '{"working_memory": {"enabled": true}}')
        monkeypatch.delitem(sys.modules, "langchain_mastra_memory.langgraph_server", raising=False)
        namespace["__name__"] = "__main__"  # its local check runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # create_react_agent's move notice
        run_checking_prints(code, f"docs: {title}", namespace)
    assert len(model.seen) == len(SCRIPTS[title])  # every scripted reply was asked for
    memory = namespace["memory"]
    if title == STORE:  # a store example: its items, not threads
        store = namespace["store"]
        assert store.get(("alice", "notes"), "last").value == {"content": "I live in Lisbon."}
        found = store.search(("memories", "alice"), query="what can't I eat?")
        assert found[0].value["content"] == "User is allergic to peanuts"
        assert "Lisbon" in memory.get_working_memory(resource_id="alice")
        return
    threads = memory.list_threads()
    assert threads and all(memory.get_messages(thread_id=t.id) for t in threads)
    if title.startswith("A retriever"):  # the model was shown what the retriever found
        assert "I grow tomatoes on the balcony" in model.seen[-1][0].content
        return
    if title.startswith("The recall tool"):  # the search found the boat in the other thread
        tool_reply = [m for m in model.seen[-1] if m.type == "tool"][-1]
        assert "Our sailboat is called Albatross." in tool_reply.content
        return
    if WM_CALL in SCRIPTS[title]:
        owner = next(t.resource_id for t in threads)
        assert "Lisbon" in memory.get_working_memory(resource_id=owner)
    if title == "LangGraph Server":  # the turn is the caller identity's
        assert [t.resource_id for t in threads] == ["alice"]
    if title == "Deep agents":  # the second thread's model input held what was learnt
        assert "Lisbon" in str(model.seen[-1])
        assert len(memory.get_messages(thread_id="week-1")) == 4  # each once, by both shapes
    if title == "Deep agents, example 2":  # AGENTS.md beside memory; the sub-agent's turns
        assert "Answer in one sentence." in str(model.seen[0][0].content)  # not stored
        kept = memory.get_messages(thread_id="t1")
        assert [m.type for m in kept] == ["human", "ai", "tool", "ai"]
        assert "Find what the notes say" not in " ".join(str(m.content) for m in kept)


README_SCRIPTS = {
    "LangGraph: a checkpointer and a pre-model hook": [
        WM_CALL,
        AIMessage("Noted."),
        AIMessage("You moved to Lisbon in March."),
    ],
    "LangChain agents: middleware and tools": [WM_CALL, AIMessage("Hi Alice!")],
    "LCEL: memory around a chain": [AIMessage("Lisbon is lovely.")],
    "A chat history, a retriever and LangGraph's store": [],
}


def test_every_readme_example_is_covered() -> None:
    assert set(readme_examples()) == set(README_SCRIPTS)
    assert len(README.read_text().splitlines()) <= 250


@pytest.mark.parametrize("title", sorted(README_SCRIPTS))
def test_the_readme_example_runs_as_written(
    title: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)  # Memory() writes memory.db in the current directory
    model = scripted(*README_SCRIPTS[title])
    module = types.ModuleType("readme_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    module.__dict__["__model__"] = model
    code = readme_examples()[title].replace(MODEL, "__model__")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        run_checking_prints(code, f"README: {title}", module.__dict__)
    assert len(model.seen) == len(README_SCRIPTS[title])  # every scripted reply was asked for
    memory = module.__dict__["memory"]
    threads = memory.list_threads()
    assert threads and all(memory.get_messages(thread_id=t.id) for t in threads)
    if README_SCRIPTS[title] and README_SCRIPTS[title][0] is WM_CALL:
        assert "Lisbon" in memory.get_working_memory(resource_id="alice")
    if title.startswith("A chat history"):  # what the retriever and the store printed
        printed = capsys.readouterr().out
        assert "I grow tomatoes on the balcony." in printed and "peanuts" in printed
    if title.startswith("LangGraph"):  # the second thread's model input held what was learnt
        assert "Lisbon" in str(model.seen[-1])


class PageModel(ProviderStrictChatModel):
    """The one scripted model of a feature page, in each role the page gives it (a page's
    `ChatOpenAI(...)`s are all this one): as the Observer it notes each user line of the
    transcript it is sent (and a mood, when the prompt asks for one); asked for structured
    values, the trip those lines name; as the Reflector, the log as it is; else `REPLY`."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.accept(messages)
        system = str(messages[0].content) if messages[0].type == "system" else ""
        asked = "\n".join(_text(m) for m in messages[1:])
        said = re.findall(r"^\[[^\]]*\buser\b[^\]]*\] (.+)$", asked, flags=re.M)
        if _text(messages[-1]).startswith("Extract structured data"):
            to = re.search(r"\bto ([A-Z]\w+)", " ".join(said))
            trip = {"destination": to and to.group(1), "travellers": 2 if "and I" in asked else 1}
            content = f"```json\n{json.dumps({'trip': trip})}\n```"
        elif system.startswith(OBSERVER_INSTRUCTIONS[:80]):
            notes = "".join(f"- [high] The user said: {line}\n" for line in said)
            content = f"<observations>\nDate: 2026-11-28\n{notes}</observations>"
            content += "\n<mood>\nthrilled\n</mood>" if "<mood>" in asked else ""
        elif system.startswith(REFLECTOR_INSTRUCTIONS[:80]):
            content = asked
        else:
            content = REPLY
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content))])


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text")


REPLY = "Lisbon is a city of hills and light."
PAGES = ["getting-started.md", "storage.md", "working-memory.md", "semantic-recall.md", "observational-memory.md",
         "processors.md", "context-layout.md", "mastra-store.md"]  # fmt: skip
# pages whose blocks need servers the suite starts: run there, on them
RUN_WITH_SERVERS = {"deployment.md": "tests/test_postgres_failover.py"}
ANY_MODEL = re.compile(r'ChatOpenAI\(model="[^"]+"\)')


@pytest.mark.parametrize("page", PAGES)
def test_every_block_of_a_feature_page_runs(page: str, tmp_path: Path, monkeypatch) -> None:
    """A feature page's python blocks, in order, in one namespace (a page reads as one
    session), with any chat model a provider-strict scripted one."""
    monkeypatch.chdir(tmp_path)
    text = (README.parent / "docs" / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    module = types.ModuleType("docs_page")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    module.__dict__["__model__"] = PageModel(responses=[AIMessage(REPLY)], seen=[])
    for number, block in enumerate(blocks):
        code = ANY_MODEL.sub("__model__", block)
        run_checking_prints(code, f"docs/{page} block {number + 1}", module.__dict__)
    assert "memory" in module.__dict__ or "limiter" in module.__dict__


def test_every_python_block_of_the_site_is_run_by_a_test() -> None:
    docs = README.parent / "docs"
    with_code = {
        p.relative_to(docs).as_posix() for p in docs.rglob("*.md") if "```python" in p.read_text()
    }
    integration_pages = {f"integrations/{p.name}" for p in DOCS.glob("*.md")}
    assert with_code <= set(PAGES) | integration_pages | set(RUN_WITH_SERVERS)
    for page in with_code & integration_pages:  # each of these pages' examples runs
        blocks = re.findall(r"```python\n(.*?)```", (docs / page).read_text(), flags=re.S)
        assert blocks and all(MODEL in block for block in blocks), page


def test_a_comment_on_a_print_line_is_a_promise_the_tests_keep() -> None:
    """A ``print(...)`` line of the site or the README says what it prints only as a
    ``# prints:`` promise (which the runs above check), never in words nobody checks."""
    pages = [README, *(README.parent / "docs").rglob("*.md")]
    loose, promised = [], 0
    for page in pages:
        for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S):
            for line in block.splitlines():
                if "print(" in line and "#" in line.split("print(", 1)[1]:
                    promised += bool(PROMISE.search(line))
                    loose += [] if PROMISE.search(line) else [f"{page.name}: {line.strip()}"]
    assert loose == []
    assert promised >= 8
