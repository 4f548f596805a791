"""PostgreSQL schema: a list of migrations that only grows; its length is the schema version."""

from __future__ import annotations

from ..sql.statements import (
    CHECKPOINT_LISTS_TABLES,
    EXTRACTED_VALUES_TABLE,
    OBSERVATIONS_ACTIVATED,
    WITHHELD_TABLE,
)

MIGRATIONS: list[str] = [
    # 1: resources, threads, messages, keyword search, embedding backlog
    """
    CREATE TABLE memory_resources (
        id TEXT PRIMARY KEY,
        working_memory TEXT,
        metadata JSONB NOT NULL DEFAULT '{}',
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
    );
    CREATE TABLE memory_threads (
        id TEXT PRIMARY KEY,
        resource_id TEXT NOT NULL REFERENCES memory_resources(id),
        title TEXT,
        metadata JSONB NOT NULL DEFAULT '{}',
        working_memory TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX memory_threads_by_resource ON memory_threads(resource_id, updated_at);
    CREATE TABLE memory_messages (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        thread_id TEXT NOT NULL REFERENCES memory_threads(id) ON DELETE CASCADE,
        resource_id TEXT NOT NULL,
        role TEXT NOT NULL,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        text TEXT NOT NULL DEFAULT '',
        tool_call_ids TEXT,
        token_count DOUBLE PRECISION,
        created_at TIMESTAMPTZ NOT NULL,
        embedded BOOLEAN NOT NULL DEFAULT FALSE,
        tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
    );
    CREATE INDEX memory_messages_by_thread ON memory_messages(thread_id, created_at, seq);
    CREATE INDEX memory_messages_by_resource ON memory_messages(resource_id);
    CREATE INDEX memory_messages_unembedded ON memory_messages(embedded, role);
    CREATE INDEX memory_messages_tsv ON memory_messages USING GIN (tsv);
    """,
    # 2: LangGraph store items (`memory.store()`); "C" collation: namespaces range-scan bytewise
    """
    CREATE TABLE memory_store_items (
        namespace TEXT COLLATE "C" NOT NULL,
        key TEXT NOT NULL,
        value JSONB NOT NULL,
        vectors BYTEA,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
        ttl_minutes DOUBLE PRECISION,
        expires_at DOUBLE PRECISION,
        PRIMARY KEY (namespace, key)
    );
    CREATE INDEX memory_store_items_expiry ON memory_store_items(expires_at)
        WHERE expires_at IS NOT NULL;
    """,
    # 3: observational memory: groups with their provenance, and per-scope cursor and lease
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
        token_count DOUBLE PRECISION NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        replaced_by TEXT
    );
    CREATE INDEX memory_observation_groups_active
        ON memory_observation_groups(scope_key, replaced_by, created_at);
    CREATE TABLE memory_observation_state (
        scope_key TEXT PRIMARY KEY,
        seq BIGINT,
        lease_owner TEXT,
        lease_until DOUBLE PRECISION
    );
    """,
    # 4: observational memory's buffering: groups written ahead of the threshold wait inactive
    """
    ALTER TABLE memory_observation_groups ADD COLUMN active BOOLEAN NOT NULL DEFAULT TRUE;
    ALTER TABLE memory_observation_groups
        ADD COLUMN message_tokens DOUBLE PRECISION NOT NULL DEFAULT 0;
    ALTER TABLE memory_observation_groups ADD COLUMN last_seq BIGINT;
    ALTER TABLE memory_observation_state ADD COLUMN buffered_seq BIGINT;
    """,
    # 5: a thread's messages after a cursor by seq (observational memory's checks on every save)
    """
    CREATE INDEX memory_messages_by_thread_seq ON memory_messages(thread_id, seq);
    """,
    # 6: the vector indexes `PgVectorStore` keeps beside the messages (each in a table of its own,
    # made on first use: a fixed dimension per HNSW index, and the pgvector types)
    """
    CREATE TABLE memory_vector_indexes (
        name TEXT PRIMARY KEY,
        table_name TEXT NOT NULL UNIQUE,
        dimension INTEGER NOT NULL,
        kind TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL
    );
    """,
    # 7: keyword search by resource: the owner's lexeme ('o' + md5 of its id) in the index of its
    # user and assistant messages, so a search reads its own resource's matches only
    """
    DROP INDEX memory_messages_tsv;
    ALTER TABLE memory_messages DROP COLUMN tsv;
    ALTER TABLE memory_messages ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS (
        to_tsvector('english', text) || CASE WHEN role IN ('user', 'assistant')
            THEN array_to_tsvector(ARRAY['o' || md5(resource_id)]) ELSE ''::tsvector END
    ) STORED;
    CREATE INDEX memory_messages_tsv ON memory_messages USING GIN (tsv);
    ANALYZE memory_messages;
    """,
    # 8: the keyword index takes each message at once: GIN's "fast update" parks new entries in
    # a pending list (up to 4 MB) that EVERY search reads in full until vacuum merges it — 440
    # pages, +2-7 ms a search, measured at 1M messages — while a message costs a few more page
    # writes without it
    """
    ALTER INDEX memory_messages_tsv SET (fastupdate = off);
    SELECT gin_clean_pending_list('memory_messages_tsv'::regclass);
    """,
    # 9: archived threads (Mastra 1.x ``archivedAt``): out of listings and recall until restored
    """
    ALTER TABLE memory_threads ADD COLUMN archived_at TIMESTAMPTZ;
    """,
    # 10: ids of messages read-only turns left in a graph's state, never stored (`sql.messages`)
    WITHHELD_TABLE,
    # 11: a graph's message lists, each value stored once (`checkpoint_lists`)
    CHECKPOINT_LISTS_TABLES.format(bytes="BYTEA", time="TIMESTAMPTZ"),
    # 12: when each observation group joined the log (`observations_as_of`)
    OBSERVATIONS_ACTIVATED.format(time="TIMESTAMPTZ"),
    # 13: the values extractors keep per observation scope (`sql.observations`)
    EXTRACTED_VALUES_TABLE.format(time="TIMESTAMPTZ"),
]
