"""bench/turn_cpu.py runs end to end (a smoke run: one run of 2 conversations x 2 turns, sync
and async): every configuration is measured, the model was sent nothing a provider refuses,
and the breakdown names the thread groups where memory's steps run. Its figures are the
benchmarks page's; nothing here times anything."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "bench" / "turn_cpu.py"


@pytest.mark.slow
@pytest.mark.parametrize("mode", [[], ["--sync"]], ids=["async", "sync"])
def test_the_turn_cpu_bench_measures_every_configuration(mode: list[str], tmp_path: Path) -> None:
    chat = [  # (a conversation in LoCoMo's format: the suite does not rely on the eval folder)
        {"speaker": "Alice" if i % 2 == 0 else "Bob", "dia_id": f"D1:{i}",
         "text": f"We talked about the garden, part {i}. Then about the weather."}
        for i in range(12)
    ]  # fmt: skip
    data = {"speaker_a": "Alice", "speaker_b": "Bob", "session_1": chat, "qa": []}
    (tmp_path / "1.json").write_text(json.dumps(data))
    record = tmp_path / "figures" / "turn_cpu.json"
    args = ["--runs", "1", "--conversations", "2", "--turns", "2", "--data", str(tmp_path),
            "--json", str(record), *mode]  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"^(bare|memory|memory\+recall)\s+([\d.]+)", done.stdout, re.M)
    }
    assert set(rows) == {"bare", "memory", "memory+recall"}, done.stdout
    assert all(value > 0 for value in rows.values()), done.stdout
    groups = done.stdout.split("where it goes", 1)[1]
    assert "agent + memory's planning" in groups and "vector writer" in groups, done.stdout
    saved = json.loads(record.read_text())  # what the docs' plot is drawn from
    assert {k: round(v["p50_ms"], 1) for k, v in saved["configurations"].items()} == rows
    assert saved["bench"] == "turn_cpu" and "--json" in saved["command"] and saved["machine"]
    assert saved["configurations"]["bare"]["x_bare"] == 1.0
    figures = saved["configurations"]
    # the model's forward passes apart: none without recall, some with it, never more than all
    assert figures["bare"]["texts_per_turn"] == 0 and figures["memory"]["texts_per_turn"] == 0
    recall = figures["memory+recall"]
    assert recall["texts_per_turn"] >= 1 and 0 < recall["model_p50_ms"] < recall["p50_ms"]
    assert recall["apart_from_model_p50_ms"] == pytest.approx(
        recall["p50_ms"] - recall["model_p50_ms"], rel=0.5
    )


def test_a_data_folder_without_chat_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--runs", "1", "--data", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode != 0 and f"no chat turns in {tmp_path}" in done.stderr
