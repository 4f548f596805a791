"""Run every benchmark in bench/ and print their tables (`make bench`)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

BENCHES = [
    "token_limiter_bench.py",
    "checkpointer_bench.py",
    "embed_bench.py",
    "recall_eval.py",
    "recall_bench.py",
    "cold_recall_bench.py",
    "turn_bench.py",
    "deep_agent_budget.py",
]

if __name__ == "__main__":
    here = Path(__file__).parent
    for name in BENCHES:
        print(f"\n## {name}\n", flush=True)
        sys.argv = [name]
        runpy.run_path(str(here / name), run_name="__main__")
