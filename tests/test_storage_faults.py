"""Storage faults: a corrupt file, a full disk, writers killed with SIGKILL at random points.

Each fault surfaces as `StorageError` (the driver's error as ``__cause__``), and what was
acknowledged before it is still there, whole: no half batch.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from langchain_mastra_memory import PostgresStorage, SQLiteStorage, StorageError


def test_a_corrupt_file_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    storage = SQLiteStorage(path)
    storage.create_thread(thread_id="t", resource_id="r")
    storage.save_messages([HumanMessage(f"m{i} " * 50) for i in range(200)], thread_id="t",
                          resource_id="r")  # fmt: skip
    storage.close()
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 4096):  # every page after the header: garbage
        data[offset + 8 : offset + 200] = os.urandom(192)
    path.write_bytes(bytes(data))
    for wal in (tmp_path / "m.db-wal", tmp_path / "m.db-shm"):
        wal.unlink(missing_ok=True)
    with pytest.raises(StorageError) as info:
        broken = SQLiteStorage(path)
        broken.list_messages("t")
        broken.save_messages([HumanMessage("more")], thread_id="t", resource_id="r")
    assert info.value.__cause__ is not None


def test_not_a_database_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are not the pages you are looking for\n" * 100)
    with pytest.raises(StorageError):
        SQLiteStorage(path)


FULL_DISK = textwrap.dedent(
    """
    import json, resource, signal, sys
    from langchain_core.messages import HumanMessage
    from langchain_mastra_memory import SQLiteStorage, StorageError
    storage = SQLiteStorage(sys.argv[1])
    storage.create_thread(thread_id="t", resource_id="r")
    saved = []
    size = __import__("os").path.getsize(sys.argv[1])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 400_000, size + 400_000))
    for batch in range(10_000):
        try:
            stored = storage.save_messages(
                [HumanMessage(f"batch {batch} message {i} " + "x" * 400) for i in range(20)],
                thread_id="t", resource_id="r",
            )
        except StorageError as exc:
            print(json.dumps({"saved": saved, "error": str(exc),
                              "cause": type(exc.__cause__).__name__}))
            break
        saved.append(batch)
    """
)


def test_a_full_disk_is_a_storage_error_and_keeps_what_was_saved(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    SQLiteStorage(path).close()
    run = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(path)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["saved"], "the limit left no room at all"
    assert report["cause"] in ("OperationalError", "DatabaseError")
    storage = SQLiteStorage(path)
    texts = [s.message.content for s in storage.list_messages("t")]
    batches = {int(str(t).split()[1]) for t in texts}
    assert batches == set(report["saved"])  # every acknowledged batch, and no part of another
    assert len(texts) == 20 * len(report["saved"])


WRITER = textwrap.dedent(
    """
    import sys
    from langchain_core.messages import HumanMessage
    from langchain_mastra_memory import PostgresStorage, SQLiteStorage
    kind, target, schema, name = sys.argv[1:5]
    storage = (SQLiteStorage(target) if kind == "sqlite"
               else PostgresStorage(target, schema=schema))
    print("ready", flush=True)
    batch = 0
    while True:
        storage.save_messages(
            [HumanMessage(f"{name} {batch} {i}") for i in range(25)],
            thread_id="t", resource_id="r",
        )
        print(batch, flush=True)  # acknowledged
        batch += 1
    """
)


def backends(tmp_path: Path) -> list[tuple[str, str, str]]:
    found = [("sqlite", str(tmp_path / "m.db"), "")]
    if os.environ.get("LMM_TEST_POSTGRES_DSN"):
        found.append(
            ("postgres", os.environ["LMM_TEST_POSTGRES_DSN"], f"k_{uuid.uuid4().hex[:10]}")
        )
    return found


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_writers_killed_at_random_points_lose_no_acknowledged_batch(
    tmp_path: Path, kind: str
) -> None:
    found = {k: (t, s) for k, t, s in backends(tmp_path)}
    if kind not in found:
        pytest.fail("LMM_TEST_POSTGRES_DSN is not set (conftest sets it, or starts a server)")
    target, schema = found[kind]
    storage = SQLiteStorage(target) if kind == "sqlite" else PostgresStorage(target, schema=schema)
    storage.create_thread(thread_id="t", resource_id="r")
    acknowledged: dict[str, set[int]] = {}
    rng = random.Random(7)
    try:
        for round_ in range(3):
            writers = {}
            for w in range(3):
                name = f"w{round_}-{w}"
                writers[name] = subprocess.Popen(
                    [sys.executable, "-c", WRITER, kind, target, schema, name],
                    stdout=subprocess.PIPE, text=True,
                )  # fmt: skip
            first: dict[str, set[int]] = {}
            for name, proc in writers.items():  # writing (a first batch acknowledged, on a
                assert proc.stdout is not None  # loaded machine too): then killed at random
                assert proc.stdout.readline().strip() == "ready"
                first[name] = {int(proc.stdout.readline())}
            time.sleep(rng.uniform(0.3, 1.5))
            for name, proc in writers.items():
                proc.send_signal(signal.SIGKILL)
                out, _ = proc.communicate(timeout=30)
                acknowledged[name] = first[name] | {int(line) for line in out.split()}
        batches: dict[tuple[str, int], int] = {}
        for stored in storage.list_messages("t"):
            writer, batch, _ = str(stored.message.content).split()
            batches[(writer, int(batch))] = batches.get((writer, int(batch)), 0) + 1
        assert all(count == 25 for count in batches.values()), "a half batch was stored"
        for name, acked in acknowledged.items():
            stored_batches = {b for (w, b) in batches if w == name}
            assert acked <= stored_batches, f"{name} lost acknowledged batches"
        assert sum(len(a) for a in acknowledged.values()) > 0
    finally:
        if isinstance(storage, PostgresStorage):
            storage.drop_schema()
        storage.close()
