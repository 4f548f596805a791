"""`MastraPostgresStorage`: memory on the tables Mastra's ``PostgresStore`` (``@mastra/pg``)
keeps in PostgreSQL, shared with a running Mastra agent.

As on SQLite (`sqlite`), Mastra's tables are the memory both share and ours sit beside them;
what differs here: Mastra's tables are in its ``schemaName`` (``public`` unless told), ours in
a schema of their own (`schema`, ``<schemaName>_langchain`` unless told: Mastra's
``deleteThread`` deletes from every table named ``memory_messages*`` in its schema, taking
them for its vector indexes); every time column has a ``...Z`` ``timestamptz`` twin, which
Mastra reads and which is written too; and the change log is a table of ours filled by triggers
on our tables, each row tagged with its transaction, the triggers acting only inside a
transaction this storage opens (``lmm.mastra_sync`` set for it alone): another program writing
our tables leaves no trace in it. Writers of this storage take turns (a transaction-level
advisory lock), as SQLite's do.

Examples:
    >>> storage = MastraStorage("postgresql://app@db/app", schema_name="mastra")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..postgres.backend import PostgresStorage
from .sync import MastraStorage

MASTRA_TABLES = """
CREATE TABLE IF NOT EXISTS {m}mastra_threads (
  id text NOT NULL PRIMARY KEY, "resourceId" text NOT NULL, title text NOT NULL, metadata jsonb,
  "createdAt" timestamp NOT NULL, "updatedAt" timestamp NOT NULL,
  "createdAtZ" timestamptz DEFAULT now(), "updatedAtZ" timestamptz DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {m}mastra_messages (
  id text NOT NULL PRIMARY KEY, thread_id text NOT NULL, content text NOT NULL, role text NOT NULL,
  type text NOT NULL, "createdAt" timestamp NOT NULL, "resourceId" text,
  "createdAtZ" timestamptz DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {m}mastra_resources (
  id text NOT NULL PRIMARY KEY, "workingMemory" text, metadata jsonb,
  "createdAt" timestamp NOT NULL, "updatedAt" timestamp NOT NULL,
  "createdAtZ" timestamptz DEFAULT now(), "updatedAtZ" timestamptz DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {m}mastra_observational_memory (
  id text NOT NULL PRIMARY KEY, "lookupKey" text NOT NULL, scope text NOT NULL, "resourceId" text,
  "threadId" text, "activeObservations" text NOT NULL, "activeObservationsPendingUpdate" text,
  "originType" text NOT NULL, config text NOT NULL, "generationCount" integer NOT NULL,
  "lastObservedAt" timestamp, "lastReflectionAt" timestamp,
  "pendingMessageTokens" integer NOT NULL, "totalTokensObserved" integer NOT NULL,
  "observationTokenCount" integer NOT NULL, "isObserving" boolean NOT NULL,
  "isReflecting" boolean NOT NULL, "observedMessageIds" jsonb, "observedTimezone" text,
  "bufferedObservations" text, "bufferedObservationTokens" integer, "bufferedMessageIds" jsonb,
  "bufferedReflection" text, "bufferedReflectionTokens" integer,
  "bufferedReflectionInputTokens" integer, "reflectedObservationLineCount" integer,
  "bufferedObservationChunks" jsonb, "isBufferingObservation" boolean NOT NULL,
  "isBufferingReflection" boolean NOT NULL, "lastBufferedAtTokens" integer NOT NULL,
  "lastBufferedAtTime" timestamp, metadata jsonb,
  "createdAt" timestamp NOT NULL, "updatedAt" timestamp NOT NULL,
  "lastObservedAtZ" timestamptz DEFAULT now(), "lastReflectionAtZ" timestamptz DEFAULT now(),
  "lastBufferedAtTimeZ" timestamptz DEFAULT now(),
  "createdAtZ" timestamptz DEFAULT now(), "updatedAtZ" timestamptz DEFAULT now()
);
CREATE INDEX IF NOT EXISTS memory_mastra_threads_by_update ON {m}mastra_threads ("updatedAt");
CREATE INDEX IF NOT EXISTS memory_mastra_observations_by_update
  ON {m}mastra_observational_memory ("updatedAt");
CREATE INDEX IF NOT EXISTS memory_mastra_observations_by_key
  ON {m}mastra_observational_memory ("lookupKey");
CREATE INDEX IF NOT EXISTS memory_mastra_resources_by_update ON {m}mastra_resources ("updatedAt");
CREATE INDEX IF NOT EXISTS memory_mastra_messages_by_thread
  ON {m}mastra_messages (thread_id, "createdAt");
"""  # the columns @mastra/pg 1.26 creates (its own indexes: Mastra adds them when it starts)

SYNC_TABLES = """
CREATE TABLE IF NOT EXISTS memory_mastra_rows (
  row_id text PRIMARY KEY, thread_id text NOT NULL, digest text NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_mastra_rows_by_thread ON memory_mastra_rows (thread_id);
CREATE TABLE IF NOT EXISTS memory_mastra_members (
  message_id text PRIMARY KEY, row_id text NOT NULL, thread_id text NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_mastra_members_by_row ON memory_mastra_members (row_id);
CREATE TABLE IF NOT EXISTS memory_mastra_seen (
  kind text NOT NULL, id text NOT NULL, updated_at text NOT NULL, PRIMARY KEY (kind, id)
);
CREATE TABLE IF NOT EXISTS memory_mastra_changes (
  txid bigint NOT NULL, kind text NOT NULL, id text NOT NULL, thread_id text, at timestamptz
);
CREATE INDEX IF NOT EXISTS memory_mastra_changes_by_txid ON memory_mastra_changes (txid);
CREATE OR REPLACE FUNCTION {s}memory_mastra_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(current_setting('lmm.mastra_sync', true), '') <> 'on' THEN RETURN NULL; END IF;
  IF TG_TABLE_NAME = 'memory_messages' THEN
    IF TG_OP <> 'INSERT' THEN
      INSERT INTO {s}memory_mastra_changes
      VALUES (txid_current(), 'message', OLD.id, OLD.thread_id, OLD.created_at);
    END IF;
    IF TG_OP <> 'DELETE' THEN
      INSERT INTO {s}memory_mastra_changes
      VALUES (txid_current(), 'message', NEW.id, NEW.thread_id, NEW.created_at);
    END IF;
  ELSIF TG_TABLE_NAME = 'memory_observation_groups' THEN
    IF TG_OP = 'DELETE' THEN
      INSERT INTO {s}memory_mastra_changes
      VALUES (txid_current(), 'observations', OLD.scope_key, NULL, NULL);
    ELSE
      INSERT INTO {s}memory_mastra_changes
      VALUES (txid_current(), 'observations', NEW.scope_key, NULL, NULL);
    END IF;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO {s}memory_mastra_changes VALUES (txid_current(),
      CASE WHEN TG_TABLE_NAME = 'memory_threads' THEN 'thread' ELSE 'resource' END, OLD.id,
      CASE WHEN TG_TABLE_NAME = 'memory_threads' THEN OLD.id END, NULL);
  ELSE
    INSERT INTO {s}memory_mastra_changes VALUES (txid_current(),
      CASE WHEN TG_TABLE_NAME = 'memory_threads' THEN 'thread' ELSE 'resource' END, NEW.id,
      CASE WHEN TG_TABLE_NAME = 'memory_threads' THEN NEW.id END, NULL);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS memory_mastra_note ON memory_messages;
CREATE TRIGGER memory_mastra_note
  AFTER INSERT OR DELETE OR UPDATE OF content, thread_id, created_at, role ON memory_messages
  FOR EACH ROW EXECUTE FUNCTION {s}memory_mastra_note();
DROP TRIGGER IF EXISTS memory_mastra_note ON memory_threads;
CREATE TRIGGER memory_mastra_note AFTER INSERT OR UPDATE OR DELETE ON memory_threads
  FOR EACH ROW EXECUTE FUNCTION {s}memory_mastra_note();
DROP TRIGGER IF EXISTS memory_mastra_note ON memory_resources;
CREATE TRIGGER memory_mastra_note
  AFTER INSERT OR DELETE OR UPDATE OF working_memory, metadata ON memory_resources
  FOR EACH ROW EXECUTE FUNCTION {s}memory_mastra_note();
DROP TRIGGER IF EXISTS memory_mastra_note ON memory_observation_groups;
CREATE TRIGGER memory_mastra_note AFTER INSERT OR UPDATE OR DELETE ON memory_observation_groups
  FOR EACH ROW EXECUTE FUNCTION {s}memory_mastra_note();
"""


class MastraPostgresStorage(MastraStorage, PostgresStorage):
    """Memory on a Mastra ``PostgresStore``'s tables (``MastraStorage(dsn)`` makes one).

    Examples:
        >>> MastraPostgresStorage.__mro__[1].__name__
        'MastraStorage'
    """

    engine = "postgres"

    mirrored_times = True

    def __init__(
        self,
        conninfo: str,
        *,
        schema_name: str = "public",
        schema: str | None = None,
        **options: Any,
    ) -> None:
        from ...errors import ConfigurationError
        from ..postgres.backend import _SCHEMA_NAME

        if not _SCHEMA_NAME.match(schema_name):
            raise ConfigurationError(
                f"schema_name must be a lower-case SQL identifier, got {schema_name!r}"
            )
        ours = schema or f"{schema_name}_langchain"
        if ours == schema_name:  # Mastra takes our tables there for its vector indexes
            raise ConfigurationError(
                f"schema={ours!r} is Mastra's schemaName: Mastra's PostgresStore treats every "
                "table named memory_messages* in its schema as one of its vector indexes (its "
                "deleteThread deletes from them), so memory's tables need a schema of their "
                f"own: leave schema= out (then {schema_name + '_langchain'!r}) or name another"
            )
        self.url = conninfo
        self.schema_name = schema_name
        self.mastra = f'"{schema_name}".'
        self._ready = False
        super().__init__(conninfo, schema=ours, **options)

    def __repr__(self) -> str:
        return f"MastraStorage({self.where()!r}, schema_name={self.schema_name!r})"

    def setup(self) -> None:
        """Our schema, Mastra's tables where missing, the change log; then read in."""
        super().setup()
        with super()._transaction(write=True) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('langchain_mastra_memory'))")
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema_name}"')
            conn.execute(MASTRA_TABLES.format(m=self.mastra))
            conn.execute(SYNC_TABLES.format(s=f'"{self.schema}".'))
        self._ready = True
        self.catch_up()

    @contextmanager
    def _transaction(self, *, write: bool, atomic: bool = True) -> Iterator[Any]:
        """`PostgresStorage._transaction`, with Mastra's changes read in first and ours
        written out before it commits (a write whose statements stand alone, ``atomic=False``,
        touches no message: as it is)."""
        if not self._ready or (write and not atomic):
            with super()._transaction(write=write, atomic=atomic) as conn:
                yield conn
            return
        if not write:
            self.catch_up()
            with super()._transaction(write=False) as conn:
                yield conn
            return
        with super()._transaction(write=True) as conn:
            conn.execute("SELECT set_config('lmm.mastra_sync', 'on', true)")
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('lmm-mastra-sync'))")
            self._caught_up = self._read_in(conn)
            self._changes(conn)  # (what reading in wrote)
            yield conn
            self._write_out(conn)

    def drop_schema(self) -> None:
        """Drop our schema, with everything of ours in it (never Mastra's: its tables are in
        `schema_name`, always another)."""
        self._ready = False
        super().drop_schema()

    def _changes(self, conn: Any) -> list[tuple[str, str, str | None, Any]]:
        rows = conn.execute(
            "DELETE FROM memory_mastra_changes WHERE txid = txid_current() "
            "RETURNING kind, id, thread_id, at"
        ).fetchall()
        return [tuple(row) for row in rows]
