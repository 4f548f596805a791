"""Docs examples print what their comments say: a ``print(...)`` line ending in
``# prints: <what>`` must print, and each time print text that matches ``<what>`` (``...``
stands for anything; spaces are not counted). A promise of output that never prints (a loop
over nothing) fails as surely as a wrong value.

Examples:
    >>> promises("print(1 + 1)  # prints: 2\\nx = 3\\n")
    {1: '2'}
    >>> matches("{'mood': ..., 'trip': {...}}", "{'mood': 'thrilled', 'trip': {'to': 'Kyoto'}}")
    True
"""

from __future__ import annotations

import builtins
import io
import re
import sys
from collections import defaultdict
from typing import Any

PROMISE = re.compile(r"#\s*prints:\s*(.+?)\s*$")


def promises(code: str) -> dict[int, str]:
    """The ``# prints:`` promises of `code`, by line number (1-based)."""
    found = {}
    for number, line in enumerate(code.splitlines(), start=1):
        if (match := PROMISE.search(line)) and "print(" in line:
            found[number] = match.group(1)
    return found


def matches(promised: str, text: str) -> bool:
    """Whether `text` is what `promised` says (``...``: anything; whitespace ignored)."""
    squeeze = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    pattern = ".*?".join(re.escape(squeeze(part)) for part in promised.split("..."))
    return re.fullmatch(pattern, squeeze(text), flags=re.S) is not None


class Printed:
    """A ``print`` for a namespace that records what each line of `filename` printed."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.by_line: dict[int, list[str]] = defaultdict(list)

    def __call__(self, *args: Any, sep: str = " ", end: str = "\n", **kwargs: Any) -> None:
        buffer = io.StringIO()
        builtins.print(*args, sep=sep, end="", file=buffer)
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != self.filename:
            frame = frame.f_back  # type: ignore[assignment]
        if frame is not None:
            self.by_line[frame.f_lineno].append(buffer.getvalue())
        builtins.print(*args, sep=sep, end=end, **kwargs)


def run_checking_prints(code: str, filename: str, namespace: dict[str, Any]) -> Printed:
    """Run `code` in `namespace`; then each ``# prints:`` promise of it must hold."""
    printed = namespace["print"] = Printed(filename)
    try:
        exec(compile(code, filename, "exec"), namespace)
    finally:
        del namespace["print"]
    for line, promised in promises(code).items():
        outputs = printed.by_line.get(line)
        assert outputs, f"{filename}, line {line}: promises {promised!r} but printed nothing"
        for text in outputs:
            assert matches(promised, text), (
                f"{filename}, line {line}: promises {promised!r}, printed {text!r}"
            )
    return printed
