"""`TokenLimiterProcessor`: the prompt side (TripWires) and the output side (stream, finished)."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage

from langchain_mastra_memory import (
    ConfigurationError,
    TokenCounter,
    TokenLimiterProcessor,
    TripWire,
)

ENC = TokenCounter().encoding


def tokens(text: str) -> int:
    return len(ENC.encode_ordinary(text))


# -- input side -----------------------------------------------------------------------------------
def test_input_side_keeps_the_newest_including_the_new_input() -> None:
    prompt = [
        SystemMessage("Be brief."),
        HumanMessage("old " * 200),
        AIMessage("ok"),
        HumanMessage("new?"),
    ]
    out = TokenLimiterProcessor(100).invoke(prompt)
    assert out == [prompt[0], prompt[2], prompt[3]]


def test_input_side_trips_on_empty_input() -> None:
    with pytest.raises(TripWire, match="empty"):
        TokenLimiterProcessor(100).invoke([])


def test_input_side_trips_when_system_messages_exceed() -> None:
    with pytest.raises(TripWire) as info:
        TokenLimiterProcessor(30).invoke([SystemMessage("rules " * 50), HumanMessage("hi")])
    assert info.value.metadata["limit"] == 30 and info.value.metadata["system_tokens"] > 30


def test_input_side_trips_when_nothing_else_fits() -> None:
    with pytest.raises(TripWire, match="no message fits"):
        TokenLimiterProcessor(40).invoke([SystemMessage("Be brief."), HumanMessage("long " * 100)])


# -- output side: finished message ----------------------------------------------------------------
def test_finished_message_is_cut_to_the_budget() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 10
    out = TokenLimiterProcessor(12).invoke(AIMessage(text, id="a1"))
    assert out.id == "a1" and text.startswith(out.content)
    assert tokens(out.content) <= 12 and tokens(out.content) >= 11


def test_a_message_within_the_budget_is_returned_as_is() -> None:
    message = AIMessage("short")
    assert TokenLimiterProcessor(50).invoke(message) is message


@pytest.mark.parametrize(
    "text", ["東京タワーと富士山の写真を撮りました。" * 5, "🙂👍🏽🎉 " * 30, "naïve café " * 30]
)
def test_cutting_never_splits_a_character(text: str) -> None:
    for limit in range(1, 25):
        out = TokenLimiterProcessor(limit).invoke(AIMessage(text)).content
        assert text.startswith(out)  # a prefix of real characters (no U+FFFD, no broken bytes)
        assert "\ufffd" not in out
        assert tokens(out) <= limit


def test_block_content_shares_one_budget() -> None:
    message = AIMessage(
        [{"type": "text", "text": "one two three"}, {"type": "text", "text": "four five six"}]
    )
    out = TokenLimiterProcessor(4).invoke(message)
    first, second = out.content[0]["text"], out.content[1]["text"]
    assert first == "one two three" and "four five six".startswith(second)
    assert tokens(first) + tokens(second) == 4
    assert message.content[1]["text"] == "four five six"  # input untouched


def test_finished_message_abort() -> None:
    with pytest.raises(TripWire) as info:
        TokenLimiterProcessor(3, strategy="abort").invoke(AIMessage("one two three four five"))
    assert info.value.metadata == {"limit": 3, "current_tokens": 5}


# -- output side: streams --------------------------------------------------------------------------
WORDS = ["Hello", " there", ",", " how", " are", " you", " today", "?"]


def model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage("".join(WORDS))]))


def chunks() -> list[AIMessageChunk]:
    return [AIMessageChunk(w) for w in WORDS]


def test_stream_truncate_cumulative() -> None:
    out = list(TokenLimiterProcessor(4).transform(iter(chunks())))
    assert "".join(c.content for c in out) == "Hello there, how"


def test_stream_part_mode_counts_each_chunk_alone() -> None:
    stream = [
        AIMessageChunk("a b c d e f"),
        AIMessageChunk("ok"),
        AIMessageChunk(" x y z w v u"),
        AIMessageChunk("!"),
    ]
    out = list(TokenLimiterProcessor(3, count_mode="part").transform(iter(stream)))
    assert [c.content for c in out] == ["ok", "!"]


def test_stream_abort_raises_with_counts() -> None:
    with pytest.raises(TripWire) as info:
        list(TokenLimiterProcessor(4, strategy="abort").transform(iter(chunks())))
    assert info.value.metadata == {"limit": 4, "current_tokens": 5}


def test_stream_counts_tool_call_chunks() -> None:
    stream = [
        AIMessageChunk(
            "",
            tool_call_chunks=[
                {"name": "search", "args": '{"q": "cats and dogs"}', "id": "c1", "index": 0}
            ],
        ),
        AIMessageChunk("after"),
    ]
    limiter = TokenLimiterProcessor(tokens('search{"q": "cats and dogs"}'))
    assert [c.content for c in limiter.transform(iter(stream))] == [""]


def expected_prefix(limit: int) -> str:
    """What the model streams, chunk by chunk, until the running count passes `limit`."""
    kept, used = [], 0
    for chunk in model().stream("hi"):
        used += tokens(chunk.content)
        if used > limit:
            break
        kept.append(chunk.content)
    return "".join(kept)


def test_wrapping_a_chat_model_stream() -> None:
    chain = model() | TokenLimiterProcessor(4)
    streamed = "".join(c.content for c in chain.stream("hi"))
    assert streamed == expected_prefix(4) and 0 < len(streamed) < len("".join(WORDS))


async def test_wrapping_a_chat_model_astream() -> None:
    chain = model() | TokenLimiterProcessor(4)
    assert "".join([c.content async for c in chain.astream("hi")]) == expected_prefix(4)
    with pytest.raises(TripWire):
        async for _ in (model() | TokenLimiterProcessor(2, strategy="abort")).astream("hi"):
            pass


def test_wrapping_a_chat_model_invoke_truncates_the_finished_message() -> None:
    assert (model() | TokenLimiterProcessor(4)).invoke("hi").content == "Hello there, how"


@pytest.mark.parametrize(
    "kwargs", [{"strategy": "stop"}, {"count_mode": "total"}, {"limit": 0}, {"limit": 2.5}]
)
def test_bad_options(kwargs) -> None:
    with pytest.raises(ConfigurationError):
        TokenLimiterProcessor(**{"limit": 10, **kwargs})
