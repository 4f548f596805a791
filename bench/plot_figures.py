"""The README's and the docs' figures, drawn from the benches' JSON (``bench/results/``).

Each plot says what was measured, when, on which machine and with which command, as the JSON
the bench wrote holds them (`results.save`). SVG, written the same way each time (no dates or
random ids inside), so a figure changes in a commit only when its numbers do.

    python bench/plot_figures.py [--results bench/results] [--out docs/figures]
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt

HERE = Path(__file__).parent
COLORS = {"bare": "#9e9e9e", "memory": "#3b7dd8", "memory+recall": "#e07b39"}
MODE_COLORS = {"vector": "#3b7dd8", "keyword": "#4caf50", "hybrid": "#e07b39"}
plt.rcParams.update(
    {
        "svg.hashsalt": "langchain-mastra-memory",  # the same ids each time
        "svg.fonttype": "none",  # text as text: searchable, and checked by the tests
        "font.size": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
)


def _caption(record: dict[str, Any]) -> str:
    return f"{record['date']} · {record['machine']} · {record['command']}"


def turn_cpu(record: dict[str, Any]) -> plt.Figure:
    """CPU per agent turn, each configuration's p50 (its p95 as the whisker), with its ratio
    to the bare agent's, and the embedding model's share (hatched) with the ratio without it."""
    kinds = list(record["configurations"])
    values = [record["configurations"][k] for k in kinds]
    figure, axes = plt.subplots(figsize=(8, 2.8))
    p50 = [v["p50_ms"] for v in values]
    errors = [[0 for _ in values], [v["p95_ms"] - v["p50_ms"] for v in values]]
    bars = axes.barh(kinds, p50, xerr=errors, color=[COLORS.get(k, "#777") for k in kinds],
                     capsize=3)  # fmt: skip
    model = [v.get("model_p50_ms", 0.0) for v in values]  # the embedding model's passes
    if any(model):
        axes.barh(kinds, model, color="none", edgecolor="#333", hatch="///", linewidth=0,
                  label="of it, the embedding model's forward passes")  # fmt: skip
        axes.legend(loc="upper right", fontsize=7, frameon=False)
    for bar, value in zip(bars, values, strict=True):
        label = f"{value['p50_ms']:.1f} ms  ({value['x_bare']:.1f}× bare)"
        if value.get("model_p50_ms"):
            apart = value["apart_from_model_x_bare"]
            label += f"\nwithout the model: {apart:.1f}× bare"
        y = bar.get_y() + bar.get_height() / 2
        axes.text(max(value["p95_ms"], value["p50_ms"]) + max(p50) * 0.02, y, label, va="center")
    axes.invert_yaxis()
    axes.set_xlim(0, max(v["p95_ms"] for v in values) * 1.6)
    axes.set_xlabel("CPU ms per turn (p50; whisker: p95)")
    axes.set_title(f"CPU per agent turn: {record['setting']}", loc="left")
    figure.text(0.01, 0.01, _caption(record), fontsize=7, color="#555")
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    return figure


def cold_recall(record: dict[str, Any]) -> plt.Figure:
    """Recall's p50 and p95 per mode, after an import, after a restart and warm, in every
    run, beside the exact int8 scan of the same pieces (the floor)."""
    phases = ("after_import", "after_restart", "warm")
    figure, axes = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / (len(MODE_COLORS) * len(record["runs"]))
    for r, run in enumerate(record["runs"]):
        for m, mode in enumerate(MODE_COLORS):
            offset = (m * len(record["runs"]) + r) * width - 0.4 + width / 2
            p50 = [run[mode][phase][0] for phase in phases]
            p95 = [run[mode][phase][1] for phase in phases]
            xs = [i + offset for i in range(len(phases))]
            axes.bar(xs, p95, width * 0.9, color=MODE_COLORS[mode], alpha=0.35)
            axes.bar(xs, p50, width * 0.9, color=MODE_COLORS[mode],
                     label=mode if r == 0 else None)  # fmt: skip
    floor = record["runs"][0]["floor"][1]
    axes.axhline(floor, color="#333", linestyle=":", linewidth=1)
    axes.text(len(phases) - 0.5, floor, f" exact int8 scan p95 {floor:.1f} ms", va="bottom",
              ha="right", fontsize=8)  # fmt: skip
    axes.set_xticks(range(len(phases)), [p.replace("_", " ") for p in phases])
    axes.set_ylabel("ms per recall (solid p50, pale p95)")
    axes.set_title(f"Recall, the whole memory.recall ({len(record['runs'])} runs)\n"
                   f"{record['setting']}", loc="left", fontsize=9)  # fmt: skip
    axes.set_ylim(0, axes.get_ylim()[1] * 1.3)
    axes.legend(frameon=False, ncols=3, loc="upper left")
    figure.text(0.01, 0.01, _caption(record), fontsize=7, color="#555")
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    return figure


def checkpoint_growth(record: dict[str, Any]) -> plt.Figure:
    """A thread's checkpoint bytes turn by turn, LangGraph's bare saver against
    ``memory.checkpointer()`` (each message stored once), one panel per database."""
    places = list(record["bytes"])
    figure, panels = plt.subplots(1, len(places), figsize=(8, 3.2), squeeze=False)
    for axes, place in zip(panels[0], places, strict=True):
        rows = record["bytes"][place]
        turns = [r["turn"] for r in rows]
        sides = (("bare", COLORS["bare"], "bare saver"),
                 ("memory", COLORS["memory"], "memory.checkpointer()"))  # fmt: skip
        for side, color, label in sides:
            axes.plot(turns, [r[side] / 1e6 for r in rows], marker="o", color=color, label=label)
        last = rows[-1]
        axes.annotate(f"{last['bare'] / 1e6:.1f} MB", (turns[-1], last["bare"] / 1e6),
                      textcoords="offset points", xytext=(-40, 6), fontsize=8)  # fmt: skip
        axes.annotate(f"{last['memory'] / 1e6:.1f} MB", (turns[-1], last["memory"] / 1e6),
                      textcoords="offset points", xytext=(-40, 6), fontsize=8)  # fmt: skip
        axes.set_title(place, fontsize=9, loc="left")
        axes.set_xlabel("turns")
        axes.set_ylabel("MB")
    panels[0][0].legend(frameon=False, fontsize=8, loc="upper left")
    figure.suptitle(f"Checkpoint bytes: {record['setting']}", x=0.01, ha="left", fontsize=10)
    figure.text(0.01, 0.01, _caption(record), fontsize=7, color="#555")
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    return figure


def prompt_cache(record: dict[str, Any]) -> plt.Figure:
    """The share of each turn's model input a prefix cache can serve, per option set (p50 as
    the bar, p10 as the dot, every run), with Claude Sonnet 4.5's input dollars per 100
    turns beside it."""
    labels = list(record["runs"][0])
    figure, axes = plt.subplots(figsize=(8, 0.42 * len(labels) + 1.2))
    height = 0.8 / len(record["runs"])
    for r, run in enumerate(record["runs"]):
        ys = [i + r * height - 0.4 + height / 2 for i in range(len(labels))]
        shares = [run[label]["shared_p50"] for label in labels]
        axes.barh(ys, shares, height * 0.9, color=COLORS["memory"], alpha=1 - 0.35 * r,
                  label=f"run {r + 1}: p50")  # fmt: skip
        axes.plot([run[label]["shared_p10"] for label in labels], ys, "o", color="#333",
                  markersize=3, label="p10" if r == 0 else None)  # fmt: skip
    provider = "Anthropic Claude Sonnet 4.5"
    for i, label in enumerate(labels):
        with_cache, without = record["runs"][0][label]["dollars_per_100_turns"][provider]
        axes.text(1.02, i, rf"\${with_cache:.3f} (\${without:.3f} uncached)", va="center",
                  fontsize=8)  # fmt: skip
    axes.set_yticks(range(len(labels)), [textwrap.fill(label, 34) for label in labels],
                    fontsize=8)  # fmt: skip
    axes.invert_yaxis()
    axes.set_xlim(0, 1.45)
    axes.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    axes.set_xlabel("share of the input equal to the previous turn's input, from its start")
    axes.set_title(f"What a prompt cache can serve; Claude Sonnet 4.5 input per 100 turns on "
                   f"the right\n{record['setting']}", loc="left", fontsize=9)  # fmt: skip
    axes.legend(frameon=False, fontsize=8, ncols=3, loc="upper right", bbox_to_anchor=(1, -0.1))
    figure.text(0.01, 0.01, _caption(record), fontsize=7, color="#555")
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    return figure


def concurrency(record: dict[str, Any]) -> plt.Figure:
    """Many conversations at once in one process: turns a second per run, and each run's
    turn p50 / p95 / max against the 10 s a turn must stay under."""
    runs = record["runs"]
    names = [f"run {i + 1}" for i in range(len(runs))]
    figure, (rate, times) = plt.subplots(1, 2, figsize=(8, 2.9))
    bars = rate.bar(names, [r["turns_per_s"] for r in runs], color=COLORS["memory"])
    for bar, run in zip(bars, runs, strict=True):
        rate.text(bar.get_x() + bar.get_width() / 2, bar.get_height(),
                  f"{run['turns_per_s']:.1f}", ha="center", va="bottom", fontsize=8)  # fmt: skip
    rate.set_ylabel("turns / s")
    rate.set_title("throughput", fontsize=9, loc="left")
    for i, (kind, marker) in enumerate((("p50", "o"), ("p95", "s"), ("max", "^"))):
        times.plot(names, [r["turn_s"][i] for r in runs], marker, color="#333", label=kind)
    times.axhline(10, color="#c62828", linestyle=":", linewidth=1)
    times.text(1, 10, "10 s", transform=times.get_yaxis_transform(), ha="right", va="bottom",
               fontsize=8, color="#c62828")  # fmt: skip
    times.margins(x=0.25)
    times.set_ylim(0, 11.5)
    times.set_ylabel("s per turn")
    times.legend(frameon=False, fontsize=8, ncols=3, loc="upper left")
    lost = sum(r["lost"] + r["duplicated"] for r in runs)
    crossed = sum(r["crossed"] for r in runs)
    times.set_title(f"turn time · lost or duplicated {lost}, crossed {crossed}", fontsize=9,
                    loc="left")  # fmt: skip
    figure.suptitle(record["setting"], x=0.01, ha="left", fontsize=10)
    figure.text(0.01, 0.01, _caption(record), fontsize=7, color="#555")
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    return figure


def failover(record: dict[str, Any]) -> plt.Figure:
    """Each run's outage after a primary is killed and its standby promoted, per pool check,
    with the turns that failed."""
    sides = list(record["runs"])
    figure, axes = plt.subplots(figsize=(8, 3.0))
    colors = {"check_alive": COLORS["memory"], "check_connection": COLORS["bare"]}
    labels = {"check_alive": "check_alive\n(memory's)",
              "check_connection": "psycopg_pool's\ncheck_connection"}  # fmt: skip
    for i, side in enumerate(sides):
        runs = record["runs"][side]
        outages = [r["outage_s"] for r in runs]
        axes.scatter(outages, [i] * len(outages), color=colors.get(side, "#777"), s=40, zorder=3)
        p50 = record["summary"][side]["p50_s"]
        failed = ", ".join(f"{r['failed']:.0f}" for r in runs)
        axes.text(max(outages) + 0.8, i, f"p50 {p50:.1f} s · turns failed per run: {failed}",
                  va="center", fontsize=8)  # fmt: skip
    axes.set_yticks(range(len(sides)), [labels.get(s, s) for s in sides], fontsize=8)
    axes.set_ylim(-0.6, len(sides) - 0.4)
    axes.set_xlim(0, max(r["outage_s"] for v in record["runs"].values() for r in v) * 1.8 + 1)
    axes.axvline(0.5, color="#333", linestyle=":", linewidth=1)
    axes.text(0.55, len(sides) - 0.5, "promoted", fontsize=7, va="top")
    axes.set_xlabel("s from the kill to the first turn served that started after it")
    axes.set_title(f"PostgreSQL failover under load, by the application's saver pool check\n"
                   f"{textwrap.fill(record['setting'], 95)}", loc="left", fontsize=8)  # fmt: skip
    figure.text(0.01, 0.01, _caption(record), fontsize=7, color="#555")
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    return figure


PLOTS: dict[str, Callable[[dict[str, Any]], plt.Figure]] = {
    "turn_cpu": turn_cpu,
    "cold_recall": cold_recall,
    "checkpoint_growth": checkpoint_growth,
    "prompt_cache": prompt_cache,
    "concurrency": concurrency,
    "failover": failover,
}


def draw(results: Path, out: Path) -> list[Path]:
    """Every plot whose bench left its JSON in `results`, as ``<bench>.svg`` in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, plot in PLOTS.items():
        source = results / f"{name}.json"
        if not source.exists():
            continue
        figure = plot(json.loads(source.read_text()))
        target = out / f"{name}.svg"
        figure.savefig(target, metadata={"Date": None})
        plt.close(figure)
        written.append(target)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--out", type=Path, default=HERE.parent / "docs" / "figures")
    args = parser.parse_args()
    for path in draw(args.results, args.out):
        print(path)


if __name__ == "__main__":
    main()
