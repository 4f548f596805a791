"""Mastra itself beside our memory (issue 94): Node 22 (npm's ``node`` package: the machine's
own node may be older than Mastra 1.x's >= 22.13) and ``@mastra/memory`` 1.31 with the
``@mastra/core``, ``@mastra/libsql`` and ``@mastra/pg`` it was built with, pinned by
``tests/mastra/package-lock.json``, installed once per machine with ``npm ci`` into a folder
named by the lockfile's hash and reused by every later session.

``tests/mastra/agent.mjs`` runs one Mastra step per call (an agent's turn with the AI SDK's
mock model, working memory, recall, LibSQL's own ``jsonb()``): JSON in, JSON out.

    side = MastraSide.installed()
    side.run({"op": "generate", "db": path, "thread": "t1", "resource": "alice",
              "input": "hi", "replies": [{"text": "hello"}]})["prompts"]
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock
from langchain_core.embeddings import Embeddings

SOURCE = Path(__file__).parent / "mastra"


def _folder() -> Path:
    lock = (SOURCE / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock + (SOURCE / "package.json").read_bytes()).hexdigest()[:16]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "langchain-mastra-memory-tests" / f"mastra-{digest}"


@dataclass(frozen=True)
class MastraSide:
    folder: Path

    @property
    def node(self) -> Path:
        return self.folder / "node_modules" / ".bin" / "node"

    @classmethod
    def installed(cls) -> MastraSide:
        """Install (once per machine) and return the Mastra side."""
        folder = _folder()
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder) + ".lock"):
            side = cls(folder)
            if not (folder / "installed").exists():
                for name in ("package.json", "package-lock.json"):
                    shutil.copy(SOURCE / name, folder / name)
                subprocess.run(
                    ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                    cwd=folder,
                    check=True,
                    timeout=900,
                    capture_output=True,
                )
                version = subprocess.run(
                    [str(side.node), "--version"], capture_output=True, text=True, check=True
                ).stdout
                assert version.startswith("v22."), version
                (folder / "installed").write_text(version)
            shutil.copy(SOURCE / "agent.mjs", folder / "agent.mjs")
        return side

    def run(self, command: dict[str, Any], *, timeout: float = 120) -> Any:
        """One step on Mastra's side; its JSON answer (a clear error with Node's output)."""
        done = subprocess.run(
            [str(self.node), str(self.folder / "agent.mjs")],
            input=json.dumps(command),
            capture_output=True,
            text=True,
            cwd=self.folder,
            timeout=timeout,
            env={**os.environ, "MASTRA_TELEMETRY_DISABLED": "1"},
        )
        if done.returncode != 0:
            raise RuntimeError(f"Mastra's side failed ({done.returncode}): {done.stderr[-3000:]}")
        return json.loads(done.stdout)


class HashEmbeddings(Embeddings):
    """The bag-of-words embedder of ``agent.mjs``, computed alike here: each lowercase word (a
    run of ``[a-z0-9]``) counted in bucket FNV-1a(word) % 64, scaled to unit length. Both
    runtimes on one embedder, as semantic recall over Mastra's own index requires."""

    dimension = 64
    model = "hash-64"

    def embed_query(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            h = 0x811C9DC5
            for byte in word.encode():
                h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
            vector[h % self.dimension] += 1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0:
            vector[0] = 1.0
            return vector
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]


class LiveMastra:
    """A Mastra process kept running (``agent.mjs --serve``): its LibSQL store stays open
    between commands, as a deployed Mastra agent's does.

        with LiveMastra(side) as live:
            live.run({"op": "generate", ...})
    """

    def __init__(self, side: MastraSide) -> None:
        self.process = subprocess.Popen(
            [str(side.node), str(side.folder / "agent.mjs"), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=side.folder,
            env={**os.environ, "MASTRA_TELEMETRY_DISABLED": "1"},
        )

    def run(self, command: dict[str, Any]) -> Any:
        """One command; its answer (``error`` set when Mastra raised)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the live Mastra process ended ({self.process.poll()})")
        return json.loads(line)

    def __enter__(self) -> LiveMastra:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
