"""The README's figures are plots drawn from the benches' JSON (`bench/plot_figures.py`): each
JSON on record draws, each plot says its date, machine and command, the README shows two,
and the benchmarks pages every one."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import plot_figures  # noqa: E402


def test_every_bench_on_record_draws_a_plot_that_says_when_where_and_how(tmp_path: Path) -> None:
    results = ROOT / "bench" / "results"
    on_record = sorted(p.stem for p in results.glob("*.json") if p.stem in plot_figures.PLOTS)
    assert on_record == sorted(plot_figures.PLOTS)  # every plot has its bench's figures
    written = plot_figures.draw(results, tmp_path)
    assert sorted(p.stem for p in written) == on_record
    for path in written:
        record = json.loads((results / f"{path.stem}.json").read_text())
        svg = path.read_text()
        assert svg.startswith("<?xml") and "</svg>" in svg
        for said in (record["date"], record["machine"], record["command"].split()[1]):
            assert said in svg, (path.name, said)


def test_drawing_again_writes_the_same_file(tmp_path: Path) -> None:
    """No date or random id inside: a figure changes in a commit only when its numbers do."""
    results = ROOT / "bench" / "results"
    first = {p.name: p.read_bytes() for p in plot_figures.draw(results, tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in plot_figures.draw(results, tmp_path / "b")}
    assert first and first == second


README_PLOTS = {"turn_cpu.svg", "checkpoint_growth.svg"}  # the README keeps two (issue 95)


def test_each_committed_plot_is_current_and_shown_the_readme_two(tmp_path: Path) -> None:
    """The README shows two plots; every plot is on a benchmarks page, drawn from the results
    committed beside it."""
    readme = (ROOT / "README.md").read_text()
    pages = "".join(p.read_text() for p in (ROOT / "docs" / "benchmarks").glob("*.md"))
    drawn = {
        p.name: p.read_bytes() for p in plot_figures.draw(ROOT / "bench" / "results", tmp_path)
    }
    assert set(drawn) > README_PLOTS
    assert set(re.findall(r"\]\(docs/figures/([\w.]+)\)", readme)) == README_PLOTS
    for name, content in drawn.items():
        committed = ROOT / "docs" / "figures" / name
        assert f"](../figures/{name})" in pages, name
        assert committed.read_bytes() == content, f"{name}: run python bench/plot_figures.py"
