"""Import and export conversations as JSON lines (one message per line).

A line is a message, either LangChain's ``{"type": ..., "data": {...}}`` form or the flat
``{"role": "user" | "assistant" | "system" | "tool", "content": ...}`` form, plus optional
``thread_id``, ``resource_id``, ``title`` and ``created_at`` (ISO 8601) keys. `export_thread`
writes the first form, so an export imports back losslessly.

Example:
    >>> import io
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> memory = Memory(storage=SQLiteStorage(":memory:"))
    >>> lines = ['{"role": "user", "content": "hi"}', '{"role": "assistant", "content": "hello"}']
    >>> import_lines(memory, lines, thread_id="t1", resource_id="alice")
    2
    >>> out = io.StringIO(); export_thread(memory, "t1", out)
    2
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, message_to_dict

from .errors import ConfigurationError, InvalidMessageError
from .messages import message_from_dict
from .storage.records import from_iso, to_iso

if TYPE_CHECKING:
    from .memory import Memory

_EXTRA_KEYS = ("thread_id", "resource_id", "title", "created_at")


@dataclass(frozen=True)
class ImportLine:
    """One parsed line: the message and where it goes."""

    message: BaseMessage
    thread_id: str
    resource_id: str
    title: str | None
    created_at: datetime | None


def parse_lines(
    lines: Iterable[str], *, thread_id: str | None = None, resource_id: str | None = None
) -> Iterator[ImportLine]:
    """Parse JSON lines; `thread_id`/`resource_id` fill in lines that do not name them."""
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            data: dict[str, Any] = json.loads(raw)
            if not isinstance(data, dict):
                raise InvalidMessageError("a line must be a JSON object")
            extras = {k: data.pop(k, None) for k in _EXTRA_KEYS}
            message = message_from_dict(data)
            thread = extras["thread_id"] or thread_id
            resource = extras["resource_id"] or resource_id
            if not thread or not resource:
                raise ConfigurationError("no thread_id/resource_id on the line or the command")
            created = from_iso(extras["created_at"]) if extras["created_at"] else None
        except (ValueError, InvalidMessageError) as exc:
            raise InvalidMessageError(f"line {number}: {exc}") from exc
        yield ImportLine(message, thread, resource, extras["title"], created)


def import_lines(
    memory: Memory,
    lines: Iterable[str],
    *,
    thread_id: str | None = None,
    resource_id: str | None = None,
    batch_size: int = 200,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Import JSON lines into `memory`, creating threads as needed; returns the message count.

    Messages are saved in batches per thread (each batch one transaction); `progress` is
    called with the number of messages saved by each batch.
    """
    total = 0
    batch: list[ImportLine] = []

    def flush() -> None:
        nonlocal total
        if not batch:
            return
        first = batch[0]
        if memory.storage.get_thread(first.thread_id) is None:
            memory.storage.create_thread(
                thread_id=first.thread_id, resource_id=first.resource_id, title=first.title
            )
        memory.save_messages(
            [item.message for item in batch],
            thread_id=first.thread_id,
            resource_id=first.resource_id,
            created_at=[item.created_at for item in batch],
        )
        total += len(batch)
        if progress is not None:
            progress(len(batch))
        batch.clear()

    for item in parse_lines(lines, thread_id=thread_id, resource_id=resource_id):
        if batch and (
            (item.thread_id, item.resource_id) != (batch[0].thread_id, batch[0].resource_id)
            or len(batch) >= batch_size
        ):
            flush()
        batch.append(item)
    flush()
    return total


def export_thread(
    memory: Memory, thread_id: str, out: IO[str], *, resource_id: str | None = None
) -> int:
    """Write a thread as JSON lines (lossless form); returns the message count."""
    thread = memory.storage.get_thread(thread_id)
    stored = memory.storage.list_messages(thread_id, resource_id=resource_id)
    for item in stored:
        line = {
            "thread_id": item.thread_id,
            "resource_id": item.resource_id,
            "title": thread.title if thread else None,
            "created_at": to_iso(item.created_at),
            **message_to_dict(item.message),
        }
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(stored)
