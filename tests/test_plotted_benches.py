"""The benches whose figures the README draws (`bench/plot_figures.py`) run end to end on a small
conversation and write what they print to their JSON. Smoke runs: nothing here times anything;
the figures themselves are the benchmarks page's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "bench"


def locomo_folder(folder: Path, messages: int) -> Path:
    """One conversation in LoCoMo's format (the suite does not rely on the eval folder)."""
    chat = [
        {"speaker": "Alice" if i % 2 == 0 else "Bob", "dia_id": f"D1:{i}",
         "text": f"We talked about the garden, part {i}. Then about the weather."}
        for i in range(messages)
    ]  # fmt: skip
    data = {"speaker_a": "Alice", "speaker_b": "Bob", "session_1": chat, "qa": []}
    (folder / "1.json").write_text(json.dumps(data))
    return folder


def run(bench: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH / bench), *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_the_prompt_cache_bench_writes_the_shares_it_prints(tmp_path: Path) -> None:
    record = tmp_path / "prompt_cache.json"
    out = run(
        "prompt_cache.py", "--data", str(locomo_folder(tmp_path, 80)), "--messages", "80",
        "--runs", "1", "--only", "last_messages: 20", "--json", str(record),
    )  # fmt: skip
    printed = {
        m.group(1): (float(m.group(2)), float(m.group(3)))
        for m in re.finditer(r"^  (.+?): \d+ steady turns.* p50 ([\d.]+) p10 ([\d.]+)", out, re.M)
    }
    assert set(printed) == {
        "last_messages: 20", "last_messages: 20 + recall", "TokenLimiter-like sliding, last_messages: 20"
    }, out  # fmt: skip
    saved = json.loads(record.read_text())
    assert saved["bench"] == "prompt_cache" and saved["machine"] and "--json" in saved["command"]
    (only,) = saved["runs"]
    assert {k: (round(v["shared_p50"], 2), round(v["shared_p10"], 2)) for k, v in only.items()} \
        == printed  # fmt: skip
    for figures in only.values():
        assert 0 <= figures["shared_p10"] <= figures["shared_p50"] <= 1
        for with_cache, without in figures["dollars_per_100_turns"].values():
            assert 0 < with_cache <= without


@pytest.mark.slow
def test_the_concurrency_bench_writes_the_run_it_prints(tmp_path: Path) -> None:
    record = tmp_path / "concurrency.json"
    out = run(
        "concurrency_bench.py", "--data", str(locomo_folder(tmp_path, 12)), "--conversations", "3",
        "--turns", "2", "--runs", "1", "--json", str(record),
    )  # fmt: skip
    printed = re.search(r"= ([\d.]+) turns/s.*lost (\d+), duplicated (\d+) of (\d+)", out)
    assert printed, out
    (only,) = json.loads(record.read_text())["runs"]
    assert round(only["turns_per_s"], 1) == float(printed.group(1))
    assert (only["lost"], only["duplicated"], only["checked"]) == tuple(
        int(printed.group(i)) for i in (2, 3, 4)
    )
    assert only["lost"] == only["duplicated"] == only["crossed"] == 0 and only["checked"] >= 12
    p50, p95, longest = only["turn_s"]
    assert 0 < p50 <= longest and p95 > 0  # (p95 of six turns: an interpolation)


@pytest.mark.parametrize("bench", ["prompt_cache.py", "concurrency_bench.py"])
def test_a_data_folder_without_chat_is_a_clear_error(bench: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / bench), "--runs", "1", "--data", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode != 0 and str(tmp_path) in done.stderr


@pytest.mark.postgres
@pytest.mark.slow
def test_the_failover_bench_writes_the_outages_it_prints(tmp_path: Path) -> None:
    record = tmp_path / "failover.json"
    out = run("failover_bench.py", "--runs", "1", "--conversations", "2", "--json", str(record))
    printed = dict(re.findall(r"^run 1 (\w+): outage ([\d.]+) s", out, re.M))
    assert set(printed) == {"check_alive", "check_connection"}, out
    saved = json.loads(record.read_text())
    for side, outage in printed.items():
        (only,) = saved["runs"][side]
        assert round(only["outage_s"], 2) == float(outage) and only["outage_s"] > 0
    assert "x" in out.splitlines()[-1]  # the ratio to the peer, measured in the same run
