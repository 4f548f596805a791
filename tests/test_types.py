"""The type checker as a net (issue 83): the package passes mypy with the settings in
pyproject.toml, among them ``possibly-undefined`` (which names a variable used where a branch
may have left it unbound, as `start_empty`'s ``matrix`` was) and ``redundant-expr``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


WRONG_STEP = """
from langchain_mastra_memory.twins import Steps, call


class Store:
    def get(self, key: str) -> str:
        return key


def wrong(store: Store) -> Steps[int]:
    name: int = yield from call(store.get, "ada")  # get() gives a str
    return name


def right(store: Store) -> Steps[str]:
    name: str = yield from call(store.get, "ada")
    return name
"""


def test_the_package_type_checks_with_its_strict_settings(tmp_path: Path) -> None:
    """The package passes; and in the same run a step whose result is taken as the wrong type
    (`twins`: ``yield from call(...)`` gives the method's result type) is the one error."""
    settings = (ROOT / "pyproject.toml").read_text().split("[tool.mypy]", 1)[1].split("\n[", 1)[0]
    for wanted in ('"possibly-undefined"', '"redundant-expr"', "disallow_untyped_defs = true",
                   "warn_unreachable = true", "strict_equality = true", "warn_return_any = true",
                   "disallow_any_generics = true"):  # fmt: skip
        assert wanted in settings
    wrong = tmp_path / "wrong_step.py"
    wrong.write_text(WRONG_STEP)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
         "langchain_mastra_memory", str(wrong)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, checked.stdout[-4000:] + checked.stderr[-2000:]
    assert errors[0].startswith(f"{wrong}:11: error: Incompatible types in assignment"), errors
