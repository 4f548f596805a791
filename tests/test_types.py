"""The type checker as a net (issue 83): the package passes mypy with the settings in
pyproject.toml, among them ``possibly-undefined`` (which names a variable used where a branch
may have left it unbound, as `start_empty`'s ``matrix`` was) and ``redundant-expr``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_type_checks_with_its_strict_settings(tmp_path: Path) -> None:
    settings = (ROOT / "pyproject.toml").read_text().split("[tool.mypy]", 1)[1].split("\n[", 1)[0]
    for wanted in ('"possibly-undefined"', '"redundant-expr"', "disallow_untyped_defs = true",
                   "warn_unreachable = true", "strict_equality = true"):  # fmt: skip
        assert wanted in settings
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    assert "Success: no issues found" in checked.stdout
