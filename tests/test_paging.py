"""Mastra 1.x's reading surface: pages of threads and messages, archived threads, search."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import (
    ConfigurationError,
    Memory,
    MemoryStorage,
    ResourceMismatchError,
    ThreadNotFoundError,
)

DAY0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def keyword_memory(storage: MemoryStorage) -> Memory:
    """Recall by words only (no embedder needed), across the resource's threads."""
    return Memory(storage=storage, options={"semantic_recall": {"mode": "keyword", "top_k": 2}})


def day(n: int, hour: int = 0) -> datetime:
    return DAY0 + timedelta(days=n, hours=hour)


def seed(memory: Memory) -> None:
    """alice: five threads (t0..t4, one message a day each, t0 oldest); bob: one thread."""
    for n in range(5):
        memory.create_thread(
            thread_id=f"t{n}", resource_id="alice", title=f"Talk {n}",
            metadata={"project": "x" if n % 2 else "y"},
        )  # fmt: skip
        memory.save_messages(
            [HumanMessage(f"note {n} about topic{n}", id=f"m{n}")],
            thread_id=f"t{n}", resource_id="alice", created_at=[day(n)],
        )  # fmt: skip
        time.sleep(0.002)  # distinct updated_at
    memory.create_thread(thread_id="b0", resource_id="bob", title="Bob's")
    memory.save_messages(
        [HumanMessage("bob's secret kq7731 about topic1", id="bm")], thread_id="b0",
        resource_id="bob",
    )  # fmt: skip


def test_threads_page_with_total_and_has_more(keyword_memory: Memory, call) -> None:
    seed(keyword_memory)
    first = call(keyword_memory, "page_threads", resource_id="alice", per_page=2)
    assert [t.id for t in first.items] == ["t4", "t3"]  # newest updated first
    assert (first.total, first.page, first.per_page, first.has_more) == (5, 0, 2, True)
    last = call(keyword_memory, "page_threads", resource_id="alice", per_page=2, page=2)
    assert ([t.id for t in last.items], last.has_more) == (["t0"], False)
    oldest = call(
        keyword_memory, "page_threads", resource_id="alice", order_by="created_at",
        descending=False, per_page=3,
    )  # fmt: skip
    assert [t.id for t in oldest.items] == ["t0", "t1", "t2"]
    tagged = call(keyword_memory, "page_threads", resource_id="alice", metadata={"project": "x"})
    assert ([t.id for t in tagged.items], tagged.total) == (["t3", "t1"], 2)
    everyone = call(keyword_memory, "page_threads", per_page=None)
    assert everyone.total == 6 and not everyone.has_more
    bobs = call(keyword_memory, "page_threads", resource_id="bob")
    assert [t.id for t in bobs.items] == ["b0"] and bobs.total == 1  # nothing of alice's
    beyond = call(keyword_memory, "page_threads", resource_id="alice", per_page=2, page=9)
    assert (beyond.items, beyond.total, beyond.has_more) == ([], 5, False)


@pytest.mark.parametrize(
    "bad", [{"page": -1}, {"page": "1"}, {"per_page": 0}, {"per_page": 5000},
            {"per_page": None, "page": 1}, {"per_page": True}, {"archived": "yes"}],
)  # fmt: skip
def test_bad_paging_arguments_are_refused(keyword_memory: Memory, bad: dict) -> None:
    with pytest.raises(ConfigurationError):
        keyword_memory.page_threads(resource_id="alice", **bad)


def test_archived_threads_leave_listings_until_restored(keyword_memory: Memory, call) -> None:
    seed(keyword_memory)
    before = keyword_memory.get_thread("t2")
    archived = call(keyword_memory, "archive_thread", "t2", resource_id="alice")
    assert archived.archived and archived.archived_at is not None
    assert archived.updated_at == before.updated_at  # archiving is not activity
    listed = [t.id for t in call(keyword_memory, "list_threads", resource_id="alice")]
    assert "t2" not in listed and len(listed) == 4
    shelf = call(keyword_memory, "page_threads", resource_id="alice", archived=True)
    assert ([t.id for t in shelf.items], shelf.total) == (["t2"], 1)
    assert call(keyword_memory, "page_threads", resource_id="alice", archived=None).total == 5
    again = call(keyword_memory, "archive_thread", "t2")  # twice: still archived, same time
    assert again.archived_at == archived.archived_at
    restored = call(keyword_memory, "unarchive_thread", "t2", resource_id="alice")
    assert not restored.archived and restored.updated_at == before.updated_at
    assert call(keyword_memory, "page_threads", resource_id="alice").total == 5


def test_archiving_checks_the_owner(keyword_memory: Memory, call) -> None:
    seed(keyword_memory)
    with pytest.raises(ResourceMismatchError):
        call(keyword_memory, "archive_thread", "t1", resource_id="bob")
    assert not keyword_memory.get_thread("t1").archived  # untouched
    with pytest.raises(ThreadNotFoundError):
        call(keyword_memory, "unarchive_thread", "nope")


def test_archived_threads_leave_recall_and_search(keyword_memory: Memory, call) -> None:
    seed(keyword_memory)
    keyword_memory.save_messages(
        [HumanMessage("the boat is called Nautilus", id="boat")], thread_id="t1",
        resource_id="alice", created_at=[day(1, 1)],
    )  # fmt: skip
    turn = [HumanMessage("what is the boat called?", id="q")]

    def recalled() -> set[str]:
        found = call(keyword_memory, "recall", thread_id="t4", resource_id="alice",
                     new_messages=turn)  # fmt: skip
        return {m.id for m in found} | {"boat" for m in found if "Nautilus" in str(m.content)}

    assert "boat" in recalled()
    keyword_memory.archive_thread("t1")
    assert "boat" not in recalled()
    hits = call(keyword_memory, "search_messages", "boat Nautilus", resource_id="alice")
    assert hits.total == 0
    shelved = call(
        keyword_memory, "search_messages", "boat Nautilus", resource_id="alice",
        include_archived=True,
    )  # fmt: skip
    assert [h.message.id for h in shelved.items] == ["boat"]
    keyword_memory.unarchive_thread("t1")
    assert "boat" in recalled()


def test_message_pages_either_way_with_a_time_range(keyword_memory: Memory, call) -> None:
    keyword_memory.create_thread(thread_id="t", resource_id="alice")
    messages = [
        (HumanMessage if i % 2 == 0 else AIMessage)(f"message {i}", id=f"x{i}") for i in range(7)
    ]
    keyword_memory.save_messages(
        messages, thread_id="t", resource_id="alice", created_at=[day(i) for i in range(7)]
    )
    page = call(keyword_memory, "page_messages", "t", per_page=3)
    assert ([m.id for m in page.items], page.total, page.has_more) == (["x0", "x1", "x2"], 7, True)
    newest = call(keyword_memory, "page_messages", "t", per_page=3, descending=True)
    assert [m.id for m in newest.items] == ["x6", "x5", "x4"]
    older = call(keyword_memory, "page_messages", "t", per_page=3, descending=True, page=2)
    assert ([m.id for m in older.items], older.has_more) == (["x0"], False)
    ranged = call(
        keyword_memory, "page_messages", "t", since=day(2), until=day(5), resource_id="alice"
    )
    assert ([m.id for m in ranged.items], ranged.total) == (["x2", "x3", "x4"], 3)
    naive = call(keyword_memory, "page_messages", "t", since=day(5).replace(tzinfo=None))
    assert [m.id for m in naive.items] == ["x5", "x6"]  # naive means UTC
    with pytest.raises(ConfigurationError):
        call(keyword_memory, "page_messages", "t", since="2026-03-01")


def test_message_pages_include_ids_and_recalled_messages(keyword_memory: Memory, call) -> None:
    seed(keyword_memory)
    keyword_memory.save_messages(
        [AIMessage("noted, topic2 it is", id="m2b"), HumanMessage("and more", id="m2c")],
        thread_id="t2", resource_id="alice", created_at=[day(2, 1), day(2, 2)],
    )  # fmt: skip
    page = call(keyword_memory, "page_messages", "t4", include=["m2b", "bm"], include_window=1)
    assert [m.id for m in page.items] == ["m4"]
    assert [m.id for m in page.included] == ["m2", "m2b", "m2c"]  # bob's id finds nothing
    recalled = call(keyword_memory, "page_messages", "t4", query="topic1")
    assert "m1" in [m.id for m in recalled.included]
    assert "bm" not in [m.id for m in recalled.included]  # bob's topic1 is never recalled
    assert [m.id for m in recalled.items] == ["m4"]


def test_another_resource_cannot_page_a_thread(keyword_memory: Memory, call) -> None:
    seed(keyword_memory)
    with pytest.raises(ResourceMismatchError):
        call(keyword_memory, "page_messages", "t1", resource_id="bob")
    with pytest.raises(ThreadNotFoundError):
        call(keyword_memory, "page_messages", "nope")


def test_search_pages_with_thread_and_dates(keyword_memory: Memory, call) -> None:
    seed(keyword_memory)
    found = call(keyword_memory, "search_messages", "note topic", resource_id="alice", per_page=2)
    assert found.total == 5 and found.has_more and len(found.items) == 2
    hit = found.items[0]
    assert hit.thread_title == f"Talk {hit.thread_id[1:]}" and hit.created_at.tzinfo
    rest = call(
        keyword_memory, "search_messages", "note topic", resource_id="alice", per_page=2, page=2
    )
    assert len(rest.items) == 1 and not rest.has_more
    seen = {h.message.id for h in found.items} | {h.message.id for h in rest.items}
    assert len(seen) == 3  # pages do not overlap
    one = call(keyword_memory, "search_messages", "note", resource_id="alice", thread_id="t3")
    assert [h.message.id for h in one.items] == ["m3"]
    dated = call(
        keyword_memory, "search_messages", "note", resource_id="alice", since=day(1), until=day(3)
    )
    assert sorted(h.message.id for h in dated.items) == ["m1", "m2"]
    bob = call(keyword_memory, "search_messages", "note topic1", resource_id="bob")
    assert [h.message.id for h in bob.items] == ["bm"]  # never alice's
    with pytest.raises(ResourceMismatchError):
        call(keyword_memory, "search_messages", "note", resource_id="bob", thread_id="t1")
    with pytest.raises(ConfigurationError, match="keyword only"):
        call(keyword_memory, "search_messages", "note", resource_id="alice", mode="vector")
