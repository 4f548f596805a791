"""Mastra's token counting rule for messages, with a process-wide cache for stored messages.

A conversation costs 24 tokens. A message costs the tokens of one string, plus 3.8 when it has
text of its own, minus 12 for each tool-call argument object or tool result that is not a string.
The string is Mastra's role name, the text, then each tool call's name and arguments (JSON as
JavaScript writes it). See `message_token_string` for how LangChain messages map onto that.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> counter = TokenCounter()
    >>> counter.count(HumanMessage("hello"))  # "user" + "hello" is 2 tokens, plus 3.8
    5.8
    >>> counter.count_all([HumanMessage("hello")])  # plus 24 for the conversation
    29.8

What the first `Memory` of a process warms up once, so that its first turns do not pay for it.

Building a `Memory` imports Chroma, ONNX Runtime and LangChain (when nothing had yet): about
140,000 objects, queued for CPython's oldest garbage-collector generation. Left alone, their
first full collection falls inside one of the first turns: at 100,000 messages, turn 16 of the
first 60 after a restart took 88-123 ms, 77-110 ms of it the collection
(`bench/cold_recall_bench.py`, 2026-11-26). Collected once when the first `Memory` is built, it
costs the same at start, and the next full collection is hundreds of turns away (none in the
first 60, measured). The tokenizer stored messages are read with (o200k: ~0.7 s to parse) is
loaded in the background meanwhile (`warm_default_counter`).

Examples:
    >>> warm_up()
    >>> warm_up()  # once per process: the second call does nothing
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterable
from functools import partial
from typing import Any

import tiktoken
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ..errors import EncodingNotAvailableError
from ..messages import TOOL_CALL_BLOCK_TYPES, js_json, mastra_role
from ..pools import on_exit
from .attachments import attachment, description
from .tokenizers import get_encoding

TOKENS_PER_MESSAGE = 3.8

TOKENS_PER_CONVERSATION = 24

TOKENS_SAVED_PER_TOOL_OBJECT = 12

_CACHE_MAX = 500_000

# (encoding name, message id) -> (hash of the token string, overhead, token count)
_cache: dict[tuple[str, str], tuple[int, float, int]] = {}


def message_token_string(message: BaseMessage) -> tuple[str, float]:
    """The string Mastra tokenizes for a message, and the overhead added to its token count.

    The mapping from LangChain to Mastra's message parts:

    - string content is text (an ``AIMessage`` with tool calls counts it only when non-empty,
      since Mastra holds such a message as parts and has no text part for empty text);
    - list content: ``text`` blocks are text, ``tool_use``/``tool_call`` blocks are tool calls,
      an image or file block (`attachments`) counts a short description plus its estimated
      tokens (an image by its size, or the caller's own estimate: Mastra's image-aware rule);
      any other block (audio, ...) is written as its JSON and counts as text;
    - ``AIMessage.tool_calls`` (and invalid ones) are tool calls: name then arguments;
    - a ``ToolMessage``'s content is its tool result: a string as is, otherwise JSON and -12,
      with no 3.8 (a tool message has no text of its own).
    """
    pieces = [mastra_role(message)]
    overhead = 0.0
    content = message.content
    if isinstance(message, ToolMessage):
        if isinstance(content, str):
            pieces.append(content)
        else:
            pieces.append(js_json(content))
            overhead -= TOKENS_SAVED_PER_TOOL_OBJECT
        return "".join(pieces), overhead

    has_text = False
    block_call_ids: set[str] = set()
    if isinstance(content, str):
        pieces.append(content)
        has_text = bool(content) or not _has_tool_calls(message)
    else:
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
                has_text = True
            elif block.get("type") == "text":
                pieces.append(str(block.get("text", "")))
                has_text = True
            elif block.get("type") in TOOL_CALL_BLOCK_TYPES:
                if block.get("id"):
                    block_call_ids.add(block["id"])
                args = block.get("input", block.get("args"))
                overhead += _add_call(pieces, block.get("name", ""), args)
            elif (found := attachment(block)) is not None:  # its estimate, not its bytes
                pieces.append(description(found))
                overhead += found.tokens
                has_text = True
            else:
                pieces.append(js_json(block))
                has_text = True
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            if call.get("id") not in block_call_ids:
                overhead += _add_call(pieces, call["name"], call["args"])
        for bad in message.invalid_tool_calls:
            overhead += _add_call(pieces, bad.get("name") or "", bad.get("args"))
    if has_text:
        overhead += TOKENS_PER_MESSAGE
    return "".join(pieces), overhead


def _has_tool_calls(message: BaseMessage) -> bool:
    return isinstance(message, AIMessage) and bool(message.tool_calls or message.invalid_tool_calls)


def _add_call(pieces: list[str], name: str, args: Any) -> float:
    """Append a tool call as Mastra does; returns its overhead (-12 for non-string arguments)."""
    if not args and args != {}:  # JavaScript skips falsy arguments ("" / null), but {} is truthy
        return 0.0
    pieces.append(name)
    if isinstance(args, str):
        pieces.append(args)
        return 0.0
    pieces.append(js_json(args))
    return -TOKENS_SAVED_PER_TOOL_OBJECT


class TokenCounter:
    """Counts tokens of messages by Mastra's rule with a tiktoken encoding (default o200k_base).

    Counts of messages that have an id are cached process-wide per encoding, and checked against
    a hash of the message's token string, so an edited message is never counted stale.

    Examples:
        >>> from langchain_core.messages import AIMessage
        >>> TokenCounter("cl100k_base").count(AIMessage("hi", id="m1"))  # "assistanthi": 4 + 3.8
        7.8
    """

    def __init__(self, encoding: str | tiktoken.Encoding | None = None) -> None:
        self.encoding = get_encoding(encoding)
        self._name = self.encoding.name

    def count(self, message: BaseMessage) -> float:
        """Tokens of one message by Mastra's rule (cached for messages with an id)."""
        if message.id is None:
            text, overhead = message_token_string(message)
            return len(self.encoding.encode_ordinary(text)) + overhead
        key = (self._name, message.id)
        fingerprint, overhead, built = _fingerprint(message)
        hit = _cache.get(key)
        if hit is not None and hit[0] == fingerprint and hit[1] == overhead:
            return hit[2] + overhead
        text = built if built is not None else message_token_string(message)[0]
        tokens = len(self.encoding.encode_ordinary(text))
        _remember(key, (fingerprint, overhead, tokens))
        return tokens + overhead

    def count_all(self, messages: Iterable[BaseMessage]) -> float:
        """Tokens of a conversation: 24 plus each message's count."""
        return TOKENS_PER_CONVERSATION + sum(self.count(m) for m in messages)

    def seed(self, message: BaseMessage, total: float) -> None:
        """Record a stored count for `message` (its total, overhead included) without tokenizing."""
        if message.id is None:
            return
        fingerprint, overhead, _ = _fingerprint(message)
        _remember((self._name, message.id), (fingerprint, overhead, round(total - overhead)))


def _fingerprint(message: BaseMessage) -> tuple[int, float, str | None]:
    """What a cached count is checked against: a hash of the token string and the overhead.

    A message with plain string content and no tool calls (most of a history) is fingerprinted
    from its role and content without building the token string: Python caches a string's hash,
    so checking a stored count costs no pass over the text. Others build the string (returned,
    so a miss does not build it twice).
    """
    content = message.content
    if isinstance(content, str) and not _has_tool_calls(message):
        overhead = 0.0 if isinstance(message, ToolMessage) else TOKENS_PER_MESSAGE
        return hash((mastra_role(message), content)), overhead, None
    if (
        isinstance(message, AIMessage)
        and isinstance(content, str)
        and not message.invalid_tool_calls
    ):  # string content + tool calls: their JSON (C-encoded) stands for the arguments
        try:
            calls = tuple((c["name"], json.dumps(c["args"])) for c in message.tool_calls)
        except (TypeError, ValueError):
            calls = None
        if calls is not None:
            overhead = TOKENS_PER_MESSAGE if content else 0.0
            for call in message.tool_calls:
                args: object = call["args"]  # (a string from a provider that sends one)
                if (args or args == {}) and not isinstance(args, str):
                    overhead -= TOKENS_SAVED_PER_TOOL_OBJECT
            return hash(("assistant", content, calls)), overhead, None
    text, overhead = message_token_string(message)
    return hash(text), overhead, text


def _remember(key: tuple[str, str], value: tuple[int, float, int]) -> None:
    if len(_cache) >= _CACHE_MAX:
        _cache.clear()
    _cache[key] = value


def clear_token_cache() -> None:
    """Forget every cached count (for tests and benchmarks)."""
    _cache.clear()


_counter: TokenCounter | None = None

_counter_unavailable = False

_warming: threading.Thread | None = None

_warming_lock = threading.Lock()


def warm_default_counter() -> None:
    """Load `default_counter`'s tokenizer in a background thread (parsing its BPE file takes
    ~0.7 s), so that an application's first read after it starts does not pay for it; a read
    that needs it sooner waits for the same load. Once per process; joined at exit.

    Examples:
        >>> warm_default_counter()
        >>> default_counter() is not None
        True
    """
    global _warming
    with _warming_lock:
        if _counter is not None or _counter_unavailable or _warming is not None:
            return
        _warming = threading.Thread(target=default_counter, name="lmm-warm-tokens", daemon=True)
        _warming.start()
    on_exit(partial(_warming.join, 10))  # not inside tiktoken's native code at finalisation


def default_counter() -> TokenCounter | None:
    """The o200k_base counter used for stored token counts, or None if its file is missing."""
    global _counter, _counter_unavailable
    if _counter is None and not _counter_unavailable:
        try:
            _counter = TokenCounter()
        except EncodingNotAvailableError:
            _counter_unavailable = True
    return _counter


_warm = False

_lock = threading.Lock()


def warm_up() -> None:
    """Once per process: start loading the tokenizer, then collect the imports' garbage."""
    global _warm
    with _lock:
        if _warm:
            return
        _warm = True
    warm_default_counter()
    gc.collect()
