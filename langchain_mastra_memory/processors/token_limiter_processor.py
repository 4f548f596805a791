"""`TokenLimiterProcessor`: Mastra's two-sided limiter, for the prompt and the model's output."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Literal

import tiktoken
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.runnables import RunnableConfig

from ..errors import ConfigurationError, InvalidMessageError, TripWire
from ..tokens.counting import TokenCounter
from .base import MemoryProcessor
from .limiting import limit_messages
from .token_limiter import Window, check_limit, check_window

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
