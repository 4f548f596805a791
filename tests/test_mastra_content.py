"""Mastra's message rows and LangChain messages (issue 94): any conversation we store reads back
from Mastra's rows exactly (every field, id and order), each turn in the rows Mastra's agent
writes (a user row, one assistant row per run of model and tool messages); and rows Mastra or an
older writer left in its other shapes read as provider-valid messages."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)

from langchain_mastra_memory.storage.mastra.content import decode_row, encode_rows, group_rows

texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
names = st.none() | st.sampled_from(["ada", "bob"])


@st.composite
def human(draw: Any, n: int) -> HumanMessage:
    if draw(st.booleans()):
        content: Any = draw(texts)
    else:
        content = [
            {"type": "text", "text": draw(texts)},
            {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
        ]
    return HumanMessage(content, id=f"h{n}", name=draw(names))


@st.composite
def run(draw: Any, n: int) -> list[BaseMessage]:
    """A model's run: steps of text, reasoning and tool calls, each call answered."""
    messages: list[BaseMessage] = []
    for step in range(draw(st.integers(1, 3))):
        calls = [
            {
                "id": f"c{n}-{step}-{k}",
                "name": draw(st.sampled_from(["w", "search"])),
                "args": draw(st.dictionaries(texts, values, max_size=2)),
                "type": "tool_call",
            }
            for k in range(draw(st.integers(0, 2)))
        ]
        kind = AIMessageChunk if draw(st.booleans()) and not calls else AIMessage
        kwargs = {"reasoning_content": draw(texts)} if draw(st.booleans()) else {}
        messages.append(
            kind(
                content=draw(texts),
                id=f"a{n}-{step}",
                tool_calls=calls,
                additional_kwargs=kwargs,
                response_metadata=draw(st.dictionaries(texts, values, max_size=2)),
            )
        )
        for call in calls:
            result = draw(values)
            text = result if isinstance(result, str) else json.dumps(result)
            messages.append(
                ToolMessage(
                    text,
                    tool_call_id=call["id"],
                    id=f"t{call['id']}",
                    status=draw(st.sampled_from(["success", "error"])),
                )
            )
    return messages


@st.composite
def conversations(draw: Any) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(draw(texts), id="s"))
    for n in range(draw(st.integers(1, 4))):
        messages.append(draw(human(n)))
        messages.extend(draw(run(n)))
    return messages


@settings(max_examples=300, deadline=None)
@given(conversations())
def test_a_conversation_reads_back_from_mastras_rows_exactly(messages: list[BaseMessage]) -> None:
    rows = encode_rows(messages)
    assert len(rows) == len(group_rows(messages))
    assert all(row.role in ("user", "assistant", "system") for row in rows)
    back = [m for row in rows for m in decode_row(row.id, row.role, row.text())]
    assert [message_to_dict(m) for m in back] == [message_to_dict(m) for m in messages]
    for row in rows:  # Mastra's shape: JSON as JavaScript writes it, v2 parts
        content = json.loads(row.text())
        assert content["format"] == 2 and isinstance(content["parts"], list)
        assert row.text() == json.dumps(content, ensure_ascii=False, separators=(",", ":"))


def test_a_turn_is_one_user_row_and_one_assistant_row_as_mastras_agent_writes_it() -> None:
    turn = [
        HumanMessage("weather?", id="u"),
        AIMessage(
            "checking", id="a1", tool_calls=[{"id": "c1", "name": "w", "args": {"city": "Paris"}}]
        ),
        ToolMessage('{"tempC": 18}', tool_call_id="c1", id="t1"),
        AIMessage("18C.", id="a2"),
    ]
    user, assistant = encode_rows(turn)
    assert user.content == {
        "format": 2,
        "parts": [{"type": "text", "text": "weather?"}],
        "content": "weather?",
    }
    assert [p["type"] for p in assistant.content["parts"]] == [
        "text",
        "tool-invocation",
        "step-start",
        "text",
    ]
    invocation = assistant.content["parts"][1]["toolInvocation"]
    assert invocation == {
        "state": "result",
        "step": 0,
        "toolCallId": "c1",
        "toolName": "w",
        "args": {"city": "Paris"},
        "result": {"tempC": 18},
    }
    assert assistant.content["content"] == "18C."
    assert assistant.message_ids == ["a1", "t1", "a2"]


MASTRA_SHAPES = [
    # what Mastra's agent wrote in our test run (Mastra 1.31, the AI SDK's mock model)
    (
        "assistant",
        {
            "format": 2,
            "parts": [
                {
                    "type": "tool-invocation",
                    "toolInvocation": {
                        "state": "result",
                        "toolCallId": "call_1",
                        "toolName": "get_weather",
                        "args": {"city": "Paris"},
                        "result": {"tempC": 18},
                    },
                },
                {"type": "step-start", "createdAt": 1796186360567, "model": "mock/mock"},
                {"type": "text", "text": "It is 18C.", "createdAt": 1796186360575},
            ],
            "metadata": {"modelId": "mock-model-id", "provider": "mock-provider"},
            "content": "It is 18C.",
        },
        ["ai", "tool", "ai"],
    ),
    ("user", "plain v1 text", ["human"]),
    ("user", [{"type": "text", "text": "v1 parts"}], ["human"]),
    ("assistant", [{"type": "tool-call", "toolCallId": "c9", "toolName": "w", "args": {}}], ["ai"]),
    (
        "tool",
        [{"type": "tool-result", "toolCallId": "c9", "toolName": "w", "result": 1}],
        ["ai", "tool"],
    ),
    ("assistant", {"format": 2, "parts": [{"type": "step-start"}]}, []),
    ("signal", {"format": 2, "parts": [{"type": "text", "text": "stop"}]}, []),
    ("user", "{truncated json", ["human"]),
    (
        "assistant",
        {"format": 2, "parts": [{"type": "data-x", "data": 1}, {"type": "text", "text": "kept"}]},
        ["ai"],
    ),
]


def test_rows_in_mastras_other_shapes_read_as_provider_valid_messages() -> None:
    for role, content, kinds in MASTRA_SHAPES:
        raw = content if isinstance(content, str) else json.dumps(content)
        messages = decode_row("r1", role, raw)
        assert [m.type for m in messages] == kinds, (role, content)
        assert [m.id for m in messages] == ["r1", "r1~1", "r1~2"][: len(messages)]
        calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
        assert all(m.tool_call_id in calls for m in messages if isinstance(m, ToolMessage))


def test_a_long_thread_mastra_wrote_reads_in_over_several_short_transactions(
    tmp_path, monkeypatch
) -> None:
    """A store Mastra filled (rows as Mastra's agent writes them), opened here the first time:
    read in a bounded number of rows per transaction, the thread whole and in order after."""
    import sqlite3

    from conftest import mastra_rows_disagree

    from langchain_mastra_memory.storage.mastra import MastraStorage, sync
    from langchain_mastra_memory.storage.mastra.layout import MASTRA_TABLES

    path = tmp_path / "mastra.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(MASTRA_TABLES)
        conn.execute(
            "INSERT INTO mastra_threads VALUES ('t1', 'alice', '', NULL, "
            "'2026-01-01T00:00:00.000Z', '2026-01-01T00:01:00.000Z')"
        )
        for n in range(40):
            role = "user" if n % 2 == 0 else "assistant"
            content = {"format": 2, "parts": [{"type": "text", "text": f"message {n}"}]}
            conn.execute(
                "INSERT INTO mastra_messages VALUES (?, 't1', ?, ?, 'v2', ?, 'alice')",
                (f"m{n:02d}", json.dumps(content), role, f"2026-01-01T00:00:{n:02d}.000Z"),
            )
    monkeypatch.setattr(sync, "CATCH_UP_ROWS", 7)
    reads: list[bool] = []
    original = sync.MastraStorage._read_in

    def counted(self, conn, limit=None):  # type: ignore[no-untyped-def]
        reads.append(done := original(self, conn, limit))
        return done

    monkeypatch.setattr(sync.MastraStorage, "_read_in", counted)
    storage = MastraStorage(f"file:{path}")
    assert reads.count(False) >= 40 // 7  # several transactions, each of at most 7 rows
    assert [m.message.content for m in storage.list_messages("t1")] == [
        f"message {n}" for n in range(40)
    ]
    assert mastra_rows_disagree(storage) == []
    storage.close()


def test_a_mastra_row_that_cannot_be_stored_here_is_passed_over_and_the_rest_read_in(
    tmp_path, caplog
) -> None:
    """A row whose id is one of our messages in another thread (ours inside one of our rows):
    warned about, nothing of it stored, the thread's other rows read in, ours untouched."""
    import sqlite3

    from langchain_mastra_memory.storage.mastra import MastraStorage

    path = tmp_path / "mastra.db"
    storage = MastraStorage(f"file:{path}")
    storage.create_thread(thread_id="t1", resource_id="alice")
    turn = [
        HumanMessage("weather?", id="u"),
        AIMessage("", id="a", tool_calls=[{"id": "c", "name": "w", "args": {}}]),
        ToolMessage("18", tool_call_id="c", id="t"),
        AIMessage("18C", id="a2"),
    ]
    storage.save_messages(turn, thread_id="t1", resource_id="alice")
    with sqlite3.connect(path) as conn:  # as Mastra would write them, in a thread of bob's
        conn.execute(
            "INSERT INTO mastra_threads VALUES ('t2', 'bob', '', NULL, "
            "'2026-01-01T00:00:00.000Z', '2099-01-01T00:00:00.000Z')"
        )
        for row_id, text, at in (("t", "clash", "01"), ("ok", "fine", "02")):
            content = json.dumps({"format": 2, "parts": [{"type": "text", "text": text}]})
            conn.execute(
                "INSERT INTO mastra_messages VALUES (?, 't2', ?, 'user', 'v2', ?, 'bob')",
                (row_id, content, f"2026-01-01T00:00:{at}.000Z"),
            )
    assert [m.message.content for m in storage.list_messages("t2")] == ["fine"]
    assert "cannot be read in" in caplog.text
    assert [m.message.id for m in storage.list_messages("t1")] == ["u", "a", "t", "a2"]
    storage.close()
