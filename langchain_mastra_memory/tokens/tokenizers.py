"""Offline tiktoken encodings: find the BPE files on this machine, never download them.

tiktoken normally fetches its BPE files over the network on first use. This module looks for
them (under tiktoken's own cache file names) in, in order:

1. ``$TIKTOKEN_CACHE_DIR`` when it is set;
2. ``$LMM_TIKTOKEN_DIR`` when it is set;
3. ``<sys.prefix>/share/langchain-mastra-memory/tiktoken`` (where ``make setup`` and
   ``langchain-mastra-memory setup`` put them);
4. ``$XDG_CACHE_HOME/langchain-mastra-memory/tiktoken`` (default ``~/.cache/...``);
5. the ``litellm`` package, when it is installed (its wheel carries both files).

The files are checked against tiktoken's own sha256 before tiktoken sees them. When none is
found, `get_encoding` raises `EncodingNotAvailableError` naming the command that fixes it.

Examples:
    >>> from langchain_mastra_memory.tokens.tokenizers import get_encoding
    >>> len(get_encoding("o200k_base").encode("hello world"))
    2
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import tiktoken

from ..errors import EncodingNotAvailableError
from .registry_files import cache_dir, environment_dir, install_dir, install_from_wheel, sha256_of

DEFAULT_ENCODING = "o200k_base"

# The registry package whose wheel carries the BPE files, pinned so the files are reproducible.
LITELLM_REQUIREMENT = "litellm==1.109.1"
_LITELLM_TOKENIZER_DIR = "litellm/litellm_core_utils/tokenizers"
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


@dataclass(frozen=True)
class BpeFile:
    """One tiktoken BPE file: its encoding name, tiktoken's cache file name and its sha256."""

    name: str
    sha256: str

    @property
    def cache_name(self) -> str:
        """The file name tiktoken uses in its cache directory (sha1 of the download URL)."""
        return hashlib.sha1(_BLOB_URL.format(name=self.name).encode()).hexdigest()


BPE_FILES: dict[str, BpeFile] = {
    "o200k_base": BpeFile(
        "o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    ),
    "cl100k_base": BpeFile(
        "cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    ),
}

_FIX = (
    "Run `langchain-mastra-memory setup` (or `make setup` in a checkout) to install the "
    "tokenizer files from the package registry, or pass a tiktoken.Encoding you built yourself."
)

_lock = threading.Lock()
_encodings: dict[str, tiktoken.Encoding] = {}


def default_install_dir() -> Path:
    """Where `install_bpe_files` puts the files: inside the running Python environment when it
    can be written, else the user's cache."""
    return install_dir("tiktoken")


def candidate_dirs() -> list[Path]:
    """The directories searched for BPE files, in order."""
    dirs = [
        Path(os.environ[v]) for v in ("TIKTOKEN_CACHE_DIR", "LMM_TIKTOKEN_DIR") if os.environ.get(v)
    ]
    dirs += [environment_dir("tiktoken"), cache_dir("tiktoken")]
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            dirs.append(Path(location) / "litellm_core_utils" / "tokenizers")
    return dirs


def find_bpe_dir(name: str) -> Path:
    """Return a directory holding a verified BPE file for encoding `name`.

    Raises:
        EncodingNotAvailableError: the name is unknown, or no verified file is on this machine.
    """
    bpe = _known(name)
    for directory in candidate_dirs():
        path = directory / bpe.cache_name
        if _verified(path, bpe):
            return directory
    searched = ", ".join(str(d) for d in candidate_dirs())
    msg = f"tiktoken's BPE file for {name!r} is not on this machine (searched: {searched}). {_FIX}"
    raise EncodingNotAvailableError(msg)


def _known(name: str) -> BpeFile:
    if name not in BPE_FILES:
        known = ", ".join(sorted(BPE_FILES))
        msg = (
            f"Unknown or not offline-capable tiktoken encoding {name!r}. "
            f"Use one of: {known}, or pass a tiktoken.Encoding object."
        )
        raise EncodingNotAvailableError(msg)
    return BPE_FILES[name]


def get_encoding(encoding: str | tiktoken.Encoding | None = None) -> tiktoken.Encoding:
    """Return a tiktoken encoding by name (default ``o200k_base``) without touching the network.

    A `tiktoken.Encoding` is returned as is.

    Raises:
        EncodingNotAvailableError: unknown name, or its file is missing (the message names the fix).
    """
    if isinstance(encoding, tiktoken.Encoding):
        return encoding
    name: object = DEFAULT_ENCODING if encoding is None else encoding  # (any, at run time)
    if not isinstance(name, str):
        msg = f"encoding must be a name or a tiktoken.Encoding, not {type(name).__name__}"
        raise EncodingNotAvailableError(msg)
    cached = _encodings.get(name)
    if cached is not None:
        return cached
    directory = find_bpe_dir(name)
    with _lock:
        if name not in _encodings:
            # tiktoken reads its cache directory from the environment at call time; point it at
            # the verified file for this one call so it never falls back to downloading.
            previous = os.environ.get("TIKTOKEN_CACHE_DIR")
            os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
            try:
                _encodings[name] = tiktoken.get_encoding(name)
            finally:
                if previous is None:
                    os.environ.pop("TIKTOKEN_CACHE_DIR", None)
                else:
                    os.environ["TIKTOKEN_CACHE_DIR"] = previous
    return _encodings[name]


def install_bpe_files(target: Path | None = None, *, wheel: Path | None = None) -> Path:
    """Copy the o200k_base and cl100k_base BPE files out of the ``litellm`` wheel into `target`.

    The wheel is fetched with ``pip download --no-deps`` from the configured package index unless
    a local `wheel` is given. Each file is checked against tiktoken's sha256 before it is written.
    Returns the directory written to.
    """
    members = {
        bpe.cache_name: (f"{_LITELLM_TOKENIZER_DIR}/{bpe.cache_name}", bpe.sha256)
        for bpe in BPE_FILES.values()
    }
    return install_from_wheel(
        LITELLM_REQUIREMENT,
        members,
        target or default_install_dir(),
        EncodingNotAvailableError,
        wheel=wheel,
    )


def _verified(path: Path, bpe: BpeFile) -> bool:
    return path.is_file() and sha256_of(path) == bpe.sha256
