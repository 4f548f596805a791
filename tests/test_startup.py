"""A process's first turns do not pay for its start: the garbage of the imports a `Memory`
brings in is collected when it is built, not in a turn (`tokens.startup.warm_up`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FIRST_TURNS = textwrap.dedent(
    """
    import gc, json, sys
    from pathlib import Path
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_mastra_memory import Memory, SQLiteStorage

    folder = Path(sys.argv[1])
    memory = Memory(storage=SQLiteStorage(folder / "m.db"),
                    embedder=DeterministicFakeEmbedding(size=64),
                    options={"semantic_recall": {"mode": "hybrid", "scope": "resource"}})
    if sys.argv[2] == "import":
        memory.create_thread(thread_id="t", resource_id="alice")
        memory.save_messages([(HumanMessage if i % 2 else AIMessage)(f"note {i} on {i % 37}")
                              for i in range(400)], thread_id="t", resource_id="alice")
        assert memory.flush(60)
        sys.exit(0)
    full = []
    gc.callbacks.append(lambda phase, info: full.append(info["generation"])
                        if phase == "start" and info["generation"] == 2 else None)
    for i in range(60):
        memory.recall(thread_id="t", resource_id="alice",
                      new_messages=[HumanMessage(f"what about {i}")])
    print(json.dumps({"full_collections": len(full)}))
    """
)


def run(folder: Path, step: str) -> dict:
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", FIRST_TURNS, str(folder), step],
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]) if step != "import" else {}


@pytest.mark.slow
def test_no_full_collection_in_the_first_turns_after_a_restart(tmp_path: Path) -> None:
    """A restarted process's first 60 hybrid turns run no full garbage collection (without the
    one at start, the imports' garbage brought one in among them: 77-110 ms at 100k)."""
    run(tmp_path, "import")
    assert run(tmp_path, "turns") == {"full_collections": 0}
