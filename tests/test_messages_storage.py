"""Messages through Memory and storage: round-trip, order, upsert, update, delete, bad input."""

from __future__ import annotations

import warnings

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_mastra_memory import (
    InvalidMessageError,
    Memory,
    MessageConflictError,
    MessageNotFoundError,
    OrphanToolResultWarning,
    ResourceMismatchError,
    ThreadNotFoundError,
)


def rich_messages() -> list[BaseMessage]:
    """One of every kind, with every field LangChain messages carry."""
    return [
        SystemMessage("You are helpful.", id="sys-1"),
        HumanMessage(
            content=[
                {"type": "text", "text": "What is in this picture? Ünïcödé ✓"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
            additional_kwargs={"source": "mobile"},
            name="alice",
        ),
        AIMessage(
            content="Let me look that up.",
            tool_calls=[
                {
                    "name": "search",
                    "args": {"q": "cat", "n": 3},
                    "id": "call-1",
                    "type": "tool_call",
                },
                {"name": "weather", "args": {"city": "東京"}, "id": "call-2", "type": "tool_call"},
            ],
            response_metadata={"model_name": "gpt-4o", "finish_reason": "tool_calls"},
            usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        ),
        ToolMessage("a cat", tool_call_id="call-1", name="search", artifact={"raw": [1, 2]}),
        ToolMessage([{"type": "text", "text": "sunny"}], tool_call_id="call-2", status="success"),
        AIMessage(
            content=[{"type": "text", "text": "It is a cat, and it is sunny."}],
            additional_kwargs={"refusal": None},
        ),
    ]


def test_every_field_round_trips(memory: Memory, call) -> None:
    call(memory, "create_thread", resource_id="alice", thread_id="t1")
    sent = rich_messages()
    saved = call(memory, "save_messages", sent, thread_id="t1", resource_id="alice")
    loaded = call(memory, "get_messages", thread_id="t1")
    assert [type(m) for m in loaded] == [type(m) for m in sent]
    for original, back, returned in zip(sent, loaded, saved, strict=True):
        assert back.id and back.id == returned.id
        if original.id:
            assert back.id == original.id
        assert back.model_dump(exclude={"id"}) == original.model_dump(exclude={"id"})


def test_ids_assigned_without_mutating_input(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    message = HumanMessage("no id")
    saved = memory.save_messages([message], thread_id="t1", resource_id="alice")
    assert message.id is None
    assert saved[0].id
    stored = memory.storage.list_messages("t1")
    assert stored[0].created_at.tzinfo is not None


def test_chunks_round_trip_as_their_own_type(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    chunk = AIMessageChunk(content="partial", id="c-1")
    memory.save_messages([chunk], thread_id="t1", resource_id="alice")
    (back,) = memory.get_messages(thread_id="t1")
    assert isinstance(back, AIMessageChunk) and back.content == "partial"


def test_get_messages_returns_newest_n_in_chronological_order(memory: Memory, call) -> None:
    call(memory, "create_thread", resource_id="alice", thread_id="t1")
    for i in range(10):  # ten separate saves, like ten turns
        call(memory, "save_messages", [HumanMessage(f"m{i}")], thread_id="t1", resource_id="alice")
    newest = call(memory, "get_messages", thread_id="t1", last_messages=3)
    assert [m.content for m in newest] == ["m7", "m8", "m9"]  # not the oldest 3 (m0..m2)
    everything = call(memory, "get_messages", thread_id="t1")
    assert [m.content for m in everything] == [f"m{i}" for i in range(10)]
    assert call(memory, "get_messages", thread_id="t1", last_messages=0) == []


def test_recall_uses_last_messages_option(storage) -> None:
    memory = Memory(storage=storage, options={"last_messages": 2})
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [HumanMessage(str(i)) for i in range(5)], thread_id="t1", resource_id="alice"
    )
    assert [m.content for m in memory.recall(thread_id="t1")] == ["3", "4"]
    disabled = Memory(storage=storage, options={"last_messages": False})
    assert disabled.recall(thread_id="t1") == []


def test_duplicate_ids_are_an_idempotent_upsert(memory: Memory, call) -> None:
    call(memory, "create_thread", resource_id="alice", thread_id="t1")
    first = [HumanMessage("hi", id="m1"), AIMessage("hello", id="m2")]
    call(memory, "save_messages", first, thread_id="t1", resource_id="alice")
    call(memory, "save_messages", first, thread_id="t1", resource_id="alice")
    call(
        memory,
        "save_messages",
        [AIMessage("hello again", id="m2")],
        thread_id="t1",
        resource_id="alice",
    )
    loaded = call(memory, "get_messages", thread_id="t1")
    assert [(m.id, m.content) for m in loaded] == [("m1", "hi"), ("m2", "hello again")]


def test_same_id_twice_in_one_batch_keeps_the_last(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [HumanMessage("a", id="x"), HumanMessage("b", id="x")], thread_id="t1", resource_id="alice"
    )
    assert [m.content for m in memory.get_messages(thread_id="t1")] == ["b"]


def test_update_and_delete_messages(memory: Memory, call) -> None:
    call(memory, "create_thread", resource_id="alice", thread_id="t1")
    saved = call(
        memory,
        "save_messages",
        [HumanMessage("a"), HumanMessage("b")],
        thread_id="t1",
        resource_id="alice",
    )
    edited = saved[0].model_copy(update={"content": "a (edited)"})
    call(memory, "update_messages", [edited])
    assert [m.content for m in call(memory, "get_messages", thread_id="t1")] == ["a (edited)", "b"]
    assert call(memory, "delete_messages", [saved[1].id, "unknown"]) == 1
    assert [m.content for m in call(memory, "get_messages", thread_id="t1")] == ["a (edited)"]


def test_update_of_unknown_message_changes_nothing(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    (saved,) = memory.save_messages([HumanMessage("keep")], thread_id="t1", resource_id="alice")
    with pytest.raises(MessageNotFoundError):
        memory.update_messages(
            [saved.model_copy(update={"content": "x"}), HumanMessage("?", id="nope")]
        )
    assert [m.content for m in memory.get_messages(thread_id="t1")] == ["keep"]
    with pytest.raises(InvalidMessageError):
        memory.update_messages([HumanMessage("no id")])


def test_saving_to_another_resources_thread_is_refused(memory: Memory, call) -> None:
    call(memory, "create_thread", resource_id="alice", thread_id="t1")
    call(
        memory,
        "save_messages",
        [HumanMessage("secret", id="s1")],
        thread_id="t1",
        resource_id="alice",
    )
    with pytest.raises(ResourceMismatchError):
        call(
            memory,
            "save_messages",
            [HumanMessage("intrusion")],
            thread_id="t1",
            resource_id="mallory",
        )
    with pytest.raises(ResourceMismatchError):
        call(memory, "get_messages", thread_id="t1", resource_id="mallory")
    with pytest.raises(ResourceMismatchError):
        call(memory, "update_messages", [HumanMessage("overwrite", id="s1")], resource_id="mallory")
    with pytest.raises(ResourceMismatchError):
        call(memory, "delete_messages", ["s1"], resource_id="mallory")
    assert [m.content for m in memory.get_messages(thread_id="t1")] == ["secret"]
    assert memory.storage.get_messages_by_id(["s1"], resource_id="mallory") == []


def test_message_id_of_another_thread_is_a_conflict(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.create_thread(resource_id="bob", thread_id="t2")
    memory.save_messages([HumanMessage("alice's", id="m1")], thread_id="t1", resource_id="alice")
    with pytest.raises(MessageConflictError):
        memory.save_messages(
            [HumanMessage("new"), HumanMessage("bob's", id="m1")], thread_id="t2", resource_id="bob"
        )
    assert [m.content for m in memory.get_messages(thread_id="t1")] == ["alice's"]
    assert memory.get_messages(thread_id="t2") == []  # the whole batch was rolled back


def test_unknown_thread(memory: Memory, call) -> None:
    with pytest.raises(ThreadNotFoundError):
        call(memory, "save_messages", [HumanMessage("x")], thread_id="ghost", resource_id="alice")
    with pytest.raises(ThreadNotFoundError):
        call(memory, "get_messages", thread_id="ghost")


@pytest.mark.parametrize(
    "bad",
    [
        ["just a string"],
        [{"role": "user", "content": "a dict"}],
        [HumanMessage("ok"), 42],
        "a bare string",
        HumanMessage("a lone message, not a list"),
    ],
)
def test_non_messages_are_refused_and_nothing_is_stored(memory: Memory, bad) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages([HumanMessage("before")], thread_id="t1", resource_id="alice")
    with pytest.raises(InvalidMessageError):
        memory.save_messages(bad, thread_id="t1", resource_id="alice")
    assert [m.content for m in memory.get_messages(thread_id="t1")] == ["before"]


def test_unserializable_content_is_refused(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    weird = ToolMessage("x", tool_call_id="c", artifact=object())
    with pytest.raises(InvalidMessageError):
        memory.save_messages([weird], thread_id="t1", resource_id="alice")
    assert memory.get_messages(thread_id="t1") == []


def test_orphan_tool_result_is_stored_and_reported(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    call_msg = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a matched result must not warn
        memory.save_messages([call_msg], thread_id="t1", resource_id="alice")
        memory.save_messages(
            [ToolMessage("ok", tool_call_id="c1")], thread_id="t1", resource_id="alice"
        )
    with pytest.warns(OrphanToolResultWarning, match="'nope'"):
        memory.save_messages(
            [ToolMessage("?", tool_call_id="nope")], thread_id="t1", resource_id="alice"
        )
    assert [m.content for m in memory.get_messages(thread_id="t1")] == ["", "ok", "?"]


def test_stored_token_counts_follow_mastras_rule(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages([HumanMessage("hello")], thread_id="t1", resource_id="alice")
    (stored,) = memory.storage.list_messages("t1")
    assert stored.token_count == pytest.approx(5.8)  # "user" + "hello" = 2 tokens, + 3.8


def test_full_text_search_on_every_backend(storage, call) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    for thread, resource in (("t1", "alice"), ("t2", "alice"), ("t3", "bob")):
        storage.create_thread(thread_id=thread, resource_id=resource)
    storage.save_messages(
        [HumanMessage("My cat Tom loves sardines", id="a1"), AIMessage("Noted", id="a2")],
        thread_id="t1",
        resource_id="alice",
    )
    storage.save_messages(
        [HumanMessage("The sardines market opens at nine", id="a3")],
        thread_id="t2",
        resource_id="alice",
    )
    storage.save_messages(
        [HumanMessage("Bob's cat eats sardines too", id="b1")], thread_id="t3", resource_id="bob"
    )
    hits = call(storage, "search_text", "cat sardines", resource_id="alice")
    assert hits[0][0] == "a1"  # both words beat one
    assert {h[0] for h in hits} == {"a1", "a3"}  # never bob's
    assert all(isinstance(h[2], float) for h in hits)
    scoped = call(storage, "search_text", "sardines", resource_id="alice", thread_id="t2")
    assert [h[0] for h in scoped] == ["a3"]
    assert call(storage, "search_text", "the and of", resource_id="alice") == []
    assert call(storage, "search_text", "sardines", resource_id="alice", limit=1)[0][0] in {
        "a1",
        "a3",
    }


def test_large_sqlite_indexes_score_only_the_words_a_search_can_afford(tmp_path) -> None:
    from langchain_core.messages import HumanMessage

    from langchain_mastra_memory import SQLiteStorage
    from langchain_mastra_memory.storage.sqlite.backend import _affordable_words, owner_token

    storage = SQLiteStorage(tmp_path / "m.db")
    for resource in ("a", "b"):
        storage.create_thread(thread_id=f"t-{resource}", resource_id=resource)
        storage.save_messages(
            [HumanMessage(f"weather report number {i}") for i in range(300)]
            + [HumanMessage("weather for the zebra parade", id=f"z-{resource}")],
            thread_id=f"t-{resource}",
            resource_id=resource,
        )
    with storage._transaction(write=False) as conn:
        # store-wide: "weather" (602 messages) does not fit beside "zebra" (2)
        assert _affordable_words(conn, ["weather", "zebra"], None, store_budget=500) == ["zebra"]
        # the rarest word is kept even when it alone is over the budget: "report" (600
        # messages) rather than "weather" (602), whichever comes first in the query
        for words in (["weather", "report"], ["report", "weather"]):
            assert _affordable_words(conn, words, None, store_budget=100) == ["report"]
        # per resource: "weather" is 301 of a's messages
        owner = owner_token("a")
        assert _affordable_words(
            conn, ["weather", "zebra"], owner, store_budget=10_000, owner_budget=100
        ) == ["zebra"]
        assert _affordable_words(
            conn, ["weather", "zebra"], owner, store_budget=10_000, owner_budget=1_000
        ) == ["zebra", "weather"]
    assert storage.search_text("weather zebra", resource_id="a", limit=1)[0][0] == "z-a"
    assert {h[0] for h in storage.search_text("zebra", resource_id="b")} == {"z-b"}


def test_keyword_search_migrates_from_the_unpartitioned_index(tmp_path, monkeypatch) -> None:
    """A file written by schema 2 (one FTS table without owners) is migrated on open: every
    message is searchable by its owner only, and the per-resource counts are filled in."""
    import sqlite3

    from helpers import thread_columns_before_archiving
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_mastra_memory import SQLiteStorage
    from langchain_mastra_memory.storage.sqlite import schema as sqlite_schema

    path = tmp_path / "old.db"
    current = sqlite_schema.MIGRATIONS
    import langchain_mastra_memory.storage.sqlite.backend as sqlite_module

    with monkeypatch.context() as then:  # that schema's migrations and threads, until closed
        then.setattr(sqlite_schema, "MIGRATIONS", current[:2])
        then.setattr(sqlite_module, "MIGRATIONS", current[:2])
        thread_columns_before_archiving(then)
        old = SQLiteStorage(path)
        for resource, fact in (("a", "my zebra is called Stripes"), ("b", "my zebra is Zed")):
            old.create_thread(thread_id=f"t-{resource}", resource_id=resource)
            old.save_messages(
                [HumanMessage(fact, id=f"{resource}1"), AIMessage("noted", id=f"{resource}2")],
                thread_id=f"t-{resource}",
                resource_id=resource,
            )
        old.close()
    assert sqlite3.connect(path).execute("SELECT version FROM memory_schema").fetchone()[0] == 2
    storage = SQLiteStorage(path)
    assert storage.schema_version() == len(current)
    assert [h[0] for h in storage.search_text("zebra", resource_id="a")] == ["a1"]
    assert [h[0] for h in storage.search_text("zebra", resource_id="b")] == ["b1"]
    with storage._transaction(write=False) as conn:
        counts = dict(conn.execute("SELECT id, message_count FROM memory_resources"))
    assert counts == {"a": 2, "b": 2}
    storage.delete_messages(["a1"])
    assert storage.search_text("zebra", resource_id="a") == []
    with storage._transaction(write=False) as conn:
        assert (
            conn.execute("SELECT message_count FROM memory_resources WHERE id = 'a'").fetchone()[0]
            == 1
        )


def test_neighbour_windows_in_order_when_times_tie(storage) -> None:
    """Windows come back in stored order even when a whole session shares one time (as an
    import does), overlapping windows once, and never around another resource's message."""
    from datetime import UTC, datetime

    from langchain_core.messages import HumanMessage

    when = datetime(2026, 1, 1, tzinfo=UTC)
    storage.create_thread(thread_id="t1", resource_id="alice")
    storage.create_thread(thread_id="b1", resource_id="bob")
    ids = [
        s.message.id
        for s in storage.save_messages(
            [HumanMessage(f"m{i}") for i in range(10)], thread_id="t1", resource_id="alice",
            created_at=[when] * 10,
        )
    ]  # fmt: skip
    (bobs,) = storage.save_messages([HumanMessage("b")], thread_id="b1", resource_id="bob")

    def window(hits, before=2, after=2):
        found = storage.message_windows(hits, before=before, after=after, resource_id="alice")
        return [s.message.id for s in found]

    assert window([ids[5]]) == ids[3:8]
    assert window([ids[6], ids[5]]) == ids[3:9]  # overlapping: each message once, in order
    assert window([ids[0]], before=3, after=0) == ids[:1]
    assert window([bobs.message.id, "no-such-id", ids[9]]) == ids[7:]  # bob's: not alice's
    assert window([]) == []


def test_keyword_search_finds_a_thread_whose_matches_rank_below_the_others(storage) -> None:
    """Ranking a pool of the best matches before the thread and role filters must not lose a
    thread whose matches all rank below it: the search then ranks every match."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    storage.create_thread(thread_id="loud", resource_id="alice")
    storage.create_thread(thread_id="quiet", resource_id="alice")
    storage.save_messages(
        [HumanMessage("zebra zebra zebra") for _ in range(40)]
        + [SystemMessage("zebra zebra zebra zebra")],
        thread_id="loud", resource_id="alice",
    )  # fmt: skip
    quiet = storage.save_messages(
        [HumanMessage(f"I once saw a zebra at the zoo with my cousin number {i}") for i in range(3)]
        + [AIMessage("no stripes here")],
        thread_id="quiet", resource_id="alice",
    )  # fmt: skip
    hits = storage.search_text("zebra", resource_id="alice", thread_id="quiet", limit=3)
    assert sorted(h[0] for h in hits) == sorted(s.message.id for s in quiet[:3])
    everywhere = storage.search_text("zebra", resource_id="alice", limit=50)
    assert len(everywhere) == 43  # every user message with the word; never the system one
    assert [h[1] for h in everywhere[:40]] == ["loud"] * 40  # best first


def test_keyword_search_of_a_resource_holding_most_messages_matches_ranking_them_all(
    storage,
) -> None:
    """A resource holding most of the index is searched without its owner token, so the pool
    ranked first holds other resources' and system messages too: whatever they take, a
    search returns exactly the best of the resource's own user and assistant messages."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    storage.create_thread(thread_id="t", resource_id="alice")
    storage.create_thread(thread_id="b", resource_id="bob")
    storage.save_messages(
        [SystemMessage("zebra " * 6) for _ in range(30)]
        + [HumanMessage(f"zebra {'stripes ' * i}seen") for i in range(20)]
        + [AIMessage(f"a zebra {'again ' * i}") for i in range(10)],
        thread_id="t", resource_id="alice",
    )  # fmt: skip
    storage.save_messages(
        [HumanMessage("zebra " * 5) for _ in range(10)], thread_id="b", resource_id="bob"
    )
    every = storage.search_text("zebra", resource_id="alice", limit=100)
    assert len(every) == 30  # the user and assistant messages with the word, alice's only
    for limit in (1, 5, 12, 30):
        hits = storage.search_text("zebra", resource_id="alice", limit=limit)
        assert [h[2] for h in hits] == [h[2] for h in every[:limit]]
        assert {h[0] for h in hits} <= {h[0] for h in every}
