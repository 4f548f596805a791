"""The SQL statements the storage rooms share (written with ``?`` placeholders; a `Dialect`
translates them), and `TextMatch`, what a backend's full-text search returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from ...errors import ResourceMismatchError, ThreadNotFoundError
from ..base import MemoryStorage
from ..records import MESSAGE_COLUMNS

SCHEMA_TABLE = "memory_schema"  # one row: the number of migrations applied
NEW_THREAD_COLUMNS = "id, resource_id, title, metadata, created_at, updated_at"
THREAD_COLUMNS = NEW_THREAD_COLUMNS + ", archived_at"
INSERT_MESSAGE = (
    "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, content, text, "
    "tool_call_ids, token_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
UPDATE_MESSAGE = (
    "UPDATE memory_messages SET role = ?, type = ?, content = ?, text = ?, tool_call_ids = ?, "
    "token_count = ?, embedded = ? WHERE id = ?"
)
CLONE_MESSAGE = (
    "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, content, text, "
    "tool_call_ids, token_count, created_at) SELECT ?, ?, resource_id, role, type, ?, text, "
    "tool_call_ids, token_count, created_at FROM memory_messages WHERE id = ?"
)
INSERT_RESOURCE = (
    "INSERT INTO memory_resources (id, created_at, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT (id) DO NOTHING"
)
TOUCH_THREAD = "UPDATE memory_threads SET updated_at = ? WHERE id = ?"


def window_sql(hits: int, columns: str = MESSAGE_COLUMNS) -> str:
    """One statement for the neighbour windows of `hits` messages: per hit, its anchor (id and
    owner checked) and up to ``before`` earlier / ``after`` later messages of its thread.
    Rows: `columns` (the message columns by default), then ``seq``. Parameters per hit: id,
    resource id, before, id, resource id, after + 1."""
    anchor = (
        "(SELECT thread_id, created_at, seq FROM memory_messages WHERE id = ? AND resource_id = ?)"
    )
    qualified = ", ".join("m." + c for c in columns.split(", "))
    side = (
        f"SELECT {columns}, seq FROM (SELECT {qualified}, m.seq FROM memory_messages m "
        f"JOIN {anchor} AS a ON m.thread_id = a.thread_id "
        "WHERE (m.created_at, m.seq) {op} (a.created_at, a.seq) "
        "ORDER BY m.created_at {order}, m.seq {order} LIMIT ?) AS w{n}"
    )
    blocks = [
        side.format(op=op, order=order, n=2 * i + j)
        for i in range(hits)
        for j, (op, order) in enumerate((("<", "DESC"), (">=", "ASC")))
    ]
    return " UNION ALL ".join(blocks)


def lateral_window_sql(columns: str = MESSAGE_COLUMNS) -> str:
    """`window_sql` as one statement whose text does not depend on the number of hits, for an
    engine with arrays and ``LATERAL`` (PostgreSQL): the same rows, from the parameters (the
    ids as an array, resource id, before, after + 1), so the driver prepares it once and the
    server plans it once per connection."""
    qualified = ", ".join("m." + c for c in columns.split(", "))
    side = (
        f"(SELECT {qualified}, m.seq FROM memory_messages m WHERE m.thread_id = a.thread_id "
        "AND (m.created_at, m.seq) {op} (a.created_at, a.seq) "
        "ORDER BY m.created_at {order}, m.seq {order} LIMIT ?)"
    )
    return (
        "SELECT w.* FROM unnest(?::text[]) AS h(id) "
        "JOIN memory_messages a ON a.id = h.id AND a.resource_id = ? "
        f"CROSS JOIN LATERAL ({side.format(op='<', order='DESC')} UNION ALL "
        f"{side.format(op='>=', order='ASC')}) AS w"
    )


# ids of messages read-only turns left in a graph's state (`messages`): both dialects' migration
WITHHELD_TABLE = """
    CREATE TABLE memory_withheld_messages (
        thread_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        PRIMARY KEY (thread_id, message_id)
    );
    CREATE INDEX memory_withheld_by_resource ON memory_withheld_messages(resource_id);
"""

# a graph's message lists, each value once (`checkpoint_lists`), and retention's reads by age
# (`retention`): both dialects' migration, with the value column's type (BLOB, BYTEA) and the
# time column's (TEXT, TIMESTAMPTZ) filled in
CHECKPOINT_LISTS_TABLES = """
    CREATE INDEX memory_messages_by_age ON memory_messages(created_at);
    CREATE INDEX memory_threads_by_activity ON memory_threads(updated_at);
    CREATE INDEX memory_observation_groups_by_age ON memory_observation_groups(created_at);
    CREATE TABLE memory_checkpoint_values (
        thread_id TEXT NOT NULL REFERENCES memory_threads(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        message_id TEXT,
        type TEXT,
        value {bytes},
        created_at {time} NOT NULL,
        PRIMARY KEY (thread_id, key)
    );
    CREATE INDEX memory_checkpoint_values_by_message
        ON memory_checkpoint_values(thread_id, message_id);
    CREATE TABLE memory_checkpoint_lists (
        thread_id TEXT NOT NULL REFERENCES memory_threads(id) ON DELETE CASCADE,
        checkpoint_ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        base_id TEXT,
        keep INTEGER NOT NULL,
        tail TEXT NOT NULL,
        depth INTEGER NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
    );
"""

# when each observation group joined the log (an observation at its activation, a reflection at
# its commit), what `observations_as_of` reads: both dialects' migration, with the time column's
# type filled in; groups written before it count from their creation
OBSERVATIONS_ACTIVATED = """
    ALTER TABLE memory_observation_groups ADD COLUMN activated_at {time};
    UPDATE memory_observation_groups SET activated_at = created_at WHERE active = TRUE;
"""

# the values extractors keep per observation scope (`observations`): both dialects' migration
EXTRACTED_VALUES_TABLE = """
    CREATE TABLE memory_extracted_values (
        scope_key TEXT NOT NULL,
        slug TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        value TEXT NOT NULL,
        source TEXT NOT NULL,
        updated_at {time} NOT NULL,
        PRIMARY KEY (scope_key, slug)
    );
    CREATE INDEX memory_extracted_values_by_resource ON memory_extracted_values(resource_id);
"""


class TextMatch(NamedTuple):
    """A dialect's full-text search: ``statement`` is ``SELECT m.id, m.thread_id, <score> AS
    score FROM ... WHERE <match>`` over messages aliased ``m`` (higher scores better) taking
    the `params`; the caller appends its filters (resource, role, thread), the order
    and the limit. When `unpooled` is given, the statement ranks only a pool of the best
    matches before those filters, and `unpooled` is the same search over every match, for
    when they leave too few."""

    statement: str
    params: tuple[Any, ...]
    unpooled: str | None = None


class Cursor(Protocol):
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ...) -> Cursor: ...


class SQLRoom(MemoryStorage):
    """What a room of `SQLStorage` (threads, messages, search, working memory) uses of the
    whole: `SQLStorage` provides the transactions, the statement runner, the dialect and the
    shared row helpers; the observation log and the items provide theirs."""

    _transaction: Any
    _retried: Any
    _run: Any
    _time: Any
    _owned_thread: Any
    _check_thread: Any
    _insert_thread: Any
    _stored: Any
    _thread_messages: Any
    _existing: Any
    _update_row: Any
    _known_calls: Any
    _text_match: Any
    _copy_observations: Any
    _forget_observed: Any
    _delete_observations: Any
    dialect: Any


def check_thread_owner(thread_id: str, resource_id: str | None, owner: str | None) -> None:
    """A thread found (`owner`: its resource) and, when `resource_id` is given, owned by it."""
    if owner is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}; create it with create_thread()")
    if resource_id is not None and owner != resource_id:
        raise ResourceMismatchError.for_thread(thread_id, resource_id)
