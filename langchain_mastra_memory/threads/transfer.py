"""Import and export conversations as JSON lines (one message per line).

A line is a message, either LangChain's ``{"type": ..., "data": {...}}`` form or the flat
``{"role": "user" | "assistant" | "system" | "tool", "content": ...}`` form, plus optional
``thread_id``, ``resource_id``, ``created_at`` (ISO 8601) and the thread's ``title``,
``thread_metadata``, ``thread_created_at`` and ``thread_updated_at``. `export_thread` writes all
of them, so export → import → export gives the same bytes.

An import is all-or-nothing: every line is checked first (each error reported with its line
number and field), then everything is saved in one transaction, so a bad line leaves the
database as it was and creates no thread. It is idempotent: a line without an id gets one
derived from its thread, its position in that thread and its content, so importing the same
file twice changes nothing. A line naming another resource than the one asked for is refused.

Examples:
    >>> import io
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> memory = Memory(storage=SQLiteStorage(":memory:"))
    >>> lines = ['{"role": "user", "content": "hi"}', '{"role": "assistant", "content": "hello"}']
    >>> import_lines(memory, lines, thread_id="t1", resource_id="alice")
    2
    >>> import_lines(memory, lines, thread_id="t1", resource_id="alice")  # again: no change
    2
    >>> out = io.StringIO(); export_thread(memory, "t1", out)
    2
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, message_to_dict

from ..errors import (
    ConfigurationError,
    InvalidMessageError,
    MastraMemoryError,
    ThreadNotFoundError,
)
from ..messages import message_from_dict
from ..pools import in_io_pool
from ..storage.records import ImportedThread, from_iso, to_iso
from ..storage.validation import check_id, check_metadata, check_time, check_title

if TYPE_CHECKING:
    from ..memory import Memory

_THREAD_KEYS = ("title", "thread_metadata", "thread_created_at", "thread_updated_at")
_EXTRA_KEYS = ("thread_id", "resource_id", "created_at", *_THREAD_KEYS)
_IDS = uuid.UUID("6f1c3a52-8e0b-4d7e-9a51-3c2f0d9b7e41")  # namespace of derived message ids
MAX_REPORTED = 20
# Characters that JSON leaves raw inside strings but that some readers take for line breaks
# (`str.splitlines`, editors): exported escaped, so every message stays on its own line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


@dataclass(frozen=True)
class ImportLine:
    """One parsed line: the message and where it goes."""

    number: int
    message: BaseMessage
    thread_id: str
    resource_id: str
    created_at: datetime | None
    thread: dict[str, Any] = field(default_factory=dict)  # title, metadata, times, if given


class ImportFileError(InvalidMessageError):
    """An import file has bad lines; `errors` lists each as ``line N: field: problem``."""

    def __init__(self, errors: list[str]) -> None:
        shown = errors[:MAX_REPORTED]
        more = f"\n... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        super().__init__(
            f"nothing was imported: {len(errors)} bad line(s)\n" + "\n".join(shown) + more
        )
        self.errors = errors


def _time(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidMessageError(f"{what} must be an ISO 8601 string, got {value!r:.40}")
    try:
        moment = from_iso(value)
    except ValueError:
        raise InvalidMessageError(f"{what} is not an ISO 8601 time: {value!r:.40}") from None
    return check_time(moment, what)


def _parse(number: int, raw: str, thread_id: str | None, resource_id: str | None) -> ImportLine:
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise InvalidMessageError("a line must be a JSON object")
    given = {k for k in _EXTRA_KEYS if k in data}
    extras = {k: data.pop(k, None) for k in _EXTRA_KEYS}
    thread = check_id(extras["thread_id"] or thread_id, "thread_id")
    named = extras["resource_id"]
    if named is not None and resource_id is not None and named != resource_id:
        msg = f"resource_id: the line names {named!r}, the import is for {resource_id!r}"
        raise InvalidMessageError(msg)
    resource = check_id(named or resource_id, "resource_id")
    message = message_from_dict(data)
    if message.id is not None:
        check_id(message.id, "id", InvalidMessageError)
    details: dict[str, Any] = {}
    if "title" in given:
        details["title"] = check_title(extras["title"])
    if extras["thread_metadata"] is not None:
        details["metadata"] = check_metadata(extras["thread_metadata"], "thread_metadata")
    for key in ("thread_created_at", "thread_updated_at"):
        if extras[key] is not None:
            details[key] = _time(extras[key], key)
    created = _time(extras["created_at"], "created_at")
    return ImportLine(number, message, thread, resource, created, details)


def split_lines(text: str) -> list[str]:
    r"""A JSON-lines document's lines: split at ``\n`` (``\r\n`` too) only, never at the other
    characters `str.splitlines` breaks on (U+2028, U+2029, U+0085 may stand inside a message).

    Examples:
        >>> split_lines('{"a": "x\u2028y"}\r\n{"b": 1}\n')
        ['{"a": "x\u2028y"}', '{"b": 1}']
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse_lines(
    lines: Iterable[str], *, thread_id: str | None = None, resource_id: str | None = None
) -> list[ImportLine]:
    """Parse and check every line; `ImportFileError` lists every bad one (nothing is saved).

    `thread_id`/`resource_id` fill in lines that do not name them."""
    parsed: list[ImportLine] = []
    errors: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            parsed.append(_parse(number, raw, thread_id, resource_id))
        except (ValueError, TypeError, MastraMemoryError, RecursionError) as exc:
            errors.append(f"line {number}: {exc}")
    if errors:
        raise ImportFileError(errors)
    return parsed


def _derived_id(item: ImportLine, position: int) -> str:
    """A stable id for a line without one: its thread, position and content."""
    body = json.dumps(message_to_dict(item.message), sort_keys=True, ensure_ascii=False)
    return str(uuid.uuid5(_IDS, f"{item.thread_id}\x1f{position}\x1f{body}"))


def _threads(items: list[ImportLine]) -> list[ImportedThread]:
    """The lines grouped by thread (in file order), each message with an id."""
    groups: dict[str, list[ImportLine]] = {}
    for item in items:
        groups.setdefault(item.thread_id, []).append(item)
    threads = []
    for thread_id, group in groups.items():
        owners = {item.resource_id for item in group}
        if len(owners) > 1:
            lines = ", ".join(str(item.number) for item in group[:5])
            msg = (
                f"thread {thread_id!r} is given several resources {sorted(owners)} (lines {lines})"
            )
            raise ImportFileError([msg])
        details: dict[str, Any] = {}
        for item in group:
            details.update(item.thread)
        messages = [
            item.message
            if item.message.id
            else item.message.model_copy(update={"id": _derived_id(item, position)})
            for position, item in enumerate(group)
        ]
        threads.append(
            ImportedThread(
                thread_id=thread_id,
                resource_id=group[0].resource_id,
                messages=messages,
                created_at=[item.created_at for item in group],
                title=details.get("title"),
                metadata=details.get("metadata"),
                thread_created_at=details.get("thread_created_at"),
                thread_updated_at=details.get("thread_updated_at"),
            )
        )
    return threads


def import_lines(
    memory: Memory,
    lines: Iterable[str],
    *,
    thread_id: str | None = None,
    resource_id: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Import JSON lines into `memory`, all or nothing; returns the message count.

    Messages are embedded behind the import (memory's background writer drains them; call
    `memory.flush()` to wait). `progress` is called with the number of messages saved.
    """
    threads = _threads(parse_lines(lines, thread_id=thread_id, resource_id=resource_id))
    saved = memory.writes.save_import(threads)
    if progress is not None:
        progress(len(saved))
    return len(saved)


async def aimport_lines(
    memory: Memory,
    lines: Iterable[str],
    *,
    thread_id: str | None = None,
    resource_id: str | None = None,
) -> int:
    """Async `import_lines` (parsing runs in a worker thread, saving through async storage)."""
    items = await in_io_pool(
        lambda: _threads(parse_lines(lines, thread_id=thread_id, resource_id=resource_id))
    )
    return len(await memory.writes.asave_import(items))


def export_lines(
    memory: Memory, thread_id: str, *, resource_id: str | None = None
) -> Iterator[str]:
    """A thread as JSON lines (lossless form, newline-terminated)."""
    thread = memory.storage.get_thread(check_id(thread_id, "thread_id"))
    if thread is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}")
    stored = memory.storage.list_messages(thread_id, resource_id=resource_id)
    for item in stored:
        line = {
            "thread_id": item.thread_id,
            "resource_id": item.resource_id,
            "title": thread.title,
            "thread_metadata": thread.metadata,
            "thread_created_at": to_iso(thread.created_at),
            "thread_updated_at": to_iso(thread.updated_at),
            "created_at": to_iso(item.created_at),
            **message_to_dict(item.message),
        }
        yield json.dumps(line, ensure_ascii=False).translate(_LINE_BREAKS) + "\n"


def export_thread(
    memory: Memory, thread_id: str, out: IO[str], *, resource_id: str | None = None
) -> int:
    """Write a thread as JSON lines to `out`; returns the message count."""
    count = 0
    for line in export_lines(memory, thread_id, resource_id=resource_id):
        out.write(line)
        count += 1
    return count


def export_to_file(
    memory: Memory, thread_id: str, path: str | Path, *, resource_id: str | None = None
) -> int:
    """Write a thread to `path` atomically: a temporary file beside it, renamed over it only
    once every line is written (a failure leaves an existing file untouched). A directory, or
    a file in a folder that does not exist, is a `ConfigurationError`."""
    path = Path(path)
    if path.is_dir():
        raise ConfigurationError(
            f"{path} is a directory: give the file to write, e.g. {path / 'thread.jsonl'}"
        )
    if not path.parent.is_dir():
        raise ConfigurationError(f"cannot write {path}: the folder {path.parent} does not exist")
    with _replacing(path) as handle:
        return export_thread(memory, thread_id, handle, resource_id=resource_id)


@contextmanager
def _replacing(path: Path) -> Iterator[IO[str]]:
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
