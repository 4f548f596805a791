"""The documentation site builds with `mkdocs build --strict` (a broken link, a page missing
from the nav or an API reference that does not resolve fails it), and the README stays the
short front door the site extends."""

from __future__ import annotations

import json
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


def imported_names(text: str) -> set[tuple[str, str | None]]:
    """``(module, name)`` of each import of the package in `text`'s Python (name None for
    ``import module``), parenthesised lists included."""
    found: set[tuple[str, str | None]] = set()
    for module, names in re.findall(
        r"^\s*(?:>>> |\.\.\. )?from (langchain_mastra_memory[\w.]*) import (\([^)]*\)|[^\n]+)",
        text, flags=re.M,
    ):  # fmt: skip
        for name in re.split(r"[,\s]+", names.strip("()").split("#")[0]):
            if name and name != "as" and name.isidentifier():
                found.add((module, name))
    found |= {
        (m, None) for m in re.findall(r"^\s*import (langchain_mastra_memory[\w.]*)", text, re.M)
    }
    for path in re.findall(r"^::: (langchain_mastra_memory[\w.]+)", text, flags=re.M):
        module, _, name = path.rpartition(".")  # the site's API reference
        found.add((module, name))
    return found


def test_every_name_the_readme_and_the_docs_import_still_imports() -> None:
    """A module moved inside the package (issue 85: the checkpointer and the recall tool became
    packages) keeps every path a user copied from the README or the site importable."""
    import importlib

    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    texts += sorted((ROOT / "notebooks").glob("*.ipynb"))
    wanted: set[tuple[str, str | None]] = set()
    for path in texts:
        text = path.read_text()
        if path.suffix == ".ipynb":  # the code cells
            cells = json.loads(text)["cells"]
            text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        wanted |= imported_names(text)
    assert {m for m, _ in wanted} >= {
        "langchain_mastra_memory",
        "langchain_mastra_memory.integrations.checkpointer",
    }
    missing = []
    for module, name in sorted(wanted, key=str):
        try:
            imported = importlib.import_module(module)
            if name is not None and not hasattr(imported, name):
                importlib.import_module(f"{module}.{name}")  # a submodule
        except ImportError as exc:
            missing.append(f"from {module} import {name}: {exc}")
    assert missing == []


def test_each_page_of_the_site_is_one_subject_of_at_most_400_lines() -> None:
    """A page over 400 lines is two subjects (issue 85: semantic recall was a guide, speed
    tables, quality tables and a design in 974 lines; they are four pages now)."""
    sizes = {
        p.relative_to(ROOT / "docs").as_posix(): len(p.read_text().splitlines())
        for p in (ROOT / "docs").rglob("*.md")
    }
    assert len(sizes) >= 20 and sizes["semantic-recall.md"] > 100  # the pages are read
    assert {page: lines for page, lines in sizes.items() if lines > 400} == {}
