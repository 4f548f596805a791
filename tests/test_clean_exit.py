"""A clean exit: a process that wrote through three `Memory` objects (one per recall mode) on
one file and its embedded Chroma, recalled, and exits with the vector writer busy and a
partition loading, returns 0, ten times in a row. (Daemon threads still inside Chroma or ONNX
Runtime while the interpreter finalised made such processes die with a segmentation fault;
`shutdown` stops and joins them first.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

RUN = textwrap.dedent(
    """
    import random, sys
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_mastra_memory import Memory, SQLiteStorage

    storage = SQLiteStorage(sys.argv[1])
    memories = [Memory(storage=storage, options={"semantic_recall": {"mode": mode,
                "scope": "resource"}}) for mode in ("vector", "keyword", "hybrid")]
    rng = random.Random(int(sys.argv[2]))
    words = "tea garden Lisbon locker train March beagle menu sister wedding".split()
    for n, memory in enumerate(memories):
        thread = f"t{sys.argv[2]}-{n}"
        memory.create_thread(thread_id=thread, resource_id="alice")
        memory.save_messages(
            [(HumanMessage if i % 2 else AIMessage)(" ".join(rng.choices(words, k=12)))
             for i in range(100)], thread_id=thread, resource_id="alice")
    for memory in memories:  # searched while the writer embeds: partitions start loading
        for _ in range(3):
            memory.search_messages("tea in Lisbon", resource_id="alice")
    print("ok", flush=True)
    """
)


def test_a_busy_process_exits_cleanly_ten_times_in_a_row(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    for run in range(10):
        done = subprocess.run(
            [sys.executable, "-c", RUN, str(db), str(run)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert (done.returncode, done.stdout.strip()) == (0, "ok"), (run, done.stderr[-3000:])
    from langchain_mastra_memory import Memory, SQLiteStorage

    after = Memory(storage=SQLiteStorage(db), options={"semantic_recall": True})
    assert after.storage.unembedded() == []  # the writer drained at each exit, nothing lost
    assert len(after.list_threads(resource_id="alice")) == 30
