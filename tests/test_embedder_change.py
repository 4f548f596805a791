"""Issue 96: an index keeps the embedder it was built with. Its name carries the model, the
precision and the dimension; a memory whose embedder names another index than the one storage's
vectors are in refuses to search (`EmbedderChangedError`, naming the way out) rather than search
an empty or foreign space, until `backfill_embeddings()` (the CLI's ``reindex``) fills it; what
it writes and deletes meanwhile stays right."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import EmbedderChangedError, Memory, SQLiteStorage

SECRET = "My locker code at the gym is QX-77."


class Named(DeterministicFakeEmbedding):
    """A deterministic embedder with a model name, as a real one reports it."""

    model: str = "first"


def memory(path: Path, model: str) -> Memory:
    return Memory(
        storage=SQLiteStorage(path),
        embedder=Named(size=32, model=model),
        options={"semantic_recall": {"scope": "resource", "mode": "vector", "top_k": 2}},
    )


def built_by_first(path: Path) -> None:
    with memory(path, "first") as first:
        first.create_thread(thread_id="old", resource_id="ada")
        first.save_messages([HumanMessage(SECRET), AIMessage("Noted.")],
                            thread_id="old", resource_id="ada")  # fmt: skip
        assert first.flush()


def recalled(found: list) -> str:
    return " ".join(str(m.content) for m in found)


def test_a_changed_embedder_is_refused_by_name_until_reindexed(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    built_by_first(path)
    second = memory(path, "second")
    question = [HumanMessage("What is my locker code?")]
    with pytest.raises(EmbedderChangedError, match=r"backfill_embeddings\(\).*reindex") as refused:
        second.recall(thread_id="new", resource_id="ada", new_messages=question)
    assert "memory_messages_second_32" in str(refused.value)
    # meanwhile: saving and deleting go on, nothing stored is lost
    second.create_thread(thread_id="other", resource_id="ada")
    second.save_messages([HumanMessage("I ride a blue bike.")], thread_id="other",
                         resource_id="ada")  # fmt: skip
    second.delete_thread("other")
    assert [m.content for m in second.get_messages(thread_id="old")] == [SECRET, "Noted."]
    assert second.backfill_embeddings() == 2
    assert SECRET in recalled(
        second.recall(thread_id="new", resource_id="ada", new_messages=question)
    )
    second.close()


async def test_the_async_turn_is_refused_the_same_and_the_same_embedder_never_is(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    built_by_first(path)
    question = [HumanMessage("What is my locker code?")]
    second = memory(path, "second")
    with pytest.raises(EmbedderChangedError):
        await second.arecall(thread_id="new", resource_id="ada", new_messages=question)
    second.close()
    again = memory(path, "first")  # the embedder that built it: found at once
    assert SECRET in recalled(
        await again.arecall(thread_id="new", resource_id="ada", new_messages=question)
    )
    again.close()
