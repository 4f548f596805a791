"""What Mastra's tables look like on disk, and how their values read and write.

Mastra 1.x (``@mastra/libsql``) creates its memory tables in the file with ``CREATE TABLE IF
NOT EXISTS`` on every start and only ever adds columns (no version table), so a store made here
with the same statements is one Mastra opens as its own, and a newer Mastra's extra columns are
simply never read. Times are JavaScript's ``toISOString()`` (``2026-01-02T03:04:05.678Z``),
compared as text by Mastra's queries: written exactly so. Its ``jsonb`` columns hold either
plain JSON text or SQLite's binary JSONB (what ``jsonb(?)`` writes, which the SQLite Python
ships with may be too old to read): `json_value` reads both.

Examples:
    >>> from datetime import datetime, timezone
    >>> js_time(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc))
    '2026-01-02T03:04:05.678Z'
    >>> json_value(bytes.fromhex("4c" "17" "61" "13" "31"))  # JSONB for {"a": 1}
    {'a': 1}
"""

from __future__ import annotations

import json
import struct
from datetime import datetime, timedelta, timezone
from typing import Any

MASTRA_TABLES = """
CREATE TABLE IF NOT EXISTS mastra_threads (
  "id" TEXT NOT NULL PRIMARY KEY,
  "resourceId" TEXT NOT NULL,
  "title" TEXT NOT NULL,
  "metadata" TEXT,
  "createdAt" TEXT NOT NULL,
  "updatedAt" TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS mastra_messages (
  "id" TEXT NOT NULL PRIMARY KEY,
  "thread_id" TEXT NOT NULL,
  "content" TEXT NOT NULL,
  "role" TEXT NOT NULL,
  "type" TEXT NOT NULL,
  "createdAt" TEXT NOT NULL,
  "resourceId" TEXT
);
CREATE INDEX IF NOT EXISTS idx_messages_thread_created_at
  ON mastra_messages (thread_id, "createdAt");
CREATE INDEX IF NOT EXISTS idx_messages_thread_resource_created_at
  ON mastra_messages (thread_id, "resourceId", "createdAt");
CREATE TABLE IF NOT EXISTS mastra_resources (
  "id" TEXT NOT NULL PRIMARY KEY,
  "workingMemory" TEXT,
  "metadata" TEXT,
  "createdAt" TEXT NOT NULL,
  "updatedAt" TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS mastra_observational_memory (
  "id" TEXT NOT NULL PRIMARY KEY,
  "lookupKey" TEXT NOT NULL,
  "scope" TEXT NOT NULL,
  "resourceId" TEXT,
  "threadId" TEXT,
  "activeObservations" TEXT NOT NULL,
  "activeObservationsPendingUpdate" TEXT,
  "originType" TEXT NOT NULL,
  "config" TEXT NOT NULL,
  "generationCount" INTEGER NOT NULL,
  "lastObservedAt" TEXT,
  "lastReflectionAt" TEXT,
  "pendingMessageTokens" INTEGER NOT NULL,
  "totalTokensObserved" INTEGER NOT NULL,
  "observationTokenCount" INTEGER NOT NULL,
  "isObserving" INTEGER NOT NULL,
  "isReflecting" INTEGER NOT NULL,
  "observedMessageIds" TEXT,
  "observedTimezone" TEXT,
  "bufferedObservations" TEXT,
  "bufferedObservationTokens" INTEGER,
  "bufferedMessageIds" TEXT,
  "bufferedReflection" TEXT,
  "bufferedReflectionTokens" INTEGER,
  "bufferedReflectionInputTokens" INTEGER,
  "reflectedObservationLineCount" INTEGER,
  "bufferedObservationChunks" TEXT,
  "isBufferingObservation" INTEGER NOT NULL,
  "isBufferingReflection" INTEGER NOT NULL,
  "lastBufferedAtTokens" INTEGER NOT NULL,
  "lastBufferedAtTime" TEXT,
  "metadata" TEXT,
  "createdAt" TEXT NOT NULL,
  "updatedAt" TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_om_lookup_key ON mastra_observational_memory ("lookupKey");
"""  # the statements @mastra/libsql 1.23 runs (its own index names: Mastra skips them then)

# Ours beside them (Mastra never reads a ``memory_*`` table): which of our messages each of
# Mastra's rows holds and the digest of the row as last read or written (what changed since),
# each thread's and resource's ``updatedAt`` as last seen, and an index on ``updatedAt`` so a
# read finds what Mastra changed without a scan (an index adds no column and changes no row).
SYNC_TABLES = """
CREATE TABLE IF NOT EXISTS memory_mastra_rows (
  row_id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  digest TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_mastra_rows_by_thread ON memory_mastra_rows(thread_id);
CREATE TABLE IF NOT EXISTS memory_mastra_members (
  message_id TEXT PRIMARY KEY,
  row_id TEXT NOT NULL,
  thread_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_mastra_members_by_row ON memory_mastra_members(row_id);
CREATE TABLE IF NOT EXISTS memory_mastra_seen (
  kind TEXT NOT NULL,
  id TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (kind, id)
);
CREATE INDEX IF NOT EXISTS memory_mastra_threads_by_update ON mastra_threads("updatedAt");
CREATE INDEX IF NOT EXISTS memory_mastra_resources_by_update ON mastra_resources("updatedAt");
CREATE INDEX IF NOT EXISTS memory_mastra_observations_by_update
  ON mastra_observational_memory("updatedAt");
"""

# What this connection wrote to our tables in the current transaction (temporary: on this
# connection only, so nothing of it is in the file), for the end of the transaction to write
# the same to Mastra's rows.
CHANGE_LOG = """
CREATE TEMP TABLE IF NOT EXISTS mastra_changes (kind TEXT, id TEXT, thread_id TEXT, at TEXT);
CREATE TEMP TRIGGER IF NOT EXISTS mastra_message_in AFTER INSERT ON main.memory_messages BEGIN
  INSERT INTO mastra_changes VALUES ('message', new.id, new.thread_id, new.created_at);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_message_edit
AFTER UPDATE OF content, thread_id, created_at, role ON main.memory_messages BEGIN
  INSERT INTO mastra_changes VALUES ('message', old.id, old.thread_id, old.created_at);
  INSERT INTO mastra_changes VALUES ('message', new.id, new.thread_id, new.created_at);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_message_out AFTER DELETE ON main.memory_messages BEGIN
  INSERT INTO mastra_changes VALUES ('message', old.id, old.thread_id, old.created_at);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_thread_in AFTER INSERT ON main.memory_threads BEGIN
  INSERT INTO mastra_changes VALUES ('thread', new.id, new.id, NULL);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_thread_edit AFTER UPDATE ON main.memory_threads BEGIN
  INSERT INTO mastra_changes VALUES ('thread', new.id, new.id, NULL);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_thread_out AFTER DELETE ON main.memory_threads BEGIN
  INSERT INTO mastra_changes VALUES ('thread', old.id, old.id, NULL);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_resource_in AFTER INSERT ON main.memory_resources BEGIN
  INSERT INTO mastra_changes VALUES ('resource', new.id, NULL, NULL);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_resource_edit
AFTER UPDATE OF working_memory, metadata ON main.memory_resources BEGIN
  INSERT INTO mastra_changes VALUES ('resource', new.id, NULL, NULL);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_resource_out AFTER DELETE ON main.memory_resources BEGIN
  INSERT INTO mastra_changes VALUES ('resource', old.id, NULL, NULL);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_group_in AFTER INSERT ON main.memory_observation_groups
BEGIN
  INSERT INTO mastra_changes VALUES ('observations', new.scope_key, NULL, NULL);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_group_edit
AFTER UPDATE ON main.memory_observation_groups BEGIN
  INSERT INTO mastra_changes VALUES ('observations', new.scope_key, NULL, NULL);
END;
CREATE TEMP TRIGGER IF NOT EXISTS mastra_group_out AFTER DELETE ON main.memory_observation_groups
BEGIN
  INSERT INTO mastra_changes VALUES ('observations', old.scope_key, NULL, NULL);
END;
"""


def js_time(moment: datetime) -> str:
    """`moment` as JavaScript's ``Date.toISOString()`` writes it (UTC, milliseconds, ``Z``)."""
    utc = moment.astimezone(timezone.utc) if moment.tzinfo else moment
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def from_js_time(text: Any) -> datetime | None:
    """A time Mastra stored (ISO text, with or without ``Z``/offset/milliseconds; a number of
    epoch milliseconds), as an aware UTC datetime; None when it is neither."""
    if isinstance(text, (int, float)):
        return datetime.fromtimestamp(text / 1000, tz=timezone.utc)
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        return None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def after(previous: str | None, moment: datetime) -> str:
    """`moment` as Mastra's text, moved a millisecond past `previous` when it would not sort
    after it (Mastra orders a thread by this text, with no tie-break on SQLite)."""
    text = js_time(moment)
    if previous is not None and text <= previous:
        earlier = from_js_time(previous)
        assert earlier is not None
        text = js_time(earlier + timedelta(milliseconds=1))
    return text


def json_value(raw: Any) -> Any:
    """A ``jsonb`` column's value: JSON text, SQLite's binary JSONB, or NULL."""
    if raw is None:
        return None
    if isinstance(raw, str):
        return json.loads(raw)
    if isinstance(raw, (bytes, bytearray, memoryview)):
        data = bytes(raw)
        try:
            value, end = _jsonb(data, 0)
        except (IndexError, struct.error, UnicodeDecodeError) as exc:
            raise ValueError("not a JSONB value") from exc
        if end != len(data):
            raise ValueError("not a JSONB value")
        return value
    return raw


def json_object(raw: Any) -> dict[str, Any]:
    """A ``jsonb`` column holding an object (Mastra's metadata), {} for NULL or anything else,
    a JSON string holding an object read through (PostgreSQL's double encoding)."""
    try:
        value = json_value(raw)
        if isinstance(value, str):
            value = json.loads(value)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


_SIZES = {12: 1, 13: 2, 14: 4, 15: 8}


def _jsonb(data: bytes, at: int) -> tuple[Any, int]:
    """One JSONB element at `at`: (its value, where the next begins). The format: a header
    byte (type in the low nibble; payload size in the high one, or the number of size bytes
    that follow, big-endian), then the payload."""
    header = data[at]
    kind, size = header & 0x0F, header >> 4
    at += 1
    if size in _SIZES:
        width = _SIZES[size]
        size = int.from_bytes(data[at : at + width], "big")
        at += width
    payload, end = data[at : at + size], at + size
    if len(payload) != size:
        raise ValueError("not a JSONB value")
    if kind == 0:
        return None, end
    if kind in (1, 2):
        return kind == 1, end
    if kind in (3, 4):  # INT, INT5 (hex too)
        return int(payload.decode(), 0), end
    if kind in (5, 6):  # FLOAT, FLOAT5
        return float(payload.decode()), end
    if kind == 7 or kind == 10:  # TEXT, TEXTRAW
        return payload.decode(), end
    if kind in (8, 9):  # TEXTJ, TEXT5: JSON escapes inside
        return json.loads('"' + payload.decode() + '"'), end
    if kind == 11:
        items, cursor = [], at
        while cursor < end:
            item, cursor = _jsonb(data, cursor)
            items.append(item)
        return items, end
    if kind == 12:
        obj, cursor = {}, at
        while cursor < end:
            key, cursor = _jsonb(data, cursor)
            obj[str(key)], cursor = _jsonb(data, cursor)
        return obj, end
    raise ValueError("not a JSONB value")
