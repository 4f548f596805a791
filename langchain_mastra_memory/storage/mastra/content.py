"""Mastra's stored message rows and LangChain messages, both ways.

Mastra 1.x stores a message as one row whose ``content`` is its v2 content (``{"format": 2,
"parts": [...]}``, the AI SDK's UI message parts). There are no tool rows: one **assistant row
holds a whole turn**, its steps split by ``step-start`` parts, each tool call and its result one
``tool-invocation`` part (``state: "result"`` with ``args`` and ``result``). LangChain holds the
same turn as an `AIMessage` with ``tool_calls``, a `ToolMessage` per result, then the `AIMessage`
that answers.

`decode_row` reads any row Mastra may hold, as tolerantly as Mastra itself reads it (v2 content,
v1 plain strings and part lists, AI SDK tool rows, unknown parts passed over), into messages a
provider accepts: every call paired with its result when the row has one. `encode_rows` groups a
thread's messages as Mastra's agent writes them (a user row, then one assistant row for the run
of model and tool messages after it) and renders each group; what the parts cannot carry (our
ids past a row's first, names, metadata, a tool result's exact text) goes under the content's
``metadata.langchain``, so that decoding the row gives back exactly the messages encoded.
Mastra keeps ``metadata`` when it rewrites a row; should it drop ours, the row still decodes
(ids then derived from the row's: ``<row id>``, ``<row id>~1``, ...).

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> turn = [HumanMessage("weather?", id="u1"),
    ...         AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "get_weather",
    ...                                              "args": {"city": "Paris"}}]),
    ...         ToolMessage('{"tempC": 18}', tool_call_id="c1", id="t1"),
    ...         AIMessage("18C in Paris.", id="a2")]
    >>> rows = encode_rows(turn)
    >>> [(row.id, row.role, [part["type"] for part in row.content["parts"]]) for row in rows]
    [('u1', 'user', ['text']), ('a1', 'assistant', ['tool-invocation', 'step-start', 'text'])]
    >>> [m.id for row in rows for m in decode_row(row.id, row.role, row.content)] == [
    ...     "u1", "a1", "t1", "a2"]
    True
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

OURS = "langchain"  # the key of our record under a row's ``metadata``
DERIVED = "~"  # an id derived from a row's: "<row id>~<position>"


@dataclass
class Row:
    """One Mastra message row as we write it: its id, role and v2 content (a dict), and the
    ids of the messages it holds, in order."""

    id: str
    role: str
    content: dict[str, Any]
    message_ids: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The ``content`` column: JSON as JavaScript writes it (compact, non-ASCII kept)."""
        return json.dumps(self.content, ensure_ascii=False, separators=(",", ":"))


# -- reading ------------------------------------------------------------------------------------
def parse_content(raw: Any) -> Any:
    """The ``content`` column parsed (a string that is not JSON stays the string, as Mastra
    keeps it)."""
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def decode_row(row_id: str, role: str, content: Any) -> list[BaseMessage]:
    """The LangChain messages of one Mastra row (`content` parsed or not); an empty list for a
    row that holds nothing a model reads (Mastra's signals, an empty assistant row)."""
    parts, ours = _parts(parse_content(content))
    return _restored(row_id, _messages_of(role, parts), ours)


def _parts(content: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A row's parts, in any of the shapes Mastra reads, and our record (if any)."""
    if isinstance(content, str):
        return ([{"type": "text", "text": content}] if content else []), {}
    if isinstance(content, list):  # v1: AI SDK content parts
        return [_v1_part(part) for part in content if isinstance(part, dict)], {}
    if not isinstance(content, dict):
        return [], {}
    metadata = content.get("metadata")
    ours = metadata.get(OURS) if isinstance(metadata, dict) else None
    parts = content.get("parts")
    if isinstance(parts, list) and parts:
        return [part for part in parts if isinstance(part, dict)], ours or {}
    text = content.get("content")
    if isinstance(text, str) and text:
        return [{"type": "text", "text": text}], ours or {}
    if isinstance(text, list):
        return [_v1_part(part) for part in text if isinstance(part, dict)], ours or {}
    return [], ours or {}


def _v1_part(part: dict[str, Any]) -> dict[str, Any]:
    """An AI SDK (v1) content part as the v2 part Mastra turns it into."""
    kind = part.get("type")
    if kind == "tool-call":
        invocation = {
            "state": "call",
            "toolCallId": part.get("toolCallId"),
            "toolName": part.get("toolName"),
            "args": part.get("args") or {},
        }
        return {"type": "tool-invocation", "toolInvocation": invocation}
    if kind == "tool-result":
        invocation = {
            "state": "result",
            "toolCallId": part.get("toolCallId"),
            "toolName": part.get("toolName"),
            "args": {},
            "result": part.get("result", part.get("output")),
        }
        return {"type": "tool-invocation", "toolInvocation": invocation}
    if kind == "image":
        return {
            "type": "file",
            "mimeType": part.get("mimeType") or "image/png",
            "data": part.get("image"),
        }
    return part


def _joined_text(parts: Sequence[dict[str, Any]]) -> str:
    return "".join(str(p.get("text") or "") for p in parts if p.get("type") == "text")


def _user_content(parts: Sequence[dict[str, Any]]) -> str | list[str | dict[str, Any]]:
    """A user row's content: its text, or content blocks when it holds files."""
    if all(p.get("type") == "text" for p in parts):
        return _joined_text(parts)
    blocks: list[str | dict[str, Any]] = []
    for part in parts:
        if part.get("type") == "text":
            blocks.append({"type": "text", "text": str(part.get("text") or "")})
        elif part.get("type") == "file":
            blocks.append(_file_block(part))
    return blocks


def _file_block(part: dict[str, Any]) -> dict[str, Any]:
    """A ``file`` part as a LangChain content block (an image block for an image)."""
    mime = str(part.get("mimeType") or part.get("mediaType") or "application/octet-stream")
    data = str(part.get("data") or part.get("url") or "")
    kind = "image" if mime.startswith("image/") else "file"
    if data.startswith(("http://", "https://")):
        return {"type": kind, "url": data, "mime_type": mime}
    if data.startswith("data:") and "," in data:
        data = data.split(",", 1)[1]
    return {"type": kind, "base64": data, "mime_type": mime}


def _assistant_messages(parts: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """An assistant row's steps: for each, the model's message (text, reasoning, calls) and a
    `ToolMessage` per call that has its result."""
    messages: list[BaseMessage] = []
    for step in _steps(parts):
        texts = [str(p.get("text") or "") for p in step if p.get("type") == "text"]
        reasoning = [_reasoning_text(p) for p in step if p.get("type") == "reasoning"]
        invocations = [
            p["toolInvocation"]
            for p in step
            if p.get("type") == "tool-invocation" and isinstance(p.get("toolInvocation"), dict)
        ]
        calls = [_tool_call(inv) for inv in invocations]
        if not (texts or reasoning or calls):
            continue
        kwargs = {"reasoning_content": "".join(reasoning)} if reasoning else {}
        messages.append(AIMessage("".join(texts), tool_calls=calls, additional_kwargs=kwargs))
        for invocation, call in zip(invocations, calls, strict=True):
            if invocation.get("state") == "result" or "result" in invocation:
                messages.append(
                    ToolMessage(
                        _result_text(invocation.get("result")),
                        tool_call_id=call["id"],
                        name=call["name"],
                    )
                )
    return messages


def _steps(parts: Sequence[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """The parts between ``step-start`` parts; a step's results after its calls, so a call that
    a later part answers stays in the step that made it."""
    step: list[dict[str, Any]] = []
    for part in parts:
        if part.get("type") == "step-start":
            if step:
                yield step
            step = []
        else:
            step.append(part)
    if step:
        yield step


def _reasoning_text(part: dict[str, Any]) -> str:
    text = part.get("reasoning") or part.get("text")
    if isinstance(text, str):
        return text
    details = part.get("details") or []
    return "".join(str(d.get("text") or "") for d in details if isinstance(d, dict))


def _tool_call(invocation: dict[str, Any]) -> dict[str, Any]:
    args = invocation.get("args")
    if isinstance(args, str):
        parsed = parse_content(args)
        args = parsed if isinstance(parsed, dict) else {"input": args}
    return {
        "id": str(invocation.get("toolCallId") or ""),
        "name": str(invocation.get("toolName") or ""),
        "args": args if isinstance(args, dict) else {},
        "type": "tool_call",
    }


def _result_text(result: Any) -> str:
    """A tool's result as a `ToolMessage`'s text (JSON for anything but a string)."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict) and result.get("type") in ("json", "text") and "value" in result:
        return _result_text(result["value"])  # an AI SDK v5 tool output
    return json.dumps(result, ensure_ascii=False)


def _restored(row_id: str, messages: list[BaseMessage], ours: dict[str, Any]) -> list[BaseMessage]:
    """Ids (the row's, then derived) and what our record kept of each message."""
    kept = ours.get("messages")
    extras: list[Any] = kept if isinstance(kept, list) else []
    restored = []
    for position, message in enumerate(messages):
        data = message_to_dict(message)
        data["data"]["id"] = row_id if position == 0 else f"{row_id}{DERIVED}{position}"
        extra = extras[position] if position < len(extras) else None
        if isinstance(extra, dict) and _same_kind(str(extra.get("type")), data["type"]):
            data["type"] = extra["type"]  # (a chunk's type: AIMessageChunk for "ai")
            data["data"].update(extra.get("data") or {})
        restored.append(messages_from_dict([data])[0])
    return restored


def _same_kind(recorded: str, decoded: str) -> bool:
    """Whether our record of a message fits the one decoded there (the same type, or its
    chunk: Mastra may have rewritten the row, moving what sits where)."""
    return recorded == decoded or recorded.lower() == f"{decoded}messagechunk"


# -- writing ------------------------------------------------------------------------------------
def group_rows(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Messages in Mastra's rows: each user or system message a row of its own, and each run
    of model and tool messages after one a single assistant row."""
    groups: list[list[BaseMessage]] = []
    for message in messages:
        joins = isinstance(message, (AIMessage, ToolMessage))
        if joins and groups and isinstance(groups[-1][-1], (AIMessage, ToolMessage)):
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


def encode_rows(messages: Sequence[BaseMessage]) -> list[Row]:
    """`messages` (of one thread, in order, each with an id) as Mastra's rows."""
    return [encode_row(group) for group in group_rows(messages)]


def encode_row(group: Sequence[BaseMessage], row_id: str | None = None) -> Row:
    """One group of `group_rows` as a row (its id the first message's, unless given)."""
    first = group[0]
    row_id = row_id or str(first.id)
    if isinstance(first, HumanMessage):
        role, parts = "user", _user_parts(first)
    elif isinstance(first, SystemMessage):
        role, parts = "system", [{"type": "text", "text": _text_of(first)}]
    else:
        role, parts = "assistant", _assistant_parts(group)
    content: dict[str, Any] = {"format": 2, "parts": parts}
    text = _final_text(role, group)
    if text:
        content["content"] = text
    record = _record(row_id, role, content, group)
    if record:
        content["metadata"] = {OURS: {"messages": record}}
    return Row(row_id, role, content, [str(m.id) for m in group])


def _text_of(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(
        str(b.get("text") or "")
        if isinstance(b, dict) and b.get("type") == "text"
        else (b if isinstance(b, str) else "")
        for b in message.content
    )


def _final_text(role: str, group: Sequence[BaseMessage]) -> str:
    """``content.content``: the row's text (for an assistant row, its last step's)."""
    if role != "assistant":
        return _text_of(group[0])
    answers = [m for m in group if isinstance(m, AIMessage) and _text_of(m)]
    return _text_of(answers[-1]) if answers else ""


def _user_parts(message: BaseMessage) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"type": "text", "text": message.content}]
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, str):
            parts.append({"type": "text", "text": block})
        elif block.get("type") == "text":
            parts.append({"type": "text", "text": str(block.get("text") or "")})
        elif block.get("type") in ("image", "file", "image_url"):
            parts.append(_file_part(block))
    return parts


def _file_part(block: dict[str, Any]) -> dict[str, Any]:
    """A content block (LangChain's ``image``/``file``, OpenAI's ``image_url``) as a ``file``
    part: its data inline (base64) or its URL, as Mastra stores them."""
    if block.get("type") == "image_url":
        url = block.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        mime = "image/png"
        if isinstance(url, str) and url.startswith("data:") and ";" in url:
            mime = url[5 : url.index(";")]
        return {"type": "file", "mimeType": mime, "data": str(url or "")}
    mime = block.get("mime_type") or (
        "image/png" if block["type"] == "image" else "application/octet-stream"
    )
    data = block.get("base64") or block.get("data") or block.get("url") or ""
    return {"type": "file", "mimeType": mime, "data": str(data)}


def _assistant_parts(group: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """A run of model and tool messages as one assistant row's parts: a step per model message
    (``step-start`` between), its reasoning and text, then a ``tool-invocation`` per call (with
    its result once the run holds it)."""
    results = {m.tool_call_id: m for m in group if isinstance(m, ToolMessage)}
    parts: list[dict[str, Any]] = []
    step = 0
    answered: set[str] = set()
    for message in group:
        if not isinstance(message, AIMessage):
            continue
        if step:
            parts.append({"type": "step-start"})
        reasoning = message.additional_kwargs.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            parts.append(
                {
                    "type": "reasoning",
                    "reasoning": reasoning,
                    "details": [{"type": "text", "text": reasoning}],
                }
            )
        if _text_of(message) or not (message.tool_calls or reasoning):  # (an empty one too)
            parts.append({"type": "text", "text": _text_of(message)})
        for call in message.tool_calls:
            invocation: dict[str, Any] = {
                "state": "call",
                "step": step,
                "toolCallId": call["id"],
                "toolName": call["name"],
                "args": call["args"],
            }
            result = results.get(str(call["id"]))
            if result is not None:
                invocation["state"] = "result"
                invocation["result"] = _result_value(result)
                answered.add(str(call["id"]))
            parts.append({"type": "tool-invocation", "toolInvocation": invocation})
        step += 1
    for message in group:  # a result whose call is not in the run (Mastra's own shape for it)
        if isinstance(message, ToolMessage) and message.tool_call_id not in answered:
            invocation = {
                "state": "result",
                "step": max(step - 1, 0),
                "toolCallId": message.tool_call_id,
                "toolName": message.name or "",
                "args": {},
                "result": _result_value(message),
            }
            parts.append({"type": "tool-invocation", "toolInvocation": invocation})
    return parts


def _result_value(message: ToolMessage) -> Any:
    """A tool result as Mastra keeps it: the JSON value when the text is JSON, else the text."""
    text = _text_of(message)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _record(
    row_id: str, role: str, content: dict[str, Any], group: Sequence[BaseMessage]
) -> list[dict[str, Any]]:
    """What decoding the row would not give back, per message: the fields that differ (None
    when nothing does)."""
    decoded = _restored(row_id, _messages_of(role, _parts(content)[0]), {})
    record: list[dict[str, Any]] = []
    needed = len(decoded) != len(group)
    for position, message in enumerate(group):
        original = message_to_dict(message)
        plain = message_to_dict(decoded[position]) if position < len(decoded) else None
        if plain is None or not _same_kind(original["type"], plain["type"]):
            record.append({"type": original["type"], "data": original["data"]})
            needed = True
            continue
        differs = {k: v for k, v in original["data"].items() if plain["data"].get(k) != v}
        record.append({"type": original["type"], "data": differs})
        needed = needed or bool(differs) or original["type"] != plain["type"]
    return record if needed else []


def _messages_of(role: str, parts: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """The messages a row's parts hold, by its role (``signal`` and any newer role: none, as
    nothing of them is sent to a model)."""
    if role in ("user", "human"):
        return [HumanMessage(_user_content(parts))] if parts else []
    if role == "system":
        return [SystemMessage(_joined_text(parts))] if parts else []
    if role in ("assistant", "tool"):
        return _assistant_messages(parts)
    return []
