"""Offline tiktoken: files found without network, clear errors when they are not there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from langchain_mastra_memory import EncodingNotAvailableError, TokenCounter
from langchain_mastra_memory.tokens import tokenizers
from langchain_mastra_memory.tokens.tokenizers import BPE_FILES, get_encoding, install_bpe_files


def test_both_encodings_load_and_match_tiktoken_tokens() -> None:
    o200k, cl100k = get_encoding("o200k_base"), get_encoding("cl100k_base")
    assert o200k.name == "o200k_base" and o200k.n_vocab > 199_000
    assert cl100k.name == "cl100k_base" and cl100k.n_vocab > 100_000
    # well-known token ids: "hello world" in both encodings
    assert cl100k.encode("hello world") == [15339, 1917]
    assert o200k.encode("hello world") == [24912, 2375]
    assert get_encoding() is o200k


def test_an_encoding_object_is_used_as_is() -> None:
    enc = get_encoding("cl100k_base")
    assert get_encoding(enc) is enc
    assert TokenCounter(enc).encoding is enc


@pytest.mark.parametrize("name", ["gpt2-ish", "p50k_bas", ""])
def test_unknown_encoding_names_the_fix(name: str) -> None:
    with pytest.raises(EncodingNotAvailableError, match="Use one of: cl100k_base, o200k_base"):
        get_encoding(name)


def test_wrong_type_is_a_clear_error() -> None:
    with pytest.raises(EncodingNotAvailableError, match=r"tiktoken\.Encoding"):
        get_encoding(42)  # type: ignore[arg-type]


def test_missing_files_name_the_setup_command_and_never_download(tmp_path: Path) -> None:
    # A fresh interpreter where no search directory holds the files and the network is poisoned.
    code = f"""
import os, sys, socket
os.environ["TIKTOKEN_CACHE_DIR"] = {str(tmp_path)!r}
os.environ["XDG_CACHE_HOME"] = {str(tmp_path)!r}
def refuse(*a, **k): raise AssertionError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
from langchain_mastra_memory.tokens import tokenizers
tokenizers.environment_dir = lambda name: tokenizers.Path({str(tmp_path)!r})
import importlib.util
real = importlib.util.find_spec
importlib.util.find_spec = lambda n, *a: None if n == "litellm" else real(n, *a)
try:
    tokenizers.get_encoding("o200k_base")
except tokenizers.EncodingNotAvailableError as e:
    print("ERR", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "ERR" in out.stdout, out.stderr
    assert "langchain-mastra-memory setup" in out.stdout
    assert "network used" not in out.stdout + out.stderr


def test_a_corrupt_file_is_skipped_not_handed_to_tiktoken(tmp_path: Path, monkeypatch) -> None:
    bpe = BPE_FILES["cl100k_base"]
    (tmp_path / bpe.cache_name).write_bytes(b"corrupt")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    directory = tokenizers.find_bpe_dir("cl100k_base")
    assert directory != tmp_path  # fell through to the verified copy
    assert (tmp_path / bpe.cache_name).read_bytes() == b"corrupt"  # and left the file alone


def test_install_copies_verified_files_from_a_wheel(tmp_path: Path) -> None:
    # Build a tiny stand-in wheel from the installed (verified) files, then install from it.
    import zipfile

    source = tokenizers.find_bpe_dir("o200k_base")
    wheel = tmp_path / "litellm-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for bpe in BPE_FILES.values():
            archive.write(
                source / bpe.cache_name, f"litellm/litellm_core_utils/tokenizers/{bpe.cache_name}"
            )
    target = install_bpe_files(tmp_path / "out", wheel=wheel)
    for bpe in BPE_FILES.values():
        assert tokenizers._verified(target / bpe.cache_name, bpe)


def test_install_refuses_a_wheel_with_wrong_files(tmp_path: Path) -> None:
    import zipfile

    wheel = tmp_path / "litellm-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for bpe in BPE_FILES.values():
            archive.writestr(f"litellm/litellm_core_utils/tokenizers/{bpe.cache_name}", b"tampered")
    with pytest.raises(EncodingNotAvailableError, match="sha256"):
        install_bpe_files(tmp_path / "out", wheel=wheel)
    assert not any((tmp_path / "out").iterdir())
