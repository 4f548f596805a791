"""The documentation site builds with `mkdocs build --strict` (a broken link, a page missing
from the nav or an API reference that does not resolve fails it), and the README stays the
short front door the site extends."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    reference = (tmp_path / "reference" / "index.html").read_text()
    for path in (
        "memory.Memory",
        "integrations.checkpointer.MemoryCheckpointer",
        "recall.engines.langchain_store.LangChainVectorStore",
        "processors.TokenLimiter",
    ):  # each class documented from its docstring, under its own anchor
        assert f'id="langchain_mastra_memory.{path}"' in reference
    assert (tmp_path / "integrations" / "langgraph" / "index.html").exists()


def test_every_page_is_in_the_nav_and_the_readme_is_short() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert {p for p in pages if p not in nav} == set()
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    links = set(re.findall(r"\(docs/([\w/.-]+\.md)\)", readme))
    assert links and links <= pages  # the README's links into the site resolve
