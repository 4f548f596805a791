"""A bench's figures on record: one JSON file per bench in ``bench/results/``, each with the
command that made it, its date and the machine it ran on (what `plot_figures.py` draws the
README's and the docs' figures from).

    from results import save
    save("turn_cpu", {"configurations": ...}, path=args.json)
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).parent / "results"


def percentiles(ms: list[float]) -> tuple[float, float]:
    """p50 and p95 of timings."""
    return statistics.median(ms), statistics.quantiles(ms, n=20)[18]


def machine() -> str:
    """The CPU's model and the cores this process may use (``2-core AMD EPYC 9B14``)."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{len(os.sched_getaffinity(0))}-core {model}"


def save(bench: str, figures: dict[str, Any], path: Path | None = None) -> Path:
    """Write `figures` with the bench's name, command, date and machine to `path` (default
    ``bench/results/<bench>.json``); returns where."""
    path = path or FOLDER / f"{bench}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "bench": bench,
        "command": " ".join(["python", f"bench/{Path(sys.argv[0]).name}", *sys.argv[1:]]),
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        **figures,
    }
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path
