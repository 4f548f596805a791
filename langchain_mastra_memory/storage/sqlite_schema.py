"""SQLite schema: a list of migrations that only grows; its length is the schema version."""

from __future__ import annotations

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
]
