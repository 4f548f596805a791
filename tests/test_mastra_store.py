"""One memory, two runtimes (issue 94): a Mastra agent (Mastra 1.31 itself, in Node, with the AI
SDK's mock model) and our `create_agent` (a provider-strict scripted model) take turns on one
thread of one store through `MastraStorage`: a LibSQL file, and Mastra's PostgresStore
(the session's PostgreSQL, a schema of the test's). Each side's tool calls reach the other's
model paired with their results; working memory written on one side reads on the other; our ids
survive Mastra's rewrite of the thread; LibSQL's binary JSONB reads here as libsql wrote it.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from mastra_side import HashEmbeddings, LiveMastra, MastraSide

from langchain_mastra_memory import (
    ConfigurationError,
    MastraVectorStore,
    Memory,
    SQLiteStorage,
    ThreadNotFoundError,
)
from langchain_mastra_memory.storage.mastra import MastraStorage
from langchain_mastra_memory.storage.mastra.layout import json_value
from langchain_mastra_memory.testing import strict_model

pytestmark = [pytest.mark.mastra, pytest.mark.slow]


@pytest.fixture(scope="module")
def side() -> MastraSide:
    return MastraSide.installed()


@dataclass
class Store:
    """One Mastra store, as each side opens it."""

    path: str | None = None  # a LibSQL file
    dsn: str | None = None  # or PostgreSQL, Mastra's tables in `schema`
    schema: str | None = None

    def command(self) -> dict[str, Any]:
        """What Mastra's side is told (its LibSQLStore's file, or its PostgresStore)."""
        return {"db": self.path} if self.path else {"pg": self.dsn, "schema": self.schema}

    def storage(self) -> MastraStorage:
        if self.path:
            return MastraStorage(f"file:{self.path}")
        return MastraStorage(str(self.dsn), schema_name=str(self.schema))

    def rows(self, sql: str) -> list[tuple]:
        """`sql` on the store itself ({m}: where Mastra's tables are)."""
        if self.path:
            return sqlite3.connect(self.path).execute(sql.format(m="")).fetchall()
        import psycopg

        with psycopg.connect(str(self.dsn)) as conn:
            return [tuple(r) for r in conn.execute(sql.format(m=f'"{self.schema}".')).fetchall()]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        yield Store(path=str(tmp_path / "mastra.db"))
        return

    store = Store(dsn=os.environ["LMM_TEST_POSTGRES_DSN"], schema=f"m_{uuid.uuid4().hex[:12]}")
    yield store
    drop_schemas(store)


def drop_schemas(store: Store) -> None:
    """Mastra's schema and ours beside it."""
    import psycopg

    with psycopg.connect(str(store.dsn), autocommit=True) as conn:
        for schema in (store.schema, f"{store.schema}_langchain"):
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@tool
def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"tempC": 21, "city": city}


def mastra_turn(side: MastraSide, db: Any, text: str, replies: list[dict], **ids: Any) -> Any:
    ids = {"thread": "t1", "resource": "alice", **ids}
    where = db.command() if isinstance(db, Store) else {"db": db}
    return side.run({"op": "generate", **where, "input": text, "replies": replies, **ids})


def our_agent(memory: Memory, *replies: AIMessage) -> Any:
    from langchain.agents import create_agent

    model = strict_model(*replies)
    return model, create_agent(model, tools=[get_weather], middleware=[memory.middleware()])


ALICE = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
PARIS = [
    {"tool": "get_weather", "id": "call_m1", "args": {"city": "Paris"}},
    {"text": "It is 18C in Paris."},
]


def test_a_mastra_turn_with_a_tool_call_reads_here_as_provider_valid_messages(
    side: MastraSide, db: Store
) -> None:
    mastra_turn(side, db, "Weather in Paris?", PARIS)
    memory = Memory(storage=db.storage())
    messages = memory.get_messages(thread_id="t1", resource_id="alice")
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    human, call, result, answer = messages
    assert human.content == "Weather in Paris?"
    assert call.tool_calls[0]["id"] == "call_m1" and call.tool_calls[0]["args"] == {"city": "Paris"}
    assert result.tool_call_id == "call_m1" and '"tempC": 18' in result.content
    assert answer.content == "It is 18C in Paris."
    # our agent continues the thread: its (provider-strict) model is sent Mastra's turn
    model, agent = our_agent(memory, AIMessage("Still 18C.", id="ours-1"))
    agent.invoke({"messages": [HumanMessage("And now?", id="h-ours-1")]}, ALICE)
    sent = model.seen[-1]
    assert [m.id for m in sent if m.id in {x.id for x in messages}] == [m.id for m in messages]
    memory.close()


def test_our_turn_with_a_tool_call_reaches_mastras_next_model_input_paired(
    side: MastraSide, db: Store
) -> None:
    memory = Memory(storage=db.storage())
    call = AIMessage(
        "",
        id="ours-call",
        tool_calls=[{"id": "call_py1", "name": "get_weather", "args": {"city": "Rome"}}],
    )
    _, agent = our_agent(memory, call, AIMessage("21C in Rome.", id="ours-answer"))
    agent.invoke({"messages": [HumanMessage("Weather in Rome?", id="h-rome")]}, ALICE)
    stored = memory.get_messages(thread_id="t1", resource_id="alice")
    memory.close()
    rows = db.rows('SELECT id, role FROM {m}mastra_messages ORDER BY "createdAt"')
    assert rows == [("h-rome", "user"), ("ours-call", "assistant")]  # one row for the turn
    answer = mastra_turn(side, db, "Thanks!", [{"text": "You're welcome."}])
    prompt = [m for m in answer["prompts"][0] if m["role"] != "system"]  # (its instructions)
    assert [m["role"] for m in prompt] == ["user", "assistant", "tool", "assistant", "user"]
    assert prompt[0]["content"][0]["text"] == "Weather in Rome?"
    tool_call = prompt[1]["content"][0]
    assert tool_call["type"] == "tool-call" and tool_call["toolCallId"] == "call_py1"
    assert tool_call["input"] == {"city": "Rome"}
    tool_result = prompt[2]["content"][0]
    assert tool_result["toolCallId"] == "call_py1"
    assert tool_result["output"]["value"] == {"tempC": 21, "city": "Rome"}
    assert prompt[3]["content"][0]["text"] == "21C in Rome."
    assert prompt[4]["content"][0]["text"] == "Thanks!"
    # and back here: our ids, names and order survive, Mastra's new turn follows
    memory = Memory(storage=db.storage())
    again = memory.get_messages(thread_id="t1", resource_id="alice")
    assert again[: len(stored)] == stored
    assert [type(m) for m in again[len(stored) :]] == [HumanMessage, AIMessage]
    assert again[-1].content == "You're welcome."
    memory.close()


def test_turns_alternate_and_neither_side_loses_or_repeats_one(side: MastraSide, db: Store) -> None:
    for turn in range(3):
        mastra_turn(side, db, f"mastra {turn}", [{"text": f"mastra reply {turn}"}])
        memory = Memory(storage=db.storage())
        _, agent = our_agent(memory, AIMessage(f"our reply {turn}", id=f"a{turn}"))
        agent.invoke({"messages": [HumanMessage(f"ours {turn}", id=f"h{turn}")]}, ALICE)
        memory.close()
    answer = side.run(
        {"op": "recall", **db.command(), "thread": "t1", "resource": "alice", "last": 40}
    )
    texts = [m["content"]["parts"][-1]["text"] for m in answer["messages"]]
    expected = [
        x
        for t in range(3)
        for x in (f"mastra {t}", f"mastra reply {t}", f"ours {t}", f"our reply {t}")
    ]
    assert texts == expected
    memory = Memory(storage=db.storage())
    assert [m.content for m in memory.get_messages(thread_id="t1", resource_id="alice")] == (
        expected
    )
    memory.close()


def test_working_memory_written_on_either_side_reads_on_the_other(
    side: MastraSide, db: Store
) -> None:
    mastra_turn(side, db, "hi", [{"text": "hello"}])
    side.run(
        {
            "op": "set_working_memory",
            **db.command(),
            "thread": "t1",
            "resource": "alice",
            "text": "# User\n- Name: Alice\n",
        }
    )
    memory = Memory(storage=db.storage(), options={"working_memory": {"enabled": True}})
    assert memory.get_working_memory(thread_id="t1", resource_id="alice") == (
        "# User\n- Name: Alice\n"
    )
    memory.update_working_memory(
        "# User\n- Name: Alice\n- City: Lyon\n", thread_id="t1", resource_id="alice"
    )
    ours = memory.get_working_memory(thread_id="t1", resource_id="alice")
    memory.close()
    answer = side.run(
        {"op": "get_working_memory", **db.command(), "thread": "t1", "resource": "alice"}
    )
    assert "- City: Lyon" in ours and answer["text"] == ours


def test_binary_jsonb_reads_as_libsql_wrote_it(side: MastraSide, tmp_path: Path) -> None:
    values = [
        {},
        {"source": "node", "nested": {"n": 1, "ok": True}},
        [1, 2.5, -3, 'x"y\n', None],
        {"workingMemory": "# Héllo\n- **a**: 😀"},
        "long" * 100,
        1e300,
        {"k": "v" * 70000},
    ]
    hexes = side.run({"op": "jsonb", "db": str(tmp_path / "j.db"), "values": values})["hex"]
    assert [json_value(bytes.fromhex(h)) for h in hexes] == values


def test_two_live_processes_alternate_200_turns_and_neither_loses_repeats_or_reorders_one(
    side: MastraSide, db: Store
) -> None:
    """A Mastra process holding the store open, ours writing beside it: 100 turns each,
    alternating, every fifth with a tool call on either side."""
    from langchain.agents import create_agent

    memory = Memory(storage=db.storage())
    expected: list[str] = []
    slowest = 0
    with LiveMastra(side) as live:
        for turn in range(100):
            tool = turn % 5 == 0
            replies = (
                [{"tool": "get_weather", "id": f"call_m{turn}", "args": {"city": "Oslo"}}]
                if tool
                else []
            ) + [{"text": f"mastra reply {turn}"}]
            answer = live.run(
                {
                    "op": "generate",
                    **db.command(),
                    "thread": "t1",
                    "resource": "alice",
                    "input": f"mastra {turn}",
                    "replies": replies,
                    "last": 6,
                }
            )
            assert "error" not in answer, answer.get("error")
            slowest = max(slowest, answer["ms"])
            expected += [f"mastra {turn}", f"mastra reply {turn}"]
            calls = [{"id": f"call_p{turn}", "name": "get_weather", "args": {"city": "Rome"}}]
            ours = [AIMessage("", id=f"c{turn}", tool_calls=calls)] if tool else []
            model = strict_model(*ours, AIMessage(f"our reply {turn}", id=f"a{turn}"))
            agent = create_agent(model, tools=[get_weather], middleware=[memory.middleware()])
            agent.invoke({"messages": [HumanMessage(f"ours {turn}", id=f"h{turn}")]}, ALICE)
            expected += [f"ours {turn}", f"our reply {turn}"]
        seen = live.run(
            {"op": "recall", **db.command(), "thread": "t1", "resource": "alice", "last": 1000}
        )
    texts = [m["content"]["content"] for m in seen["messages"]]
    assert texts == expected  # Mastra's view: nothing lost, repeated or out of order
    stored = memory.get_messages(thread_id="t1", resource_id="alice")
    said = [
        m.content
        for m in stored
        if isinstance(m, HumanMessage) or (isinstance(m, AIMessage) and not m.tool_calls)
    ]
    assert said == expected  # ours
    assert len({m.id for m in stored}) == len(stored)
    assert sum(isinstance(m, ToolMessage) for m in stored) == 40  # 20 calls a side, answered
    print(f"\nMastra's slowest turn beside ours: {slowest} ms")  # (a busy one: an error above)
    memory.close()


def mastra_view(side: MastraSide, db: str | Store, thread: str = "t1") -> list[tuple[str, list]]:
    """What Mastra reads of a thread, as its model is sent it: each message's role, and its
    parts' text, reasoning and tool invocations (call, arguments, result), steps kept apart
    (times, the model a step ran and provider metadata dropped)."""
    where = db.command() if isinstance(db, Store) else {"db": db}
    seen = side.run({"op": "recall", **where, "thread": thread, "resource": "alice", "last": 1000})
    keep = ("state", "toolCallId", "toolName", "args", "result")

    def part(p: dict) -> Any:
        if p["type"] == "tool-invocation":
            return {k: p["toolInvocation"].get(k) for k in keep}
        return (p["type"], p.get("text") or p.get("reasoning"))

    return [(m["role"], [part(p) for p in m["content"]["parts"]]) for m in seen["messages"]]


def test_import_then_export_gives_back_rows_mastra_reads_as_before(
    side: MastraSide, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from langchain_mastra_memory.cli import app

    source, ours, back = (str(tmp_path / n) for n in ("mastra.db", "memory.db", "back.db"))
    mastra_turn(side, source, "Weather in Paris?", PARIS)
    mastra_turn(side, source, "And Lyon?", [{"text": "Sunny."}], thread="t2")
    side.run(
        {
            "op": "set_working_memory",
            "db": source,
            "thread": "t1",
            "resource": "alice",
            "text": "# User\n- Name: Alice\n",
        }
    )
    t1 = (
        sqlite3.connect(source)
        .execute("SELECT id, \"createdAt\" FROM mastra_messages WHERE thread_id = 't1'")
        .fetchall()
    )
    observed = [row_id for row_id, _ in t1]  # (t2's rows are newer: not observed)
    side.run({"op": "observe", "db": source, "thread": "t1", "resource": "alice",
              "text": "* Alice asked about Paris", "observed": observed,
              "observed_at": max(at for _, at in t1)})  # fmt: skip
    runner = CliRunner()
    imported = runner.invoke(app, ["import-mastra", source, "--db", ours])
    assert imported.exit_code == 0, imported.output
    assert "imported 2 threads, 6 messages, 1 working memories, 1 observation logs" in (
        imported.output
    )
    memory = Memory(storage=SQLiteStorage(ours))  # our own layout now
    assert [type(m) for m in memory.get_messages(thread_id="t1", resource_id="alice")] == [
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert memory.storage.get_working_memory(resource_id="alice") == "# User\n- Name: Alice\n"
    [log] = memory.storage.observation_log("resource:alice")
    assert log.text == "* Alice asked about Paris" and len(log.message_ids) == 4
    assert memory.storage.unobserved_messages("resource:alice", resource_id="alice",
                                              thread_id="t2")  # fmt: skip
    memory.archive_thread("t2")  # (Mastra has no archive: kept in our tables beside Mastra's)
    memory.close()
    exported = runner.invoke(app, ["export-mastra", back, "--db", ours])
    assert exported.exit_code == 0, exported.output
    assert "exported 2 threads, 6 messages, 1 working memories, 1 observation logs" in (
        exported.output
    )
    record = side.run({"op": "observations", "db": back, "thread": "t1", "resource": "alice"})
    assert record["record"]["activeObservations"] == "* Alice asked about Paris"
    assert sorted(record["record"]["observedMessageIds"]) == sorted(observed)
    for thread in ("t1", "t2"):
        assert mastra_view(side, back, thread) == mastra_view(side, source, thread)
    answer = side.run({"op": "get_working_memory", "db": back, "thread": "t1", "resource": "alice"})
    assert answer["text"] == "# User\n- Name: Alice\n"
    exported_store = MastraStorage(f"file:{back}")
    assert [t.archived for t in exported_store.get_threads(["t1", "t2"]).values()] == [False, True]
    exported_store.close()


def test_an_import_that_cannot_land_whole_lands_not_at_all(
    side: MastraSide, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from langchain_mastra_memory.cli import app

    source, ours = str(tmp_path / "mastra.db"), tmp_path / "memory.db"
    mastra_turn(side, source, "one", [{"text": "1"}], thread="t1")
    mastra_turn(side, source, "two", [{"text": "2"}], thread="t2")
    target = SQLiteStorage(ours)
    target.create_thread(thread_id="t2", resource_id="mallory")  # t2 is someone else's here
    target.close()
    result = CliRunner().invoke(app, ["import-mastra", source, "--db", str(ours)])
    assert result.exit_code != 0 and "t2" in result.output
    target = SQLiteStorage(ours)
    assert target.get_thread("t1") is None  # nothing of the import landed
    assert target.list_messages("t2") == []
    target.close()


@pytest.mark.postgres
def test_a_file_store_exported_to_mastras_postgres_reads_there_as_it_did(
    side: MastraSide, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from langchain_mastra_memory.cli import app

    source, ours = str(tmp_path / "mastra.db"), str(tmp_path / "memory.db")
    mastra_turn(side, source, "Weather in Paris?", PARIS)
    runner = CliRunner()
    assert runner.invoke(app, ["import-mastra", source, "--db", ours]).exit_code == 0
    target = Store(dsn=os.environ["LMM_TEST_POSTGRES_DSN"], schema=f"m_{uuid.uuid4().hex[:12]}")
    try:
        exported = runner.invoke(
            app,
            ["export-mastra", str(target.dsn), "--db", ours, "--schema-name", str(target.schema)],
        )
        assert exported.exit_code == 0, exported.output
        assert mastra_view(side, target) == mastra_view(side, source)
    finally:
        drop_schemas(target)


def test_what_mastra_deletes_leaves_this_side_too(side: MastraSide, db: Store) -> None:
    mastra_turn(side, db, "first", [{"text": "one"}])
    mastra_turn(side, db, "second", [{"text": "two"}])
    mastra_turn(side, db, "elsewhere", [{"text": "three"}], thread="t2")
    memory = Memory(storage=db.storage())  # open beside Mastra: it has read everything in
    assert len(memory.get_messages(thread_id="t1", resource_id="alice")) == 4
    first_reply = db.rows(
        "SELECT id FROM {m}mastra_messages WHERE thread_id = 't1' AND role = 'assistant' "
        'ORDER BY "createdAt" LIMIT 1'
    )[0][0]
    side.run({"op": "delete_messages", **db.command(), "ids": [first_reply]})
    side.run({"op": "delete_thread", **db.command(), "thread": "t2"})
    assert [m.content for m in memory.get_messages(thread_id="t1", resource_id="alice")] == [
        "first",
        "second",
        "two",
    ]
    assert memory.get_thread("t2") is None
    with pytest.raises(ThreadNotFoundError):
        memory.get_messages(thread_id="t2")
    memory.close()


def test_our_tables_never_share_mastras_postgres_schema() -> None:
    """Mastra's PostgresStore takes every memory_messages* table in its schema for one of its
    vector indexes (its deleteThread deletes from them): refused before any connection."""
    with pytest.raises(ConfigurationError, match="schema of their own"):
        MastraStorage("postgresql://nobody@127.0.0.1:1/none", schema_name="mastra", schema="mastra")


@pytest.mark.parametrize("scope", ["resource", "thread"])
def test_an_observation_log_written_on_either_side_reads_on_the_other(
    side: MastraSide, db: Store, scope: str
) -> None:
    from test_observation_hooks import Echo

    mastra_turn(side, db, "I live in Paris with my cat.", [{"text": "Noted."}])
    rows = db.rows('SELECT id FROM {m}mastra_messages ORDER BY "createdAt"')
    ids = {"thread": "t1", "resource": "alice", "scope": scope}
    mastra_log = "* 🔴 (10:00) Alice lives in Paris with her cat"
    side.run({"op": "observe", **db.command(), **ids, "text": mastra_log,
              "observed": [r[0] for r in rows]})  # fmt: skip
    observer = Echo(responses=[AIMessage("unused")], seen=[])
    options = {"model": observer, "message_tokens": 25, "buffer_tokens": None, "scope": scope}
    memory = Memory(storage=db.storage(), options={"observational_memory": options})
    try:
        # our context: Mastra's log in place of the messages it covers
        context = memory.context(
            [HumanMessage("Where do I live?")], thread_id="t1", resource_id="alice"
        )
        texts = [str(m.content) for m in context]
        assert any(mastra_log in t for t in texts[:-1])
        assert not any(t == "I live in Paris with my cat." for t in texts)
        # our Observer: shown Mastra's log, given only what Mastra did not observe
        chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(6)]))
        config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        for text in ["I am flying to Lisbon in April for a conference on databases.",
                     "Please remember I need a window seat and a vegetarian meal."]:  # fmt: skip
            chat.invoke(text, config)
        assert memory.flush(60)
        prompts = [str(m[-1].content) for m in observer.seen]
        assert prompts and mastra_log in prompts[0]
        assert "I live in Paris" not in prompts[0].split("<new-messages>")[-1]
        ours = "\n".join(g.text for g in memory.storage.observation_log(f"{scope}:"
                         + ("alice" if scope == "resource" else "t1")))  # fmt: skip
        assert ours.startswith(mastra_log) and "Said:" in ours
    finally:
        memory.close()
    # Mastra's storage reads the log as ours wrote it (the rows it covers named)
    answer = side.run({"op": "observations", **db.command(), **ids})
    record = answer["record"]
    assert record["activeObservations"] == ours and record["generationCount"] == 0
    assert set(record["observedMessageIds"]) >= {r[0] for r in rows}
    assert record["lastObservedAt"] is not None
    # a reflection on Mastra's side: a new generation, which replaces our log
    side.run({"op": "observe", **db.command(), **ids, "reflect": True,
              "text": "* Alice (Paris, cat) flies to Lisbon in April"})  # fmt: skip
    storage = db.storage()
    key = f"{scope}:" + ("alice" if scope == "resource" else "t1")
    log = storage.observation_log(key)
    assert [g.kind for g in log] == ["reflection"]
    assert log[0].text == "* Alice (Paris, cat) flies to Lisbon in April"
    # and one of ours: Mastra's next generation
    assert storage.claim_observation(key, owner="test", seconds=60)
    storage.commit_reflection(key, owner="test", resource_id="alice", text="* Alice: Lisbon",
                              current_task=None, replaces=[log[0].id], token_count=4)  # fmt: skip
    storage.close()
    answer = side.run({"op": "observations", **db.command(), **ids})
    assert answer["record"]["activeObservations"] == "* Alice: Lisbon"
    assert answer["record"]["originType"] == "reflection"
    assert answer["record"]["generationCount"] == 2
    assert [h["generationCount"] for h in answer["history"]] == [2, 1, 0]


SEMANTIC = {"topK": 2, "range": 0}  # Mastra's semanticRecall, on its own index (agent.mjs)


def recalled(memory: Memory, question: str, thread: str, resource: str = "alice") -> str:
    """The text of what our recall brings a new turn on `thread` for `question`."""
    if memory.get_thread(thread) is None:
        memory.create_thread(thread_id=thread, resource_id=resource)
    found = memory.recall(
        thread_id=thread, resource_id=resource, new_messages=[HumanMessage(question)]
    )
    return "\n".join(str(m.content) for m in found)


def test_semantic_recall_on_mastras_own_index_finds_either_sides_messages(
    side: MastraSide, db: Store
) -> None:
    """One embedder on both sides (the hash embedder of agent.mjs, alike in `HashEmbeddings`):
    our vectors go into the index Mastra's semantic recall queries, in Mastra's shape, and
    Mastra's vectors serve our recall; nothing is embedded twice; deletes on either side take
    the vectors along; another resource finds nothing."""
    mastra_turn(side, db, "My cat Whiskers loves tuna", [{"text": "noted"}], semantic=SEMANTIC)
    storage = db.storage()
    vectors = MastraVectorStore(storage)
    options = {"last_messages": 2, "semantic_recall": {"top_k": 2, "message_range": 0}}
    memory = Memory(storage=storage, vector=vectors, embedder=HashEmbeddings(), options=options)
    memory.create_thread(thread_id="t2", resource_id="alice")
    memory.save_messages(
        [HumanMessage("My dog Rex hates the vacuum cleaner", id="rex"), AIMessage("Ok.", id="ok")],
        thread_id="t2",
        resource_id="alice",
    )
    assert memory.flush()
    index = "{m}memory_messages_64"
    by_message = dict(db.rows(f"SELECT {meta(db, 'message_id')}, count(*) FROM {index} GROUP BY 1"))
    cat_row = db.rows("SELECT id FROM {m}mastra_messages WHERE role = 'user'")[0][0]
    # Mastra's two rows (embedded by Mastra only), our two messages: one vector each
    assert len(by_message) == 4 and set(by_message.values()) == {1}
    assert {cat_row, "rex", "ok"} <= set(by_message)
    [ours] = db.rows(f"SELECT metadata FROM {index} WHERE vector_id = 'rex'")
    written = json_value(ours[0])
    assert written["thread_id"] == "t2" and written["resource_id"] == "alice"
    assert written["role"] == "user" and written["content"].startswith("My dog Rex")
    assert written["created_at"].endswith("Z") and written["lmm_message_id"] == "rex"
    # ours finds Mastra's message through Mastra's vector
    assert "Whiskers loves tuna" in recalled(memory, "what does my cat love", "t3")
    # Mastra's recall finds ours through our vector
    out = mastra_turn(
        side, db, "what does my dog Rex hate", [{"text": "vacuums"}], thread="t4",
        semantic=SEMANTIC,
    )  # fmt: skip
    remembered = [m["content"] for m in out["prompts"][0] if "remembered" in str(m["content"])]
    assert remembered and "My dog Rex hates the vacuum cleaner" in remembered[0]
    # another resource sees none of it, on either side
    assert "Whiskers" not in recalled(memory, "what does my cat love", "b1", resource="bob")
    out = mastra_turn(
        side, db, "what does my cat love", [{"text": "?"}], thread="b2", resource="bob",
        semantic=SEMANTIC,
    )  # fmt: skip
    assert "Whiskers" not in str(out["prompts"][0]) and "Rex" not in str(out["prompts"][0])
    # a thread deleted here takes its vectors out of Mastra's index
    memory.delete_thread("t2")
    assert db.rows(f"SELECT count(*) FROM {index} WHERE {meta(db, 'thread_id')} = 't2'") == [(0,)]
    out = mastra_turn(
        side, db, "what does my dog Rex hate", [{"text": "?"}], thread="t5", semantic=SEMANTIC
    )
    assert "vacuum cleaner" not in str(out["prompts"][0])
    memory.close()
    vectors.close()


async def test_our_side_first_makes_mastras_index_as_mastra_would_async(
    side: MastraSide, db: Store
) -> None:
    """Our vectors written before Mastra has an index: the index made as Mastra's createIndex
    makes it, which Mastra then takes as its own (its search index added on its next open)."""
    storage = db.storage()
    vectors = MastraVectorStore(storage)
    options = {"last_messages": 2, "semantic_recall": {"top_k": 2, "message_range": 0}}
    memory = Memory(storage=storage, vector=vectors, embedder=HashEmbeddings(), options=options)
    await memory.acreate_thread(thread_id="t2", resource_id="alice")
    await memory.asave_messages(
        [HumanMessage("My dog Rex hates the vacuum cleaner", id="rex")],
        thread_id="t2",
        resource_id="alice",
    )
    assert await memory.aflush()
    assert await vectors.acount("any", 64, "alice") == 1
    out = mastra_turn(
        side, db, "what does my dog Rex hate", [{"text": "vacuums"}], thread="t4",
        semantic=SEMANTIC,
    )  # fmt: skip
    assert "My dog Rex hates the vacuum cleaner" in str(out["prompts"][0])
    found = await memory.arecall(
        thread_id="t2", resource_id="alice", new_messages=[HumanMessage("my dog Rex hates what")]
    )
    assert "hates" in "\n".join(str(m.content) for m in found)
    assert await vectors.acount("any", 64, "alice") == 3  # ours, and Mastra's turn's two
    await memory.aclose()
    vectors.close()


def test_mastras_1536_index_name_is_refused_on_a_shared_file(tmp_path: Path) -> None:
    """On a file, Mastra names the 1536-dimensional index 'memory_messages': our own table."""
    storage = MastraStorage(f"file:{tmp_path / 'mastra.db'}")
    vectors = MastraVectorStore(storage)
    with pytest.raises(ConfigurationError, match="indexName"):
        vectors.count("any", 1536, "alice")
    assert MastraVectorStore(storage, index_name="mastra_1536").count("any", 1536) == 0
    storage.close()


def meta(db: Store, key: str) -> str:
    """A key of a vector's metadata, in the store's SQL."""
    return f"json_extract(metadata, '$.{key}')" if db.path else f"(metadata->>'{key}')"


def test_mastras_index_keeps_each_resource_and_thread_apart(db: Store) -> None:
    """The `VectorStore` contract on Mastra's index: search per resource and thread, one hit
    per piece, presence, counts, deletes only of the owner's, another dimension refused."""
    from langchain_mastra_memory import VectorStoreError
    from langchain_mastra_memory.recall.vector import VectorRecord

    def record(message_id: str, vector: list[float], thread: str, owner: str, piece: int = 0):
        return VectorRecord(message_id, vector, thread, owner, "user", 0.0, piece=piece)

    storage = db.storage()
    store = MastraVectorStore(storage)
    store.upsert("any", [
        record("a1", [1.0, 0.0, 0.0], "ta", "alice"),
        record("a1", [0.0, 0.0, 1.0], "ta", "alice", piece=1),
        record("a2", [0.8, 0.6, 0.0], "tb", "alice"),
        record("b1", [1.0, 0.0, 0.0], "tc", "bob"),
    ])  # fmt: skip
    hits = store.query("any", [1.0, 0.1, 0.0], top_k=5, resource_id="alice")
    assert [h.message_id for h in hits] == ["a1", "a2", "a1"]
    assert hits[0].score == pytest.approx(0.995, abs=2e-3) and hits[0].resource_id == "alice"
    only_b = store.query("any", [1, 0, 0], top_k=5, resource_id="alice", thread_id="tb")
    assert [h.message_id for h in only_b] == ["a2"]
    among = store.query("any", [1, 0, 0], top_k=5, resource_id="alice", thread_ids=["tb", "tc"])
    assert [h.message_id for h in among] == ["a2"]  # tc is bob's
    assert [h.message_id for h in store.query("any", [1, 0, 0], top_k=5, resource_id="bob")] == [
        "b1"
    ]
    assert store.query("any", [1, 0, 0], top_k=5, resource_id="carol") == []
    assert store.query("any", [1, 0, 0, 0], top_k=5, resource_id="alice") == []  # no such index
    assert store.present("any", "alice", ["a1", "a2", "b1", "zz"]) == {"a1", "a2"}
    assert store.count("any", 3) == 4 and store.count("any", 3, "alice") == 3
    store.delete("any", ids=["a1"], resource_id="bob")  # not bob's: kept
    assert store.count("any", 3, "alice") == 3
    store.delete("any", ids=["a1"], resource_id="alice")  # every piece
    assert store.count("any", 3, "alice") == 1
    store.delete("any", thread_id="tc")
    assert store.count("any", 3) == 1
    named = MastraVectorStore(storage, index_name="memory_messages_3")  # Mastra's indexName
    with pytest.raises(VectorStoreError, match="holds 3-dimensional vectors"):
        named.upsert("any", [record("m9", [1.0, 0.0], "t", "alice")])
    assert named.count("any", 3) == 1
    store.close()
    named.close()
    storage.close()


async def test_the_mcp_server_and_the_explorer_serve_a_mastra_store(
    side: MastraSide, tmp_path: Path
) -> None:
    """``mcp --mastra`` and ``ui --mastra``: Mastra's own file served to MCP clients and in the
    explorer, one resource each; what an MCP client saves reads in Mastra."""
    import sys

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from starlette.testclient import TestClient

    from langchain_mastra_memory.cli.servers import _served_memory
    from langchain_mastra_memory.ui import create_app

    path = tmp_path / "mastra.db"
    mastra_turn(side, str(path), "My cat Whiskers loves tuna", [{"text": "Noted."}])
    cli = str(Path(sys.executable).with_name("langchain-mastra-memory"))

    async def calls(resource: str, *todo: tuple[str, dict]) -> list[str]:
        params = StdioServerParameters(
            command=cli, args=["mcp", "--mastra", f"file:{path}", "--resource", resource],
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )  # fmt: skip
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results = [await session.call_tool(name, arguments) for name, arguments in todo]
        return [("error: " if r.is_error else "") + "\n".join(
            c.text for c in r.content if hasattr(c, "text")) for r in results]  # fmt: skip

    listed, thread, found, saved = await calls(
        "alice",
        ("list_threads", {}),
        ("read_thread", {"thread_id": "t1"}),
        ("search_memory", {"query": "Whiskers", "mode": "keyword"}),
        ("save_message", {"thread_id": "t1", "text": "and my dog is called Rex"}),
    )
    assert listed.startswith("t1") and "user: My cat Whiskers loves tuna" in thread
    assert "Whiskers loves tuna" in found and not saved.startswith("error")
    texts = [
        part.get("text")
        for m in side.run({"op": "recall", "db": str(path), "thread": "t1", "resource": "alice"})[
            "messages"
        ]
        for part in m["content"]["parts"]
    ]
    assert texts[-1] == "and my dog is called Rex"  # Mastra reads what the MCP client saved
    bobs = await calls(
        "bob",
        ("read_thread", {"thread_id": "t1"}),
        ("search_memory", {"query": "Whiskers", "mode": "keyword"}),
    )
    assert bobs[0].startswith("error") and "loves tuna" not in bobs[1]

    memory = _served_memory(tmp_path / "unused.db", None, f"file:{path}", "public")
    client = TestClient(create_app(memory), base_url="http://127.0.0.1")
    assert "Whiskers loves tuna" in client.get("/r/alice/t/t1").text
    assert client.get("/r/bob/t/t1").status_code == 404
    memory.close()


def test_the_vector_bench_runs_beside_mastra(tmp_path: Path) -> None:
    """`bench/mastra_vector_bench.py` end to end on a small index (a smoke run: nothing timed
    here; the figures are the docs')."""
    import json
    import subprocess
    import sys

    record = tmp_path / "mastra_vectors.json"
    bench = Path(__file__).parents[1] / "bench" / "mastra_vector_bench.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--vectors", "300", "--reps", "3", "--json", str(record)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(record.read_text())
    assert figures["vectors"] == 300 and figures["ours"]["p95_ms"] > 0
    assert "ours / Mastra's" in done.stdout
