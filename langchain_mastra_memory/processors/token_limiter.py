"""`TokenLimiter`: keep the newest remembered messages that fit a token budget."""

from __future__ import annotations

import logging
from typing import Any, Literal

import tiktoken
from langchain_core.messages import BaseMessage

from ..errors import ConfigurationError
from ..storage.validation import is_count
from ..tokens.counting import TokenCounter
from .base import MemoryProcessor
from .limiting import limit_messages

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
    more than `limit`, never a third fewer messages than fit (`limiting`). Memory's own
    ``message_tokens`` option is Mastra's cache-friendly budget (`turn.budget`).

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
