"""The budget walk shared by `TokenLimiter` and `TokenLimiterProcessor` (Mastra's rule).

Walk from the newest message back, keeping each message while the running total stays within
the limit, and stop at the first that does not fit. System messages are always kept and count
first. An ``AIMessage`` with tool calls and the ``ToolMessage``s answering them are one unit:
kept or dropped together. A ``ToolMessage`` whose call is not in the list (an orphan) is
dropped, since no model API accepts a tool result without its call.

With ``window="blocks"`` the kept part then starts at a stable point rather than at the oldest
message that fits, so the limited list starts the same way for many turns (a provider's prompt
cache serves it; `turn.history` does the same for counted windows): among the oldest
third of what fits, the message whose id hashes to the most trailing zero bits (`stable_start`),
a property of the message itself, the same in every process and turn. The list never exceeds
the limit and holds at most a third fewer messages than fit (a window of five messages or fewer
is Mastra's). ``"sliding"`` is Mastra's walk alone.

`TokenLimiter`: keep the newest remembered messages that fit a token budget.

`TokenLimiterProcessor`: Mastra's two-sided limiter, for the prompt and the model's output.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import tiktoken
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig

from ..errors import ConfigurationError, InvalidMessageError, TripWire
from ..messages import ensure_message, message_text, system_positions, tool_call_ids
from ..storage.validation import is_count
from ..tokens.counting import TOKENS_PER_CONVERSATION, TokenCounter
from .base import MemoryProcessor


@dataclass(frozen=True)
class LimitResult:
    """What the walk kept, and the numbers behind it."""

    messages: list[BaseMessage]
    total_tokens: float
    system_tokens: float
    dropped: int


def limit_messages(
    messages: Sequence[BaseMessage],
    counter: TokenCounter,
    limit: int,
    *,
    new_messages: Sequence[BaseMessage] = (),
    window: Literal["blocks", "sliding"] = "sliding",
) -> LimitResult:
    """Keep the newest messages within `limit` tokens (see the module docstring).

    `new_messages` (Mastra's ``newMessages``) are counted against the budget first, newest
    first, but are not part of the result.

    Raises:
        TripWire: the system messages alone (plus the conversation's 24) exceed the limit.
    """
    systems = system_positions(messages)
    system_tokens = sum(counter.count(messages[i]) for i in systems)
    total = TOKENS_PER_CONVERSATION + system_tokens
    if total > limit:
        msg = (
            f"the system messages alone need {total:g} tokens "
            f"({system_tokens:g} + {TOKENS_PER_CONVERSATION} for the conversation), "
            f"over the limit of {limit}"
        )
        raise TripWire(msg, {"system_tokens": system_tokens, "limit": limit, "total_tokens": total})

    room = True
    for message in reversed(new_messages):
        cost = counter.count(message)
        if total + cost > limit:
            room = False
            break
        total += cost

    kept: list[int] = []
    costs: dict[int, float] = {}
    pending: dict[str, list[int]] = {}  # tool results seen, waiting for their call
    for i in range(len(messages) - 1, -1, -1) if room else ():
        message = ensure_message(messages[i], where="the messages to limit")
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, ToolMessage):
            pending.setdefault(message.tool_call_id, []).append(i)
            continue
        unit = [i]
        for call_id in tool_call_ids(message):
            unit += pending.pop(call_id, [])
        tentative = total
        for j in sorted(unit, reverse=True):  # newest first, as Mastra adds them
            costs[j] = counter.count(messages[j])
            tentative += costs[j]
        if tentative > limit:
            break
        total = tentative
        kept += unit
    if window == "blocks":
        start = stable_start(messages, sorted(kept))
        total -= sum(costs[i] for i in kept if i < start)
        kept = [i for i in kept if i >= start]
    result = [messages[i] for i in sorted(set(kept).union(systems))]
    return LimitResult(result, total, system_tokens, len(messages) - len(result))


def cut_level(message: BaseMessage) -> int:
    """How good a place `message` is to start a block window: the trailing zero bits of its
    id's hash (or its text's, without an id), 0 to 32: half the messages are level 0, a
    quarter level 1, an eighth level 2... A property of the message, the same everywhere."""
    key = (message.id or message_text(message)).encode()
    digest = int.from_bytes(hashlib.blake2b(key, digest_size=4).digest(), "little")
    return (digest & -digest).bit_length() - 1 if digest else 32


def stable_start(messages: Sequence[BaseMessage], kept: Sequence[int]) -> int:
    """Where a block window of the `kept` positions (ascending) starts: in the oldest third of
    them, the message of the highest `cut_level` (the oldest on a tie), never a tool result
    (it goes with its call) nor past the newest human message.

    While the conversation grows, that message stays in the range (and so stays the start)
    until it no longer fits or a message of a higher level comes into the range, rarer the
    longer the window: at 40 messages that fit, the start moves on 3 turns in 10, at 100 on
    1 in 8 (a sliding window's moves every turn), and the window holds 13% fewer messages than
    fit on average, never a third fewer.
    """
    if not kept:
        return 0
    humans = [i for i in kept if isinstance(messages[i], HumanMessage)]
    best, best_level = kept[0], -1
    for i in kept[: max(1, len(kept) // 3)]:
        if humans and i >= humans[-1]:
            break
        if isinstance(messages[i], ToolMessage):
            continue
        level = cut_level(messages[i])
        if level > best_level:
            best, best_level = i, level
    return best


logger = logging.getLogger(__name__)


def check_limit(limit: object) -> int:
    """A token limit is a positive int."""
    if not is_count(limit, at_least=1):
        raise ConfigurationError(f"limit must be a positive integer, got {limit!r}")
    return limit


Window = Literal["blocks", "sliding"]


def check_window(window: object) -> Window:
    """A limiter's window is ``"blocks"`` or ``"sliding"``."""
    if window not in ("blocks", "sliding"):
        raise ConfigurationError(f"window must be 'blocks' or 'sliding', got {window!r}")
    return window


class TokenLimiter(MemoryProcessor):
    """Drop the oldest messages until the rest fit in `limit` tokens (Mastra's ``TokenLimiter``).

    Counts with tiktoken (``o200k_base`` by default; a name or a ``tiktoken.Encoding``) by
    Mastra's rule (see `TokenCounter`). Walks from the newest message back and stops at the
    first that does not fit; system messages are always kept and count against the limit; a
    tool call and its results go or stay together, and orphan tool results are dropped. An empty
    history gives an empty list; if no non-system message fits, only the system messages come
    out. Raises `TripWire` (metadata ``system_tokens``, ``limit``) when the system messages
    alone exceed the limit. Put it last in a processor chain, so it measures the final list.

    ``window="sliding"`` (default) is Mastra's rule exactly: the newest messages that fit, so a
    Mastra agent ported here keeps the same history. ``window="blocks"`` starts what is kept at
    a stable point in its oldest third (a message chosen by its id's hash), so the limited
    history starts the same way for many turns and a provider's prompt cache serves it: never
    more than `limit`, never a third fewer messages than fit (`limit_messages`). Memory's own
    ``message_tokens`` option is Mastra's cache-friendly budget (`turn.history`).

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> history = [HumanMessage("a long question " * 20), AIMessage("ok"), HumanMessage("hi")]
        >>> [m.content for m in TokenLimiter(40, window="sliding").invoke(history)]
        ['ok', 'hi']
    """

    name = "TokenLimiter"
    checks_each_message = True  # the walk checks the messages it reaches: cost follows the budget

    def __init__(
        self,
        limit: int,
        *,
        encoding: str | tiktoken.Encoding | None = None,
        window: Window = "sliding",
    ) -> None:
        self.limit = check_limit(limit)
        self.counter = TokenCounter(encoding)
        self.window = check_window(window)

    def __repr__(self) -> str:
        return (
            f"TokenLimiter(limit={self.limit}, encoding={self.counter.encoding.name!r}, "
            f"window={self.window!r})"
        )

    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        """Limit `messages`; ``new_messages=[...]`` are counted first but not returned."""
        result = limit_messages(
            messages,
            self.counter,
            self.limit,
            new_messages=opts.get("new_messages") or (),
            window=self.window,
        )
        if result.dropped:
            logger.info(
                "TokenLimiter: filtered %d/%d messages, token limit of %d exceeded",
                result.dropped,
                len(messages),
                self.limit,
            )
        return result.messages

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        """CPU only: runs `process` inline."""
        return self.process(messages, **opts)


Strategy = Literal["truncate", "abort"]

CountMode = Literal["cumulative", "part"]


class TokenLimiterProcessor(MemoryProcessor):
    """Limit tokens on both sides of a model call (Mastra's ``TokenLimiterProcessor``).

    **Input side** (a list of messages, e.g. ``TokenLimiterProcessor(8000) | model``): the whole
    prompt, new input included, is limited like `TokenLimiter` (newest first, system messages
    kept, tool calls with their results). Raises `TripWire` when the input is empty, when the
    system messages alone exceed the limit, or when no other message fits. ``window`` as for
    `TokenLimiter`: ``"blocks"`` (default) keeps the start still for many turns, ``"sliding"``
    is Mastra's rule.

    **Output side** (``model | TokenLimiterProcessor(200, strategy=...)``): on a stream of
    ``AIMessageChunk``s, counts each chunk's text and tool-call text and, once over the limit,
    stops emitting (``strategy="truncate"``) or raises `TripWire` (``"abort"``);
    ``count_mode="cumulative"`` counts from the start of the stream, ``"part"`` counts each chunk
    alone. On a finished ``AIMessage`` (``invoke``), its text is cut to the budget at a token
    boundary that is also a character boundary.

    Examples:
        >>> from langchain_core.messages import AIMessage
        >>> TokenLimiterProcessor(3).invoke(AIMessage("one two three four five")).content
        'one two three'
    """

    name = "TokenLimiterProcessor"

    def __init__(
        self,
        limit: int,
        *,
        encoding: str | tiktoken.Encoding | None = None,
        strategy: Strategy = "truncate",
        count_mode: CountMode = "cumulative",
        window: Window = "sliding",
    ) -> None:
        self.limit = check_limit(limit)
        self.window = check_window(window)
        if strategy not in ("truncate", "abort"):
            raise ConfigurationError(f"strategy must be 'truncate' or 'abort', got {strategy!r}")
        if count_mode not in ("cumulative", "part"):
            raise ConfigurationError(
                f"count_mode must be 'cumulative' or 'part', got {count_mode!r}"
            )
        self.strategy: Strategy = strategy
        self.count_mode: CountMode = count_mode
        self.counter = TokenCounter(encoding)

    def __repr__(self) -> str:
        return (
            f"TokenLimiterProcessor(limit={self.limit}, strategy={self.strategy!r}, "
            f"count_mode={self.count_mode!r})"
        )

    # -- input side ----------------------------------------------------------------------------
    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        """Limit a whole prompt; `TripWire` when it is empty or nothing but system messages fit."""
        if not messages:
            raise TripWire("no messages to send: the input is empty", {"limit": self.limit})
        result = limit_messages(messages, self.counter, self.limit, window=self.window)
        if not any(m.type != "system" for m in result.messages):
            raise TripWire(
                f"no message fits in the limit of {self.limit} tokens beside the system messages",
                {"limit": self.limit, "system_tokens": result.system_tokens},
            )
        return result.messages

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        """CPU only: runs `process` inline."""
        return self.process(messages, **opts)

    # -- output side ---------------------------------------------------------------------------
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """A message list: limit the prompt. A finished ``AIMessage``: cut its text to the limit."""
        if isinstance(input, BaseMessage):
            return self._call_with_config(self.limit_output, input, config)  # type: ignore[arg-type]
        return super().invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async `invoke`."""
        if isinstance(input, BaseMessage):
            return self.invoke(input, config)
        return await super().ainvoke(input, config, **kwargs)

    def limit_output(self, message: BaseMessage) -> BaseMessage:
        """Cut an assistant message's text to the budget (other messages pass unchanged)."""
        if not isinstance(message, AIMessage):
            return message
        used = 0
        content = message.content
        if isinstance(content, str):
            text, used = self._fit(content, used)
            return message if text == content else message.model_copy(update={"content": text})
        blocks: list[Any] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text, used = self._fit(str(block.get("text", "")), used)
                blocks.append(block if text == block.get("text") else {**block, "text": text})
            else:
                blocks.append(block)
        return message.model_copy(update={"content": blocks})

    def _fit(self, text: str, used: int) -> tuple[str, int]:
        encoding = self.counter.encoding
        tokens = encoding.encode_ordinary(text)
        if used + len(tokens) <= self.limit:
            return text, used + len(tokens)
        if self.strategy == "abort":
            current = used + len(tokens)
            raise TripWire(
                f"Token limit of {self.limit} exceeded (current: {current})",
                {"limit": self.limit, "current_tokens": current},
            )
        room = max(self.limit - used, 0)
        while True:
            cut = encoding.decode_bytes(tokens[:room]).decode("utf-8", errors="ignore")
            count = len(encoding.encode_ordinary(cut))
            if count <= self.limit - used or room == 0:
                return cut, used + count
            room -= 1

    def _chunk_tokens(self, chunk: AIMessageChunk) -> int:
        encoding = self.counter.encoding
        text = (
            chunk.content
            if isinstance(chunk.content, str)
            else "".join(
                str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in chunk.content
            )
        )
        calls = "".join(
            (c.get("name") or "") + (c.get("args") or "") for c in chunk.tool_call_chunks
        )
        return len(encoding.encode_ordinary(text + calls)) if text or calls else 0

    def _admit(self, chunk: AIMessageChunk, state: dict[str, int]) -> bool:
        """Count a streamed chunk: False drops it (truncate); `TripWire` ends the stream (abort)."""
        tokens = self._chunk_tokens(chunk)
        current = state["current"] + tokens if self.count_mode == "cumulative" else tokens
        state["current"] = current
        if current <= self.limit:
            return True
        if self.strategy == "abort":
            raise TripWire(
                f"Token limit of {self.limit} exceeded (current: {current})",
                {"limit": self.limit, "current_tokens": current},
            )
        return False

    def _limit_stream(self, chunks: Iterator[Any]) -> Iterator[Any]:
        state = {"current": 0}
        for chunk in chunks:
            if not isinstance(chunk, AIMessageChunk):
                yield self._not_a_stream(chunk)
            elif self._admit(chunk, state):
                yield chunk

    async def _alimit_stream(self, chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
        state = {"current": 0}
        async for chunk in chunks:
            if not isinstance(chunk, AIMessageChunk):
                yield self._not_a_stream(chunk)
            elif self._admit(chunk, state):
                yield chunk

    def _not_a_stream(self, item: Any) -> Any:
        if isinstance(item, BaseMessage):
            return self.limit_output(item)
        if isinstance(item, Sequence) and not isinstance(item, (str, bytes)):
            return self.process(list(item))
        raise InvalidMessageError(f"{self.name} streams AIMessageChunks, got {type(item).__name__}")

    def transform(
        self, input: Iterator[Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """Limit a stream of ``AIMessageChunk``s (what ``model.stream`` yields)."""
        yield from self._transform_stream_with_config(input, self._limit_stream, config)

    async def atransform(
        self, input: AsyncIterator[Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Async `transform`."""
        async for item in self._atransform_stream_with_config(input, self._alimit_stream, config):
            yield item

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """A single input: yields the result of `invoke`."""
        yield self.invoke(input, config, **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Async `stream`."""
        yield await self.ainvoke(input, config, **kwargs)
