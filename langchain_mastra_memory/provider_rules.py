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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from .injected import SOURCE_KEY, is_injected
from .messages import has_content, tool_call_ids, without_tool_calls


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
            and len(calls) < len(message.tool_calls)
        ):
            problems.append(f"message {i}: a tool call without an id")
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
            if has_content(message):
                out.append(message)
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
        if answered != calls and isinstance(message, AIMessage):
            kept, _ = without_tool_calls(message, _unanswered(answered))
        if kept is not None:
            out.append(kept)
            out.extend(results)
    return out


def _unanswered(answered: set[str]) -> Callable[[str | None, str | None], bool]:
    return lambda _name, call: call not in answered


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
        >>> from langchain_mastra_memory.injected import tag
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
