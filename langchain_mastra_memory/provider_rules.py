"""The shape of a model input that OpenAI and Anthropic accept, checked and enforced once.

The rules (SPEC §3):

1. System content comes first: system messages only as the leading run (Anthropic takes one
   system prompt; langchain-anthropic refuses "multiple non-consecutive system messages").
2. A ``ToolMessage`` answers a call of the ``AIMessage`` right before its run of tool messages
   (OpenAI: "messages with role 'tool' must be a response to a preceding message with
   'tool_calls'"), and answers it once.
3. Every tool call is answered before the next non-tool message (OpenAI: "an assistant message
   with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'").
4. No message is empty: text, a non-text block, or (assistant) a tool call (Anthropic: "all
   messages must have non-empty content").

`provider_safe` enforces them at the end of every assembly: remembered history is repaired
(orphan results and unanswered calls dropped, empty messages skipped), all system content is
merged into one leading system message, and the current turn passes untouched.
`provider_violations` only checks; the test suite's scripted models call it on every input.
`cache_marked` adds Anthropic's prompt-cache breakpoints to an input already made safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from .messages import (
    SOURCE_KEY,
    has_content,
    is_injected,
    source_of,
    tool_call_ids,
    without_tool_calls,
)


def provider_violations(messages: Sequence[BaseMessage]) -> list[str]:
    """Every way `messages` breaks the rules above ([] when a provider would accept them).

    Examples:
        >>> from langchain_core.messages import HumanMessage, ToolMessage
        >>> provider_violations([HumanMessage("hi"), ToolMessage("42", tool_call_id="c1")])
        ["message 1: tool result for call 'c1' does not follow the assistant message that made it"]
    """
    problems: list[str] = []
    if not messages:
        return ["no messages"]
    leading = True
    open_calls: set[str] = set()  # calls of the last assistant message still to be answered
    answered: set[str] = set()
    for i, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            if not leading:
                problems.append(f"message {i}: system message after a non-system message")
            if not has_content(message):
                problems.append(f"message {i}: empty system message")
            continue
        leading = False
        if isinstance(message, ToolMessage):
            call = message.tool_call_id
            if call not in open_calls:
                problems.append(
                    f"message {i}: tool result for call {call!r} does not follow the assistant "
                    "message that made it" + (" (answered twice)" if call in answered else "")
                )
            open_calls.discard(call)
            answered.add(call)
            continue
        if open_calls:
            problems.append(
                f"message {i}: tool calls {sorted(open_calls)} not answered before a "
                f"{message.type} message"
            )
        open_calls, answered = set(), set()
        calls = tool_call_ids(message)
        if (
            isinstance(message, AIMessage)
            and message.tool_calls
            and not all(c.get("id") for c in message.tool_calls)
        ):
            problems.append(f"message {i}: a tool call without an id")
        if isinstance(message, AIMessage) and unsendable_calls(message):
            problems.append(f"message {i}: an invalid tool call without a name or an id")
        if not calls and not has_content(message):
            problems.append(f"message {i}: empty {message.type} message")
        open_calls = set(calls)
    if open_calls:
        problems.append(f"the input ends with unanswered tool calls {sorted(open_calls)}")
    return problems


def repair_history(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Remembered (non-system) messages made valid: orphan tool results dropped, calls without
    results stripped from their assistant message, empty messages skipped. Never mutates."""
    out: list[BaseMessage] = []
    i, n = 0, len(messages)
    while i < n:
        message = messages[i]
        i += 1
        if isinstance(message, ToolMessage):
            continue  # not consumed by the assistant message before it: an orphan
        calls = set(tool_call_ids(message))
        if not calls:
            sendable: BaseMessage | None = message
            if isinstance(message, AIMessage) and unsendable_calls(message):
                sendable, _ = without_tool_calls(message, _unanswered(set()))
            if sendable is not None and has_content(sendable):
                out.append(sendable)
            continue
        results: list[BaseMessage] = []
        answered: set[str] = set()
        while i < n and isinstance(messages[i], ToolMessage):
            result = messages[i]
            i += 1
            call = result.tool_call_id  # type: ignore[attr-defined]
            if call in calls and call not in answered:
                answered.add(call)
                results.append(result)
        kept: BaseMessage | None = message
        if isinstance(message, AIMessage) and (answered != calls or unsendable_calls(message)):
            kept, _ = without_tool_calls(message, _unanswered(answered))
        if kept is not None:
            out.append(kept)
            out.extend(results)
    return out


def _unanswered(answered: set[str]) -> Callable[[str | None, str | None], bool]:
    return lambda name, call: call not in answered or not name


def unsendable_calls(message: AIMessage) -> bool:
    """Whether `message` holds an invalid tool call no provider can be sent: without a name or
    an id (OpenAI requires both; langchain-anthropic leaves such a call out, orphaning its
    result). One with both is sent as an ordinary call (`messages.tool_call_ids`)."""
    return any(not (c.get("name") and c.get("id")) for c in message.invalid_tool_calls)


def merge_system_messages(systems: Sequence[SystemMessage]) -> list[BaseMessage]:
    """One system message holding every distinct system text: the caller's first, then
    memory's blocks. Content blocks (e.g. cache control) are kept as blocks."""
    ordered = [m for m in systems if not is_injected(m)] + [m for m in systems if is_injected(m)]
    unique: list[SystemMessage] = []
    seen: set[str] = set()
    for message in ordered:
        key = repr(message.content)
        if key not in seen and has_content(message):
            seen.add(key)
            unique.append(message)
    if len(unique) <= 1:
        return list(unique)
    if all(isinstance(m.content, str) for m in unique):
        content: str | list[Any] = "\n\n".join(str(m.content) for m in unique)
    else:
        content = [
            block
            for m in unique
            for block in (
                [{"type": "text", "text": m.content}] if isinstance(m.content, str) else m.content
            )
        ]
    metadata = {SOURCE_KEY: "context"} if any(is_injected(m) for m in unique) else {}
    return [SystemMessage(content, response_metadata=metadata)]


def provider_safe(
    remembered: Sequence[BaseMessage], current: Sequence[BaseMessage]
) -> list[BaseMessage]:
    """The model input: one leading system message, the repaired remembered messages, then the
    current turn (its messages are never dropped or changed; its system messages move up).

    Examples:
        >>> from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
        >>> from langchain_mastra_memory.messages import tag
        >>> memory_block = tag(SystemMessage("memory"), "working_memory")
        >>> sent = provider_safe(
        ...     [memory_block, ToolMessage("orphan", tool_call_id="c0")],
        ...     [SystemMessage("Be brief."), HumanMessage("hi")])
        >>> [(m.type, m.content) for m in sent]
        [('system', 'Be brief.\\n\\nmemory'), ('human', 'hi')]
    """
    systems = [m for m in (*remembered, *current) if isinstance(m, SystemMessage)]
    history = repair_history([m for m in remembered if not isinstance(m, SystemMessage)])
    turn = [m for m in current if not isinstance(m, SystemMessage)]
    return [*merge_system_messages(systems), *history, *turn]


EPHEMERAL = {"type": "ephemeral"}
MARKABLE = frozenset({"text", "image", "image_url", "document", "tool_result", "tool_use"})


def cache_marked(
    messages: Sequence[BaseMessage], current: Sequence[BaseMessage]
) -> list[BaseMessage]:
    """`messages` (a `provider_safe` input) with Anthropic's ``cache_control`` breakpoints at
    the end of each part that stays the same from turn to turn: the leading system message, and
    the last message of the history (before this turn's recalled block and the `current` turn).
    Anthropic then caches the input up to each mark, and the next turn, whose input starts the
    same way, reads it from the cache. ``ChatAnthropic`` (and Bedrock's Anthropic models)
    accept the marks as content blocks; other providers may refuse them. Never mutates.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
        >>> sent = cache_marked(
        ...     [SystemMessage("Be brief."), HumanMessage("hi"), AIMessage("hello"),
        ...      HumanMessage("and now?")], [HumanMessage("and now?")])
        >>> sent[2].content
        [{'type': 'text', 'text': 'hello', 'cache_control': {'type': 'ephemeral'}}]
        >>> sent[3].content
        'and now?'
    """
    out = list(messages)
    end = len(out) - sum(1 for m in current if not isinstance(m, SystemMessage))
    if end > 0 and source_of(out[end - 1]) == "semantic_recall":
        end -= 1  # this turn's recalled block changes every turn: not part of the stable start
    start = 1 if out and isinstance(out[0], SystemMessage) else 0
    if start:
        out[0] = with_cache_control(out[0]) or out[0]
    for i in range(end - 1, start - 1, -1):  # the last history message that can carry a mark
        marked = with_cache_control(out[i])
        if marked is not None:
            out[i] = marked
            break
    return out


def with_cache_control(message: BaseMessage) -> BaseMessage | None:
    """A copy of `message` whose last content block carries ``cache_control`` (None when it
    has no block that can: an assistant message that only calls tools)."""
    content = message.content
    blocks: list[Any] = (
        [{"type": "text", "text": content}]
        if isinstance(content, str) and content
        else [dict(b) if isinstance(b, dict) else {"type": "text", "text": b} for b in content]
        if isinstance(content, list)
        else []
    )
    for block in reversed(blocks):
        if block.get("type") in MARKABLE and (block.get("type") != "text" or block.get("text")):
            block["cache_control"] = EPHEMERAL
            return message.model_copy(update={"content": blocks})
    return None
