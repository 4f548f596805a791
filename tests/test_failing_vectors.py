"""Failures that show: a vector store that refuses writes makes `flush()` return False, the
backlog's size and the last error are readable (the memory object, the explorer's header, the
CLI), and a search while writes fail warns once instead of silently finding less."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from langchain_mastra_memory import ChromaVectorStore, Memory, SQLiteStorage
from langchain_mastra_memory.cli import app
from langchain_mastra_memory.recall.vector import VectorRecord


def refusing_memory(folder: Path) -> Memory:
    """A memory whose vector collection for alice holds 8-dimensional vectors: every
    384-dimensional write to it is refused."""
    store = ChromaVectorStore(folder / "memory.chroma")
    store.upsert("fixed", [VectorRecord("old", [1.0] * 8, "t0", "alice", "user", 0.0)])
    return Memory(storage=SQLiteStorage(folder / "memory.db"), vector=store,
                  options={"semantic_recall": {"index_name": "fixed"}})  # fmt: skip


def test_refused_writes_show_everywhere(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    memory = refusing_memory(tmp_path)
    memory.save_turn([HumanMessage("my locker code is 4471"), HumanMessage("and the bike")],
                     thread_id="t1", resource_id="alice")  # fmt: skip
    assert memory.flush(60) is False  # the writes were refused: not "all written"
    backlog = memory.vector_backlog()
    assert backlog.pending == 2 and "8-dimensional" in (backlog.last_error or "")
    assert asyncio.run(memory.avector_backlog()) == backlog
    with caplog.at_level(logging.WARNING):
        memory.search_messages("locker", resource_id="alice", mode="keyword")
        memory.search_messages("locker", resource_id="alice", mode="keyword")
    told = [r for r in caplog.records if "vector writes are failing" in r.getMessage()]
    assert len(told) == 1  # once, not on every search

    from starlette.testclient import TestClient

    from langchain_mastra_memory.ui import create_app

    page = TestClient(create_app(memory), base_url="http://127.0.0.1").get("/").text
    assert "2 waiting for vectors" in page and "vector writes failing" in page
    shown = CliRunner().invoke(app, ["backlog", "--db", str(tmp_path / "memory.db")])
    assert shown.exit_code == 0 and "2 messages wait for their vectors" in shown.output


def test_a_healthy_store_flushes_true_and_shows_nothing(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"),
                    options={"semantic_recall": True})  # fmt: skip
    memory.save_turn([HumanMessage("hello")], thread_id="t1", resource_id="alice")
    assert memory.flush(60) is True
    assert memory.vector_backlog().pending == 0 and memory.vector_backlog().last_error is None
