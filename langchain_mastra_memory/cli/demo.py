"""`demo`: the bundled sample conversation imported, shown, recalled from."""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .shared import (
    SAMPLE,
    app,
    console,
    embed_with_progress,
    import_with_progress,
    memory_at,
    print_messages,
    recall_memory,
)


@app.command()
def demo(
    db: Annotated[
        Path | None, typer.Option(help="Database to fill (default: a temporary file).")
    ] = None,
) -> None:
    """Import the bundled sample conversation (several sessions of one user) and show it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = db or Path(tmp) / "demo.db"
        with memory_at(path, create=True) as memory:
            sample = resources.files("langchain_mastra_memory.data").joinpath(SAMPLE)
            with resources.as_file(sample) as sample_path:
                count = import_with_progress(memory, sample_path, None, None)
            console.rule(f"[bold]imported {count} messages into {path}")
            threads = memory.list_threads(
                resource_id="alice", order_by="created_at", descending=False
            )
            table = Table("thread", "title", "messages", "tokens", "first message")
            for t in threads:
                stored = memory.storage.list_messages(t.id)
                tokens = sum(s.token_count or 0 for s in stored)
                table.add_row(
                    t.id,
                    t.title or "",
                    str(len(stored)),
                    f"{tokens:.0f}",
                    f"{stored[0].created_at:%Y-%m-%d}" if stored else "",
                )
            console.print(table)
            last = threads[-1]
            console.rule(f"[bold]the newest 6 messages of {last.id!r} (memory.get_messages)")
            print_messages(memory.storage.list_messages(last.id, last=6))
            _demo_working_memory(path)
            _demo_recall(path)


DEMO_PROFILE = """# User Information
- **First Name**: Alice
- **Location**: Lisbon (moved in March)
- **Occupation**: marine biologist at the aquarium (octopuses)
- **Facts**: allergic to peanuts; vegetarian (eats eggs and cheese); always books aisle seats
- **Events**: sister Marta's wedding on June 14
- **Projects**: training for a 10k (careful with the left knee)"""


def _demo_recall(path: Path) -> None:
    from langchain_core.messages import HumanMessage

    from ..messages import message_text

    memory = recall_memory(path, "vector", 3, 1)
    embedded = embed_with_progress(memory, "embedding the sample")
    question = "Which city is my home these days?"
    console.rule(
        f"[bold]semantic recall across threads ({embedded} messages embedded, offline model)"
    )
    console.print(f"a new thread asks: {question!r}", markup=False)
    memory.create_thread(resource_id="alice", thread_id="demo-new")
    for message in memory.recall(thread_id="demo-new", new_messages=[HumanMessage(question)]):
        console.print(message_text(message), markup=False, highlight=False)


def _demo_working_memory(path: Path) -> None:
    from ..memory import Memory
    from ..processors import WorkingMemory
    from ..storage.sqlite.backend import SQLiteStorage

    memory = Memory(storage=SQLiteStorage(path), options={"working_memory": {"enabled": True}})
    tool = memory.working_memory_tool()
    call = {
        "name": tool.name,
        "args": {"memory": DEMO_PROFILE},
        "id": "demo-1",
        "type": "tool_call",
    }
    console.rule("[bold]working memory: the model calls update_working_memory (resource scope)")
    result = tool.invoke(
        call, {"configurable": {"thread_id": "recall-check", "resource_id": "alice"}}
    )
    console.print(f"tool → {result.status}", markup=False)
    console.rule("[bold]what a brand-new thread of alice gets as its first system message")
    injected = WorkingMemory(memory.storage).invoke(
        [], {"configurable": {"thread_id": "new-thread", "resource_id": "alice"}}
    )
    console.print(injected[0].content, markup=False, highlight=False)
