"""Every notebook in notebooks/ runs top to bottom (offline: a scripted model)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch) -> None:
    if not os.environ.get("LMM_NOTEBOOKS_ONLINE"):
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # offline unless asked otherwise
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        "commit stripped"
    )
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 4
