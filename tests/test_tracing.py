"""What memory did, in the trace (issue 53): under each shape's run, a ``memory`` run holding
the working-memory read and recall as a ``retriever`` run whose output is the recalled messages
as Documents; the user's processors inside it; nothing of another resource; a tracer that
raises never breaks the turn; OpenTelemetry spans when a tracer provider is configured."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from helpers import scripted
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run

from langchain_mastra_memory import Memory, SQLiteStorage, ToolCallFilter
from langchain_mastra_memory.testing import RecordingTracer

SECRET = "My locker code at the gym is QX-locker-77."


class Raising(BaseTracer):
    raise_error: bool = True

    def _persist_run(self, run: Run) -> None:
        pass

    def _on_retriever_start(self, run: Run) -> None:
        raise RuntimeError("the tracer is down")

    def _on_chain_start(self, run: Run) -> None:
        if run.name in ("memory", "working_memory"):
            raise RuntimeError("the tracer is down")


def memory_with_history(path: Path) -> Memory:
    memory = Memory(
        storage=SQLiteStorage(path),
        options={"working_memory": {"enabled": True},
                 "semantic_recall": {"top_k": 2, "message_range": 0}},
        processors=[ToolCallFilter()],
    )  # fmt: skip
    for resource, text in (("alice", SECRET), ("bob", "My bike is blue.")):
        memory.create_thread(thread_id=f"{resource}-old", resource_id=resource)
        memory.save_messages([HumanMessage(text), AIMessage("Noted.")],
                             thread_id=f"{resource}-old", resource_id=resource)  # fmt: skip
    memory.update_working_memory("# User\n- Name: Alice", resource_id="alice")
    memory.flush()
    return memory


def cfg(thread: str, resource: str, tracer: BaseTracer) -> dict:
    return {"configurable": {"thread_id": thread, "resource_id": resource}, "callbacks": [tracer]}


def hook_shape(memory: Memory, question: str, config: dict) -> None:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(
            scripted(AIMessage("ok")), [], pre_model_hook=memory.pre_model_hook(),
            checkpointer=memory.checkpointer(),
        )  # fmt: skip
    agent.invoke({"messages": [("user", question)]}, config)


def middleware_shape(memory: Memory, question: str, config: dict) -> None:
    from langchain.agents import create_agent

    agent = create_agent(scripted(AIMessage("ok")), tools=[], middleware=[memory.middleware()])
    agent.invoke({"messages": [("user", question)]}, config)


def lcel_shape(memory: Memory, question: str, config: dict) -> None:
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("messages")])
    memory.wrap(prompt | scripted(AIMessage("ok"))).invoke({"input": question}, config)


def runnable_shape(memory: Memory, question: str, config: dict) -> None:
    memory.as_runnable().invoke({"input": question}, config)


SHAPES = {"hook": hook_shape, "middleware": middleware_shape, "lcel": lcel_shape,
          "as_runnable": runnable_shape}  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_shows_recall_and_working_memory_under_the_memory_run(
    shape: str, tmp_path: Path
) -> None:
    memory = memory_with_history(tmp_path / "m.db")
    tracer = RecordingTracer()
    SHAPES[shape](memory, "What is my locker code?", cfg("alice-new", "alice", tracer))
    (run,) = tracer.named("memory")
    assert run.metadata["thread_id"] == "alice-new" and run.metadata["resource_id"] == "alice"
    children = {child.name: child for child in run.child_runs}
    assert {"working_memory", "ToolCallFilter"} <= set(children)
    assert "Name: Alice" in str(children["working_memory"].outputs)
    (recall,) = [r for r in tracer.runs() if r.name == "recall"]
    assert recall.run_type == "retriever" and recall.inputs == {"query": "What is my locker code?"}
    assert recall.metadata["mode"] == "hybrid" and recall.metadata["resource_id"] == "alice"
    documents = recall.outputs["documents"]
    assert any(doc.page_content == SECRET for doc in documents)
    found = next(doc for doc in documents if doc.page_content == SECRET)
    assert found.metadata["thread_id"] == "alice-old" and found.metadata["hit"] is True
    assert isinstance(found.metadata["score"], float) and found.metadata["created_at"]
    stages = {c.name: c for c in recall.child_runs}  # each stage's own run and duration
    assert {"keyword_stage", "vector_stage", "context_stage"} <= set(stages)
    assert stages["vector_stage"].outputs["hits"] >= 1
    parent = next(r for r in tracer.runs() if any(c.id == recall.id for c in r.child_runs))
    assert parent.id == run.id or parent.parent_run_id == run.id  # under the memory run


@pytest.mark.parametrize("shape", SHAPES)
def test_bobs_trace_holds_nothing_of_alices(shape: str, tmp_path: Path) -> None:
    memory = memory_with_history(tmp_path / "m.db")
    tracer = RecordingTracer()
    SHAPES[shape](memory, "What is my locker code?", cfg("bob-new", "bob", tracer))
    assert tracer.named("recall")  # recall ran, for bob
    dumped = json.dumps([r.model_dump() for r in tracer.runs()], default=str)
    assert "QX-locker" not in dumped and "Alice" not in dumped
    assert "My bike is blue." in dumped  # his own memory is in his trace


def test_async_turns_are_traced_the_same(tmp_path: Path) -> None:
    memory = memory_with_history(tmp_path / "m.db")
    tracer = RecordingTracer()
    asyncio.run(
        memory.as_runnable().ainvoke(
            {"input": "What is my locker code?"}, cfg("alice-new", "alice", tracer)
        )
    )
    (run,) = tracer.named("memory")
    assert {c.name for c in run.child_runs} >= {"working_memory", "ToolCallFilter"}
    (recall,) = tracer.named("recall")
    assert any(doc.page_content == SECRET for doc in recall.outputs["documents"])


def test_a_tracer_that_raises_does_not_break_the_turn(tmp_path: Path) -> None:
    memory = memory_with_history(tmp_path / "m.db")
    config = cfg("alice-new", "alice", Raising())
    sent = memory.as_runnable().invoke({"input": "What is my locker code?"}, config)
    assert SECRET in str(sent)
    sent = asyncio.run(memory.as_runnable().ainvoke({"input": "What is my locker code?"}, config))
    assert SECRET in str(sent)


def test_no_tracer_no_runs(tmp_path: Path) -> None:
    memory = memory_with_history(tmp_path / "m.db")
    sent = memory.context([HumanMessage("What is my locker code?")], thread_id="alice-new",
                          resource_id="alice")  # fmt: skip
    assert SECRET in str(sent)


OTEL = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
sys.path.insert(0, sys.argv[2])
from test_tracing import memory_with_history
from pathlib import Path
from langchain_core.messages import HumanMessage
memory = memory_with_history(Path(sys.argv[1]))
memory.context([HumanMessage("What is my locker code?")], thread_id="alice-new",
               resource_id="alice")
print(json.dumps([{"name": s.name, "parent": s.parent.span_id if s.parent else None,
                   "id": s.context.span_id, "attributes": dict(s.attributes)}
                  for s in exporter.get_finished_spans()]))
"""


def test_opentelemetry_spans_when_a_provider_is_configured(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", OTEL, str(tmp_path / "m.db"), str(Path(__file__).parent)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    spans = {s["name"]: s for s in json.loads(done.stdout.strip().splitlines()[-1])}
    assert {"memory.memory", "memory.working_memory", "memory.recall"} <= set(spans)
    recall = spans["memory.recall"]
    assert recall["attributes"]["gen_ai.operation.name"] == "retrieval"
    assert recall["attributes"]["gen_ai.conversation.id"] == "alice-new"
    assert recall["attributes"]["langchain_mastra_memory.documents"] >= 1
    assert recall["parent"] == spans["memory.memory"]["id"]


def test_title_generation_and_the_observer_are_runs_of_the_turns_trace(tmp_path: Path) -> None:
    from test_observational_memory import Scripted

    observer = Scripted(calls=[])
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"),
        options={"generate_title": {"model": scripted(AIMessage("Moving to Lisbon"))},
                 "observational_memory": {"model": observer, "message_tokens": 30}},
    )  # fmt: skip
    tracer = RecordingTracer()
    chat = memory.wrap(scripted(*[AIMessage(f"Reply {i} about Lisbon.") for i in range(3)]))
    config = cfg("t1", "alice", tracer)
    for i in range(3):
        chat.invoke(f"I moved to Lisbon in March, tell me about its hills ({i}).", config)
    assert memory.flush(60)
    assert memory.get_thread("t1").title == "Moving to Lisbon"
    (title,) = tracer.named("generate_title")
    assert title.run_type == "llm" and "langchain-mastra-memory" in title.tags
    observed = tracer.named("observer")
    assert observed and observer.calls  # the Observer ran, and its run reached the tracer
    assert observed[0].metadata["resource_id"] == "alice" and observed[0].child_runs  # its model
    assert title.parent_run_id is None  # after the turn: a run of its own, kept by any tracer


def test_a_store_search_in_a_node_is_a_retriever_run(tmp_path: Path) -> None:
    from langchain_core.runnables import RunnableLambda

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), options={"semantic_recall": True})
    store = memory.store()
    store.put(("alice", "notes"), "diet", {"content": "allergic to peanuts"})
    store.put(("bob", "notes"), "diet", {"content": "vegetarian"})
    tracer = RecordingTracer()
    node = RunnableLambda(lambda q: store.search(("alice", "notes"), query=q))
    found = node.invoke("what can't I eat?", {"callbacks": [tracer]})
    assert "peanuts" in str(found[0].value)
    (run,) = tracer.named("store_search")
    assert run.run_type == "retriever" and run.metadata["namespace"] == "alice/notes"
    assert "peanuts" in run.outputs["documents"][0].page_content
    assert "vegetarian" not in json.dumps([r.model_dump() for r in tracer.runs()], default=str)


OTEL_LATE = OTEL.replace("trace.set_tracer_provider(provider)\n", "").replace(
    "memory = memory_with_history(Path(sys.argv[1]))\n",
    "memory = memory_with_history(Path(sys.argv[1]))\n"
    "memory.context([HumanMessage('hello')], thread_id='alice-early', resource_id='alice')\n"
    "assert not exporter.get_finished_spans()\n"
    "trace.set_tracer_provider(provider)\n",
)


def test_a_provider_configured_after_memory_first_traced_still_gets_the_spans(
    tmp_path: Path,
) -> None:
    """Memory keeps one proxy tracer (no provider lookup per step): a provider set later, as an
    app's startup may do after building memory, receives the spans from then on."""
    done = subprocess.run(
        [sys.executable, "-c", OTEL_LATE, str(tmp_path / "m.db"), str(Path(__file__).parent)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    spans = {s["name"] for s in json.loads(done.stdout.strip().splitlines()[-1])}
    assert {"memory.memory", "memory.working_memory", "memory.recall"} <= spans
