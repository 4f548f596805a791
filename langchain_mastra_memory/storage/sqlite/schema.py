"""SQLite schema: a list of migrations that only grows; its length is the schema version."""

from __future__ import annotations

from ..sql.statements import (
    CHECKPOINT_LISTS_TABLES,
    EXTRACTED_VALUES_TABLE,
    OBSERVATIONS_ACTIVATED,
    WITHHELD_TABLE,
)

MIGRATIONS: list[str] = [
    # 1: resources, threads, messages
    """
    CREATE TABLE memory_resources (
        id TEXT PRIMARY KEY,
        working_memory TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE memory_threads (
        id TEXT PRIMARY KEY,
        resource_id TEXT NOT NULL REFERENCES memory_resources(id),
        title TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        working_memory TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX memory_threads_by_resource ON memory_threads(resource_id, updated_at);
    CREATE TABLE memory_messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        thread_id TEXT NOT NULL REFERENCES memory_threads(id) ON DELETE CASCADE,
        resource_id TEXT NOT NULL,
        role TEXT NOT NULL,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        text TEXT NOT NULL DEFAULT '',
        tool_call_ids TEXT,
        token_count REAL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX memory_messages_by_thread ON memory_messages(thread_id, created_at, seq);
    CREATE INDEX memory_messages_by_resource ON memory_messages(resource_id);
    """,
    # 2: keyword search (FTS5 over message text) and the embedding backlog
    """
    ALTER TABLE memory_messages ADD COLUMN embedded INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX memory_messages_unembedded ON memory_messages(embedded, role);
    CREATE VIRTUAL TABLE memory_messages_fts USING fts5(
        text, content='memory_messages', content_rowid='seq', tokenize='porter unicode61'
    );
    INSERT INTO memory_messages_fts(rowid, text) SELECT seq, text FROM memory_messages;
    CREATE TRIGGER memory_messages_fts_insert AFTER INSERT ON memory_messages BEGIN
        INSERT INTO memory_messages_fts(rowid, text) VALUES (new.seq, new.text);
    END;
    CREATE TRIGGER memory_messages_fts_delete AFTER DELETE ON memory_messages BEGIN
        INSERT INTO memory_messages_fts(memory_messages_fts, rowid, text)
        VALUES ('delete', old.seq, old.text);
    END;
    CREATE TRIGGER memory_messages_fts_update AFTER UPDATE OF text ON memory_messages BEGIN
        INSERT INTO memory_messages_fts(memory_messages_fts, rowid, text)
        VALUES ('delete', old.seq, old.text);
        INSERT INTO memory_messages_fts(rowid, text) VALUES (new.seq, new.text);
    END;
    """,
    # 3: keyword search partitioned by owner: a contentless FTS5 table with an `owner` column
    #    holding one token per resource (user and assistant messages only), so a search ANDs
    #    it and scores only its resource's messages; and a message count per resource, so a
    #    search knows whether its resource is most of the index.
    """
    ALTER TABLE memory_resources ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
    UPDATE memory_resources SET message_count =
        (SELECT count(*) FROM memory_messages m WHERE m.resource_id = memory_resources.id);
    DROP TRIGGER memory_messages_fts_insert;
    DROP TRIGGER memory_messages_fts_delete;
    DROP TRIGGER memory_messages_fts_update;
    DROP TABLE memory_messages_fts;
    CREATE VIRTUAL TABLE memory_messages_fts USING fts5(
        text, owner, content='', tokenize='porter unicode61'
    );
    INSERT INTO memory_messages_fts(rowid, text, owner)
        SELECT seq, text, OWNER(memory_messages) FROM memory_messages;
    CREATE TRIGGER memory_messages_fts_insert AFTER INSERT ON memory_messages BEGIN
        INSERT INTO memory_messages_fts(rowid, text, owner) VALUES (new.seq, new.text, OWNER(new));
        UPDATE memory_resources SET message_count = message_count + 1 WHERE id = new.resource_id;
    END;
    CREATE TRIGGER memory_messages_fts_delete AFTER DELETE ON memory_messages BEGIN
        INSERT INTO memory_messages_fts(memory_messages_fts, rowid, text, owner)
        VALUES ('delete', old.seq, old.text, OWNER(old));
        UPDATE memory_resources SET message_count = message_count - 1 WHERE id = old.resource_id;
    END;
    CREATE TRIGGER memory_messages_fts_update AFTER UPDATE OF text, role, resource_id
    ON memory_messages BEGIN
        INSERT INTO memory_messages_fts(memory_messages_fts, rowid, text, owner)
        VALUES ('delete', old.seq, old.text, OWNER(old));
        INSERT INTO memory_messages_fts(rowid, text, owner) VALUES (new.seq, new.text, OWNER(new));
    END;
    """,
    # 4: LangGraph store items (`memory.store()`): namespace labels joined by "." (LangGraph
    # forbids "." in a label), a JSON value, the float32 vectors of its indexed fields
    """
    CREATE TABLE memory_store_items (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        vectors BLOB,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        ttl_minutes REAL,
        expires_at REAL,
        PRIMARY KEY (namespace, key)
    );
    CREATE INDEX memory_store_items_expiry ON memory_store_items(expires_at)
        WHERE expires_at IS NOT NULL;
    """,
    # 5: observational memory: groups with their provenance, and per-scope cursor and lease
    """
    CREATE TABLE memory_observation_groups (
        id TEXT PRIMARY KEY,
        scope_key TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        current_task TEXT,
        message_ids TEXT NOT NULL,
        replaces TEXT NOT NULL,
        token_count REAL NOT NULL,
        created_at TEXT NOT NULL,
        replaced_by TEXT
    );
    CREATE INDEX memory_observation_groups_active
        ON memory_observation_groups(scope_key, replaced_by, created_at);
    CREATE TABLE memory_observation_state (
        scope_key TEXT PRIMARY KEY,
        seq INTEGER,
        lease_owner TEXT,
        lease_until REAL
    );
    """,
    # 6: observational memory's buffering: groups written ahead of the threshold wait inactive
    """
    ALTER TABLE memory_observation_groups ADD COLUMN active INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE memory_observation_groups ADD COLUMN message_tokens REAL NOT NULL DEFAULT 0;
    ALTER TABLE memory_observation_groups ADD COLUMN last_seq INTEGER;
    ALTER TABLE memory_observation_state ADD COLUMN buffered_seq INTEGER;
    """,
    # 7: a thread's messages after a cursor by seq (observational memory's checks on every save)
    """
    CREATE INDEX memory_messages_by_thread_seq ON memory_messages(thread_id, seq);
    """,
    # 8: archived threads (Mastra 1.x ``archivedAt``): out of listings and recall until restored;
    #    a thread given to another resource takes its messages' count along
    """
    ALTER TABLE memory_threads ADD COLUMN archived_at TEXT;
    CREATE TRIGGER memory_messages_owner_count AFTER UPDATE OF resource_id ON memory_messages
    WHEN old.resource_id IS NOT new.resource_id BEGIN
        UPDATE memory_resources SET message_count = message_count - 1 WHERE id = old.resource_id;
        UPDATE memory_resources SET message_count = message_count + 1 WHERE id = new.resource_id;
    END;
    """,
    # 9: ids of messages read-only turns left in a graph's state, never stored (`sql.messages`)
    WITHHELD_TABLE,
    # 10: a graph's message lists, each value stored once (`checkpoint_lists`)
    CHECKPOINT_LISTS_TABLES.format(bytes="BLOB", time="TEXT"),
    # 11: when each observation group joined the log (`observations_as_of`)
    OBSERVATIONS_ACTIVATED.format(time="TEXT"),
    # 12: the values extractors keep per observation scope (`sql.observations`)
    EXTRACTED_VALUES_TABLE.format(time="TEXT"),
]


def _owner(row: str) -> str:
    """The FTS owner token of a message row (SQL): ``o<hex of resource id>0`` for user and
    assistant messages (the trailing digit keeps the stemmer off it), empty for the others."""
    return (
        f"CASE WHEN {row}.role IN ('user', 'assistant') "
        f"THEN 'o' || lower(hex({row}.resource_id)) || '0' ELSE '' END"
    )


MIGRATIONS = [
    script.replace("OWNER(memory_messages)", _owner("memory_messages"))
    .replace("OWNER(new)", _owner("new"))
    .replace("OWNER(old)", _owner("old"))
    for script in MIGRATIONS
]
