"""PostgreSQL specifics: several processes sharing one database, schema versioning."""

from __future__ import annotations

import multiprocessing as mp
import os
import uuid
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from langchain_mastra_memory import (
    ConfigurationError,
    Memory,
    PostgresStorage,
    SchemaVersionError,
)

pytestmark = pytest.mark.postgres
DSN = os.environ["LMM_TEST_POSTGRES_DSN"]  # given, or the session's own server (conftest)


@pytest.fixture
def schema() -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _reporting(work, report: str, *args) -> None:  # runs in a child process
    """Run `work`; a failure's traceback goes to `report` (what the test shows), exit code 1."""
    import traceback

    try:
        work(*args)
    except BaseException:
        with open(report, "w") as out:
            out.write(traceback.format_exc())
        raise


def _appender(schema: str, worker: int, count: int) -> None:
    storage = PostgresStorage(DSN, schema=schema, max_connections=2)
    for i in range(count):
        storage.save_messages(
            [HumanMessage(f"w{worker}-{i}", id=f"w{worker}-{i}")],
            thread_id="t1",
            resource_id="alice",
        )
    storage.close()


def _wm_updater(schema: str, worker: int) -> None:
    memory = Memory(
        storage=PostgresStorage(DSN, schema=schema, max_connections=2),
        options={"working_memory": {"enabled": True, "schema": {"type": "object"}}},
    )
    for i in range(25):
        memory.update_working_memory({f"w{worker}": {f"k{i}": i}}, resource_id="alice")
    memory.storage.close()


def test_four_processes_append_and_update_working_memory(schema: str, tmp_path) -> None:
    """Four appenders and four working-memory updaters at once. Each child reports its own
    failure (the traceback, in the assertion), so a rare one says what it was."""
    storage = PostgresStorage(DSN, schema=schema)
    storage.create_thread(thread_id="t1", resource_id="alice")
    ctx = mp.get_context("spawn")
    reports = [str(tmp_path / f"child-{n}.txt") for n in range(8)]
    procs = [ctx.Process(target=_reporting, args=(_appender, reports[w], schema, w, 30))
             for w in range(4)]  # fmt: skip
    procs += [ctx.Process(target=_reporting, args=(_wm_updater, reports[4 + w], schema, w))
              for w in range(4)]  # fmt: skip
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    failures = {r: Path(r).read_text() for r in reports if os.path.exists(r)}
    assert failures == {}
    assert [p.exitcode for p in procs] == [0] * 8
    stored = storage.list_messages("t1")
    ids = [s.message.id for s in stored]
    assert len(ids) == len(set(ids)) == 120
    times = [s.created_at for s in stored]
    assert times == sorted(times) and len(set(times)) == len(times)
    for w in range(4):
        assert [i for i in ids if i.startswith(f"w{w}-")] == [f"w{w}-{i}" for i in range(30)]
    memory = Memory(
        storage=storage, options={"working_memory": {"enabled": True, "schema": {"type": "object"}}}
    )
    assert memory.get_working_memory(resource_id="alice") == {
        f"w{w}": {f"k{i}": i for i in range(25)} for w in range(4)
    }


def test_newer_schema_version_is_refused(schema: str) -> None:
    storage = PostgresStorage(DSN, schema=schema)
    with storage._transaction(write=True) as conn:
        conn.execute("UPDATE memory_schema SET version = version + 1")
    with pytest.raises(SchemaVersionError, match="upgrade"):
        PostgresStorage(DSN, schema=schema)


@pytest.mark.parametrize("bad", ["Public", "x; DROP TABLE y", "1abc", ""])
def test_schema_names_are_checked(bad: str) -> None:
    with pytest.raises(ConfigurationError):
        PostgresStorage(DSN, schema=bad)


def test_a_resources_writers_take_turns_so_seq_follows_commits(schema: str) -> None:
    """Saves into different threads of one resource wait for each other (the owner's row is
    locked before the insert), so a message never commits with a lower seq than one already
    committed: observational memory's resource-scope cursor can move past what it has read."""
    import threading

    import psycopg

    storage = PostgresStorage(DSN, schema=schema)
    storage.create_thread(thread_id="a", resource_id="alice")
    storage.create_thread(thread_id="b", resource_id="alice")
    storage.create_thread(thread_id="c", resource_id="carol")
    done: list[str] = []
    with psycopg.connect(DSN) as holder:  # a transaction holding alice's row, as a save does
        holder.execute(f'SELECT id FROM "{schema}".memory_resources WHERE id = %s FOR UPDATE',
                       ("alice",))  # fmt: skip

        def save(thread: str, owner: str) -> None:
            storage.save_messages([HumanMessage(thread)], thread_id=thread, resource_id=owner)
            done.append(thread)

        waiting = threading.Thread(target=save, args=("b", "alice"))
        waiting.start()
        save("c", "carol")  # another resource: not held up
        waiting.join(0.5)
        assert done == ["c"] and waiting.is_alive()  # alice's save waits for the row
        holder.rollback()
    waiting.join(10)
    assert done == ["c", "b"]
    storage.close()


def test_keyword_search_weighs_rare_words_by_their_counted_messages(schema: str) -> None:
    """Words too rare for ``pg_stats`` (every word of a young table) are counted, so the rarer
    of two query words outweighs the other, as FTS5's BM25 does: one message of 'zebra'
    beats five of 'giraffe' although it is longer (equal weights would rank it below)."""
    storage = PostgresStorage(DSN, schema=schema)
    storage.create_thread(thread_id="a1", resource_id="alice")
    rare = HumanMessage("zebra sighting today at the lake", id="zebra")
    common = [HumanMessage("giraffe sighting today", id=f"giraffe{i}") for i in range(5)]
    filler = [HumanMessage(f"hello there friend {i}", id=f"f{i}") for i in range(20)]
    storage.save_messages([*filler, *common, rare], thread_id="a1", resource_id="alice")
    hits = storage.search_text("giraffe zebra", resource_id="alice", limit=6)
    assert hits[0][0] == "zebra"
    assert {h[0] for h in hits[1:]} == {f"giraffe{i}" for i in range(5)}


def test_the_keyword_index_has_no_pending_list(schema: str) -> None:
    """Every search would read GIN's pending list in full: new entries go in at once."""
    import psycopg

    PostgresStorage(DSN, schema=schema)
    with psycopg.connect(DSN) as conn:
        (options,) = conn.execute(
            "SELECT reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = 'memory_messages_tsv'",
            (schema,),
        ).fetchone()
    assert "fastupdate=off" in options
