"""Mastra's counting rule, message by message, and the cache for stored messages."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_mastra_memory import Memory, SQLiteStorage, TokenCounter
from langchain_mastra_memory.tokens.counting import clear_token_cache, message_token_string


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter()


def tokens(counter: TokenCounter, text: str) -> int:
    return len(counter.encoding.encode_ordinary(text))


def test_text_messages(counter: TokenCounter) -> None:
    for message, role in [
        (HumanMessage("What is the capital of France?"), "user"),
        (AIMessage("Paris."), "assistant"),
        (SystemMessage("Be brief."), "system"),
    ]:
        assert message_token_string(message) == (role + message.content, 3.8)
        assert counter.count(message) == pytest.approx(
            tokens(counter, role + message.content) + 3.8
        )


def test_empty_string_content_still_has_text_overhead(counter: TokenCounter) -> None:
    # Mastra: typeof content === "string" adds 3.8 even for "" (when there are no tool calls)
    assert message_token_string(HumanMessage("")) == ("user", 3.8)


def test_tool_call_arguments_object_costs_minus_twelve(counter: TokenCounter) -> None:
    call = AIMessage(
        "", tool_calls=[{"name": "weather", "args": {"city": "東京", "days": 2.0}, "id": "c1"}]
    )
    text, overhead = message_token_string(call)
    assert (
        text == 'assistantweather{"city":"東京","days":2}'
    )  # JSON.stringify: compact, unescaped, 2.0 -> 2
    assert overhead == -12  # no text of its own: no 3.8
    assert counter.count(call) == tokens(counter, text) - 12


def test_tool_call_with_text_and_parallel_calls(counter: TokenCounter) -> None:
    call = AIMessage(
        "Checking both.",
        tool_calls=[
            {"name": "a", "args": {"x": 1}, "id": "c1"},
            {"name": "b", "args": {}, "id": "c2"},
        ],
    )
    assert message_token_string(call) == ('assistantChecking both.a{"x":1}b{}', 3.8 - 24)


def test_tool_results(counter: TokenCounter) -> None:
    assert message_token_string(ToolMessage("sunny", tool_call_id="c1")) == ("toolsunny", 0)
    blocks = ToolMessage([{"type": "text", "text": "sunny"}], tool_call_id="c1")
    assert message_token_string(blocks) == ('tool[{"type":"text","text":"sunny"}]', -12)


def test_content_blocks(counter: TokenCounter) -> None:
    image = {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
    message = HumanMessage([{"type": "text", "text": "look"}, image])
    assert message_token_string(message) == ("userlook[Image: y.png]", 3.8 + 765)  # 4 tiles
    audio = {"type": "audio", "url": "https://x/y.mp3"}  # not an attachment: its JSON
    assert (
        message_token_string(HumanMessage([audio]))[0]
        == 'user{"type":"audio","url":"https://x/y.mp3"}'
    )
    tool_use = AIMessage(
        [{"type": "tool_use", "id": "c1", "name": "f", "input": {"q": 1}}],
        tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c1"}],
    )
    assert message_token_string(tool_use) == ('assistantf{"q":1}', -12)  # counted once, not twice


def test_conversation_overhead(counter: TokenCounter) -> None:
    messages = [HumanMessage("hi"), AIMessage("hello")]
    assert counter.count_all(messages) == pytest.approx(
        24 + sum(counter.count(m) for m in messages)
    )
    assert counter.count_all([]) == 24


def test_counts_differ_between_encodings() -> None:
    text = HumanMessage("Internationalization of naïve café menus — 東京, Москва")
    assert TokenCounter("cl100k_base").count(text) != TokenCounter("o200k_base").count(text)


class CountingEncoding:
    """Wraps a real tiktoken encoding and counts how many strings it tokenizes."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.calls = inner, inner.name, 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return self.inner.encode_ordinary(text)


def test_counting_a_stored_thread_twice_tokenizes_once(tmp_path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [HumanMessage(f"message number {i} about topic {i % 17}") for i in range(10_000)],
        thread_id="t1",
        resource_id="alice",
    )
    clear_token_cache()
    counter = TokenCounter()
    counter.encoding = CountingEncoding(counter.encoding)  # type: ignore[assignment]
    loaded = memory.get_messages(thread_id="t1")  # loading seeds the cache from stored counts
    first = counter.count_all(loaded)
    second = counter.count_all(memory.get_messages(thread_id="t1"))
    assert first == pytest.approx(second)
    assert counter.encoding.calls == 0  # stored counts were used: nothing re-tokenized
    clear_token_cache()
    counter.count_all(loaded)
    counter.count_all(loaded)
    assert counter.encoding.calls == 10_000  # without stored counts: once per message, not twice


def test_an_edited_message_with_the_same_id_is_recounted(counter: TokenCounter) -> None:
    original = HumanMessage("short", id="same-id")
    edited = original.model_copy(
        update={"content": "a much longer text than before, surely more tokens"}
    )
    assert counter.count(edited) > counter.count(original)
    assert counter.count(original) == pytest.approx(tokens(counter, "usershort") + 3.8)


@pytest.mark.parametrize("content", ["", "let me check"])
@pytest.mark.parametrize("args", [{}, {"q": "weather"}, {"q": {"deep": [1, 2]}, "n": 3}])
def test_the_quick_fingerprint_agrees_with_the_token_string(content: str, args: dict) -> None:
    """Cached counts of tool-calling messages are checked without building their token string;
    the overhead it derives must be the one the token string carries, or counts would drift."""
    from langchain_core.messages import AIMessage

    from langchain_mastra_memory.tokens.counting import _fingerprint, message_token_string

    calls = [
        {"name": "lookup", "args": args, "id": "c1"},
        {"name": "other", "args": {}, "id": "c2"},
    ]
    message = AIMessage(content, tool_calls=calls, id="m1")
    assert _fingerprint(message)[1] == message_token_string(message)[1]
    counter = TokenCounter()
    counted = counter.count(message)  # fills the cache ...
    assert counter.count(message) == counted  # ... and the cached path gives the same
    changed = message.model_copy(update={"tool_calls": [{**calls[0], "args": {"q": "rain"}}]})
    assert counter.count(changed) == TokenCounter().count(changed.model_copy(update={"id": None}))
