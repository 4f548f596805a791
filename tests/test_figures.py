"""The README's figures are plots drawn from the benches' JSON (`bench/plot_figures.py`): each
JSON on record draws, each plot says its date, machine and command, and the README shows
every plot there is."""

from __future__ import annotations

import json
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


def test_the_readme_shows_each_committed_plot_and_it_is_current(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    drawn = {
        p.name: p.read_bytes() for p in plot_figures.draw(ROOT / "bench" / "results", tmp_path)
    }
    for name, content in drawn.items():
        committed = ROOT / "docs" / "figures" / name
        assert f"](docs/figures/{name})" in readme, name
        assert committed.read_bytes() == content, f"{name}: run python bench/plot_figures.py"
