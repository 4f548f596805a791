"""The `Thread` record: one conversation, owned by one resource.

Pure helpers shared by the storage backends: timestamps, message rows, validation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
from langchain_core.messages import BaseMessage, message_to_dict
from pydantic import BaseModel, ConfigDict, Field

from ..errors import (
    ConfigurationError,
    InvalidMessageError,
    MessageConflictError,
    MessageNotFoundError,
    ResourceMismatchError,
)
from ..messages import (
    ensure_messages,
    index_text,
    mastra_role,
    message_to_json,
    tool_call_ids,
    with_id,
)
from ..tokens.counting import default_counter
from .validation import check_id, check_json_value, check_metadata, check_time, validated


class Thread(BaseModel):
    """One conversation (Mastra's ``StorageThreadType``).

    Examples:
        >>> from datetime import datetime, timezone
        >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> Thread(id="t1", resource_id="alice", created_at=now, updated_at=now).title is None
        True
    """

    model_config = ConfigDict(frozen=True)

    id: str
    resource_id: str
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None = None  # set by `Memory.archive_thread`

    @property
    def archived(self) -> bool:
        """Whether the thread is archived (out of listings and recall unless asked for)."""
        return self.archived_at is not None


_METADATA_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,128}$")

ONE_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class ImportedThread:
    """One thread of an import: created as given if new (its owner must match if not), and
    its messages saved with their own times."""

    thread_id: str
    resource_id: str
    messages: Sequence[BaseMessage]
    created_at: Sequence[datetime | None]  # one per message
    title: str | None = None
    metadata: dict[str, Any] | None = None
    thread_created_at: datetime | None = None
    thread_updated_at: datetime | None = None


@dataclass(frozen=True)
class ResourceSummary:
    """A resource that owns threads: how many, its newest activity, its messages and tokens."""

    id: str
    threads: int
    updated_at: datetime
    messages: int = 0
    tokens: float = 0.0


@dataclass(frozen=True)
class StoredMessage:
    """A message as stored: the LangChain message plus where and when it was stored."""

    message: BaseMessage
    thread_id: str
    resource_id: str
    created_at: datetime
    token_count: float | None = None
    copied_from: str | None = None  # a clone's copy: the id of the message it copies


@dataclass(frozen=True)
class Neighbour:
    """A message as recall's context stage reads it around a candidate: its id, thread, type
    (LangChain's: "human", "ai", "tool", "system") and searchable text; no message object."""

    id: str
    thread_id: str
    type: str
    text: str


@dataclass(frozen=True)
class CheckpointValue:
    """One value of a graph's message list, stored once (`key`: a digest of its bytes);
    ``type`` and ``data`` are the saver's serialization, None once retention blanked it."""

    key: str
    message_id: str | None
    type: str | None
    data: bytes | None


@dataclass(frozen=True)
class CheckpointList:
    """A checkpoint's message list as stored: the first `keep` keys of its base's list
    (``base_id``: the checkpoint whose list it builds on; None: a whole list), then `tail`."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    base_id: str | None
    keep: int
    tail: list[str]
    depth: int


@dataclass(frozen=True)
class MessageRow:
    """The column values of one message, ready to bind."""

    id: str
    role: str
    type: str
    content: str
    text: str
    token_count: float | None
    message: BaseMessage
    created_at: datetime | None = None


def thread_from_row(row: Sequence[Any]) -> Thread:
    """A `Thread` from ``id, resource_id, title, metadata, created_at, updated_at[,
    archived_at]`` columns (metadata as JSON text or already decoded; times as ISO text or
    datetimes; a schema before archiving has no ``archived_at``)."""
    id_, resource_id, title, metadata, created_at, updated_at, *rest = row
    archived_at = rest[0] if rest else None
    return Thread(
        id=id_,
        resource_id=resource_id,
        title=title,
        metadata=json.loads(metadata) if isinstance(metadata, str) else metadata,
        created_at=from_iso(created_at),
        updated_at=from_iso(updated_at),
        archived_at=from_iso(archived_at) if archived_at is not None else None,
    )


# id -> (thread_id, resource_id, created_at) of messages already stored
Existing = dict[str, tuple[str, str, datetime]]


def check_conflicts(rows: Sequence[MessageRow], existing: Existing, thread_id: str) -> None:
    """A message id stored in another thread cannot be saved into this one."""
    for row in rows:
        owner = existing.get(row.id)
        if owner is not None and owner[0] != thread_id:
            raise MessageConflictError(f"message id {row.id!r} is already stored in another thread")


def check_owners(ids: Iterable[str], existing: Existing, resource_id: str | None) -> None:
    """Every id must be stored (when `ids` are updates) and owned by `resource_id` (if given)."""
    for id_ in ids:
        if id_ not in existing:
            raise MessageNotFoundError(f"no stored message {id_!r}")
        if resource_id is not None and existing[id_][1] != resource_id:
            msg = f"message {id_!r} belongs to another resource than {resource_id!r}"
            raise ResourceMismatchError(msg)


def saved_messages(
    rows: Sequence[MessageRow],
    existing: Existing,
    times: dict[str, datetime],
    thread_id: str,
    resource_id: str,
) -> list[StoredMessage]:
    """What a save returns: each row as stored (an upsert keeps its original time)."""
    return [
        StoredMessage(
            r.message,
            thread_id,
            resource_id,
            existing[r.id][2] if r.id in existing else (r.created_at or times[r.id]),
            r.token_count,
        )
        for r in rows
    ]


def stored_ids(stored: Iterable[StoredMessage]) -> list[str]:
    """The ids of stored messages."""
    return [s.message.id for s in stored if s.message.id]


def call_ids_column(row: MessageRow) -> str | None:
    """The tool-call ids an AI message makes, space-separated (None for other messages)."""
    ids = tool_call_ids(row.message)
    return " ".join(ids) if ids else None


def now_utc() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def to_iso(moment: datetime) -> str:
    """Fixed-width ISO 8601 in UTC (sorts as text)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def from_iso(text: str | datetime) -> datetime:
    """Parse a stored timestamp back to an aware datetime."""
    if isinstance(text, datetime):
        return text if text.tzinfo else text.replace(tzinfo=timezone.utc)
    return datetime.fromisoformat(text)


class CheckedMessages(list[Any]):
    """Messages `message_rows` already validated and built rows for (`checked_messages`):
    saving them builds nothing again, as long as the list holds exactly those messages."""

    def __init__(self, rows: list[MessageRow]) -> None:
        super().__init__(row.message for row in rows)
        self.rows = rows

    def unchanged(self) -> bool:
        return len(self) == len(self.rows) and all(
            message is row.message for message, row in zip(self, self.rows, strict=True)
        )


def checked_messages(messages: Sequence[object]) -> CheckedMessages:
    """`messages` validated now (an unstorable one raises here), with ids, kept with their rows
    so a later save of them does not validate and count them again."""
    return CheckedMessages(message_rows(messages))


def saved_json(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """The stored JSON of messages just saved, by id (from their rows when `checked_messages`
    built them)."""
    if isinstance(messages, CheckedMessages) and messages.unchanged():
        return {row.id: row.content for row in messages.rows}
    return {m.id: message_to_json(m) for m in messages if m.id}


def message_rows(
    messages: Sequence[object], created_at: Sequence[datetime | None] | str | None = None
) -> list[MessageRow]:
    """Validate messages, give each an id, and build their column values (last duplicate wins).

    `created_at`, when given, holds one timestamp (or None: assign one) per message.
    """
    if created_at is None and isinstance(messages, CheckedMessages) and messages.unchanged():
        return list(messages.rows)
    valid = ensure_messages(messages)
    if created_at is not None and (
        isinstance(created_at, (str, bytes)) or len(created_at) != len(valid)
    ):
        raise ConfigurationError("created_at needs exactly one entry per message")
    times = list(created_at) if created_at is not None else [None] * len(valid)
    counter = default_counter()
    rows: dict[str, MessageRow] = {}
    for original, moment in zip(valid, times, strict=True):
        message = with_id(original)
        assert message.id is not None
        check_id(message.id, "a message id", InvalidMessageError)
        data = message_to_dict(message)
        check_json_value(data["data"], f"message {message.id!r}", InvalidMessageError)
        rows.pop(message.id, None)
        rows[message.id] = MessageRow(
            id=message.id,
            role=mastra_role(message),
            type=message.type,
            content=message_to_json(message, data),
            # NUL is kept in the message (JSON escapes it) but not in the search text, which
            # PostgreSQL's text type cannot hold: both backends store the same
            text=index_text(message).replace("\x00", ""),
            token_count=counter.count(message) if counter else None,
            message=message,
            created_at=check_time(moment, f"created_at of message {message.id!r}"),
        )
    return list(rows.values())


def stored_message(
    message: BaseMessage, thread_id: str, resource_id: str, created_at: Any, tokens: float | None
) -> StoredMessage:
    """Build a `StoredMessage` from loaded columns, seeding the token-count cache."""
    counter = default_counter()
    if counter is not None and tokens is not None:
        counter.seed(message, tokens)
    return StoredMessage(message, thread_id, resource_id, from_iso(created_at), tokens)


def next_timestamps(last: datetime | None, count: int) -> list[datetime]:
    """`count` strictly increasing timestamps, all after `last`, starting from now if later."""
    start = now_utc()
    if last is not None and start <= last:
        start = last + ONE_MICROSECOND
    return [start + ONE_MICROSECOND * i for i in range(count)]


def check_metadata_filter(metadata: dict[Any, Any] | None) -> list[tuple[str, str]]:
    """Validate a metadata equality filter; return (key, JSON value) pairs to bind."""
    if not metadata:
        return []
    pairs = []
    for key, value in metadata.items():
        if not isinstance(key, str) or not _METADATA_KEY.match(key):
            msg = f"metadata filter keys must match {_METADATA_KEY.pattern}, got {key!r}"
            raise ConfigurationError(msg)
        check_json_value(value, f"the metadata filter on {key!r}", nul=False)
        pairs.append((key, json.dumps(value, allow_nan=False)))
    return pairs


def scope_key(scope: str, *, resource_id: str, thread_id: str | None) -> str:
    """``thread:<id>`` or ``resource:<id>``: whose observation log (a thread's, or its
    resource's: observational memory's ``scope``)."""
    if scope == "thread":
        if thread_id is None:
            raise ValueError("a thread-scoped observation log needs thread_id")
        return f"thread:{thread_id}"
    return f"resource:{resource_id}"


def dumps_metadata(metadata: dict[str, Any] | None) -> str:
    """Thread metadata as JSON text (checked: see `validation.check_metadata`)."""
    check_metadata(metadata)
    try:
        return json.dumps(metadata or {}, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"metadata is not JSON-serializable: {exc}") from exc


Namespace = tuple[str, ...]  # a LangGraph store namespace


@dataclass(frozen=True, eq=False)
class StoredItem:
    """One stored item, as read back."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    vectors: np.ndarray | None  # one row per indexed text; None when not indexed
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class ItemWrite:
    """Put `value` (None: delete) at `namespace`/`key`, with its vectors and time to live."""

    namespace: Namespace
    key: str
    value: dict[str, Any] | None
    vectors: np.ndarray | None = None
    ttl_minutes: float | None = None


MESSAGE_COLUMNS = "id, thread_id, resource_id, content, created_at, token_count"


@dataclass(frozen=True)
class ObservationGroup:
    """One entry of an observational-memory log: an Observer's output covering `message_ids`,
    or a Reflector's condensing the groups in `replaces`; `replaced_by` once condensed. A
    buffered group (``active`` False) waits outside the log until the threshold activates it."""

    id: str
    scope_key: str
    resource_id: str
    kind: str  # "observation" | "reflection" | "archive"
    text: str
    current_task: str | None
    message_ids: tuple[str, ...]
    replaces: tuple[str, ...]
    token_count: float
    created_at: datetime
    replaced_by: str | None
    active: bool = True  # False: buffered, written ahead of the threshold, not in the log yet
    message_tokens: float = 0.0  # the stored token count of the messages it covers


@dataclass(frozen=True)
class ObservationArchive:
    """Groups (oldest first) that left a log whole at `archived_at` (rolling archives)."""

    id: str
    scope_key: str
    resource_id: str
    archived_at: datetime
    groups: tuple[ObservationGroup, ...]


@dataclass(frozen=True)
class TimeWindow:
    """Messages created in ``[since, until)`` (None: open on that side), as every search
    engine filters them inside its search (SQL ``created_at``, a vector store's payload).

    Examples:
        >>> from datetime import timezone
        >>> w = TimeWindow.of(datetime(2026, 1, 1, tzinfo=timezone.utc), None)
        >>> w.keeps(w.start), w.keeps(w.start - 1)
        (True, False)
    """

    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def of(cls, since: datetime | None, until: datetime | None) -> TimeWindow | None:
        """The window (None: no bound given); `ConfigurationError` when `since` is not
        before `until` (an empty window is a mistake, not "nothing matches")."""
        if since is None and until is None:
            return None
        since = None if since is None else from_iso(since)
        until = None if until is None else from_iso(until)
        if since is not None and until is not None and since >= until:
            msg = (
                f"since ({since.isoformat()}) must be before until ({until.isoformat()}): "
                "the window [since, until) holds nothing"
            )
            raise ConfigurationError(msg)
        return cls(since, until)

    @property
    def start(self) -> float | None:
        """`since` in seconds since the epoch (the vector stores' ``created_at``)."""
        return None if self.since is None else self.since.timestamp()

    @property
    def end(self) -> float | None:
        """`until` in seconds since the epoch."""
        return None if self.until is None else self.until.timestamp()

    def keeps(self, created_at: float) -> bool:
        """Whether a message created at `created_at` (seconds) is in the window."""
        return (self.start is None or created_at >= self.start) and (
            self.end is None or created_at < self.end
        )


class MessageFilter(BaseModel):
    """Which messages of a thread a clone copies (Mastra 1.x ``messageFilter``): created in
    ``[since, until)`` and/or among `message_ids` (every one, when nothing is given).

    Examples:
        >>> MessageFilter.parse({"message_ids": ["m1"]}).message_ids
        ['m1']
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    since: datetime | None = None
    until: datetime | None = None
    message_ids: list[str] | None = None

    @classmethod
    def parse(cls, value: object) -> MessageFilter:
        """A filter from None, a dict or a filter; `ConfigurationError` for anything else."""
        return validated(cls, value, "message_filter")

    def keeps(self, stored: StoredMessage) -> bool:
        """Whether `stored` passes the filter."""
        moment = stored.created_at
        return (
            (self.since is None or moment >= from_iso(self.since))
            and (self.until is None or moment < from_iso(self.until))
            and (self.message_ids is None or stored.message.id in self.message_ids)
        )
