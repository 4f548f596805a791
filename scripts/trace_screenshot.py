"""Draw the trace of one real turn as a run tree (LangSmith's run format, recorded by a local
`BaseTracer`) and screenshot it with headless Chromium for docs/tracing.md.

    python scripts/trace_screenshot.py [docs/images/trace.png]
"""

from __future__ import annotations

import html
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tracers.schemas import Run

from langchain_mastra_memory import Memory, SQLiteStorage, ToolCallFilter
from langchain_mastra_memory.testing import RecordingTracer


def record(folder: Path) -> Run:
    from langgraph.prebuilt import create_react_agent

    memory = Memory(
        storage=SQLiteStorage(folder / "m.db"),
        options={"working_memory": {"enabled": True},
                 "semantic_recall": {"top_k": 2, "message_range": 1}},
        processors=[ToolCallFilter()],
    )  # fmt: skip
    memory.create_thread(thread_id="trip", resource_id="alice", title="Planning the trip")
    memory.save_messages(
        [HumanMessage("I'm flying to Lisbon on May 3, back on the 10th."),
         AIMessage("Noted! Window seat as usual?"), HumanMessage("Yes please."),
         AIMessage("Done.")],
        thread_id="trip", resource_id="alice",
    )  # fmt: skip
    memory.update_working_memory("# User\n- Name: Alice\n- Seat: window", resource_id="alice")
    memory.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(
            FakeMessagesListChatModel(responses=[AIMessage("You fly to Lisbon on May 3.")]), [],
            pre_model_hook=memory.pre_model_hook(), checkpointer=memory.checkpointer(),
        )  # fmt: skip
    tracer = RecordingTracer()
    agent.invoke(
        {"messages": [("user", "When is my flight?")]},
        {"configurable": {"thread_id": "today", "resource_id": "alice"}, "callbacks": [tracer]},
    )
    return tracer.roots[-1]


def summary(run: Run) -> str:
    if run.run_type == "retriever" and run.outputs:
        docs = run.outputs.get("documents", [])
        lines = [
            f"{d.metadata.get('score', 0):.3f} · {d.metadata['thread_id']} · "
            f"{d.metadata['created_at'][:16]} · {d.page_content}"
            if d.metadata.get("hit")
            else f"neighbour · {d.metadata['thread_id']} · {d.page_content}"
            for d in docs
        ]
        return (
            "query: "
            + run.inputs.get("query", "")
            + "<br>"
            + "<br>".join(html.escape(x) for x in lines)
        )
    if run.name == "working_memory" and run.outputs:
        message = run.outputs.get("message")
        return html.escape(str(getattr(message, "content", ""))[:160]) + "…"
    if run.name == "memory":
        meta = f"thread_id={run.metadata.get('thread_id')} · resource_id={run.metadata.get('resource_id')}"
        count = len((run.outputs or {}).get("messages", []))
        return html.escape(meta) + f" · {count} messages sent"
    return ""


def rows(run: Run, depth: int = 0) -> list[str]:
    took = ((run.end_time or run.start_time) - run.start_time).total_seconds() * 1000
    ours = "langchain-mastra-memory" in (run.tags or [])
    out = [
        f'<tr class="{"ours" if ours else ""}"><td style="padding-left:{12 + depth * 22}px">'
        f'<b>{html.escape(run.name)}</b> <span class="type">{run.run_type}</span></td>'
        f'<td class="ms">{took:.1f} ms</td><td class="detail">{summary(run)}</td></tr>'
    ]
    for child in sorted(run.child_runs, key=lambda r: r.start_time):
        out += rows(child, depth + 1)
    return out


PAGE = """<html><head><style>
body {{ font-family: sans-serif; font-size: 13px; margin: 16px; }}
table {{ border-collapse: collapse; width: 100%; }}
td {{ border-bottom: 1px solid #ddd; padding: 5px 8px; vertical-align: top; }}
tr.ours td {{ background: #eef6ee; }}
.type {{ color: #666; font-size: 11px; border: 1px solid #bbb; border-radius: 3px; padding: 0 3px; }}
.ms {{ color: #555; white-space: nowrap; }} .detail {{ color: #333; font-size: 12px; }}
</style></head><body><h3>One turn of a LangGraph agent with memory's pre-model hook:
the run tree a LangChain tracer records (memory's runs shaded)</h3>
<table>{rows}</table></body></html>"""


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images/trace.png").resolve()
    with tempfile.TemporaryDirectory() as folder:
        root = record(Path(folder))
        page = Path(folder) / "trace.html"
        page.write_text(PAGE.format(rows="".join(rows(root))))
        subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--screenshot={out}", "--window-size=1100,620", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    print(out)


if __name__ == "__main__":
    main()
