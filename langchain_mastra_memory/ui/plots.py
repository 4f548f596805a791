"""Small inline SVG plots for the explorer (no JavaScript, no plotting library)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT, PAD = 640, 180, 32


def tokens_chart(per_turn: Sequence[float], thresholds: Sequence[tuple[str, float]] = ()) -> str:
    """Cumulative stored tokens over a thread's turns, with horizontal threshold lines
    (observational memory's); an empty string for a thread with no turns."""
    if not per_turn:
        return ""
    totals, running = [], 0.0
    for tokens in per_turn:
        running += tokens
        totals.append(running)
    top = max([*totals, *(v for _, v in thresholds), 1.0])
    step = (WIDTH - 2 * PAD) / max(len(totals) - 1, 1)

    def y(value: float) -> float:
        return HEIGHT - PAD - (HEIGHT - 2 * PAD) * value / top

    points = " ".join(f"{PAD + i * step:.1f},{y(v):.1f}" for i, v in enumerate(totals))
    lines = [
        f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="limit"/>'
        f'<text x="{WIDTH - PAD}" y="{y(v) - 4:.1f}" text-anchor="end">{escape(name)} '
        f"{v:,.0f}</text>"
        for name, v in thresholds
    ]
    return (
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="tokens per turn" '
        f'class="chart"><polyline points="{points}" class="series"/>{"".join(lines)}'
        f'<text x="{PAD}" y="{PAD - 10}">{totals[-1]:,.0f} tokens over {len(totals)} turns</text>'
        "</svg>"
    )


def bars(counts: Sequence[tuple[str, int]]) -> str:
    """Horizontal bars (recall hits by thread), label and count each."""
    if not counts:
        return ""
    top = max(c for _, c in counts) or 1
    height = 22 * len(counts) + 8
    rows = []
    for i, (label, count) in enumerate(counts):
        width = (WIDTH - 260) * count / top
        rows.append(
            f'<text x="0" y="{22 * i + 18}">{escape(label[:34])}</text>'
            f'<rect x="240" y="{22 * i + 5}" width="{width:.1f}" height="16" class="bar"/>'
            f'<text x="{248 + width:.1f}" y="{22 * i + 18}">{count}</text>'
        )
    return (
        f'<svg viewBox="0 0 {WIDTH} {height}" role="img" aria-label="hits by thread" '
        f'class="chart">{"".join(rows)}</svg>'
    )
