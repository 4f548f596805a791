"""Big partitions scanned in int8 and partitions kept on disk between runs: the same hits as a
brute-force scan, never a stale or erased vector after a restart, a crash or a write racing a
save (recall/exact/partitions.py, recall/exact/snapshots.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from langchain_mastra_memory.recall.engines.chroma import ChromaVectorStore, partition_name
from langchain_mastra_memory.recall.exact.partitions import INT8, INT8_AT, ExactPartitions, Loaded
from langchain_mastra_memory.recall.exact.snapshots import FOLDER, Snapshots

ROOT = Path(__file__).resolve().parents[1]


def near_duplicates(rows: int, dimension: int, seed: int) -> np.ndarray:
    """Chat-like vectors: a few hundred topics, each message close to its topic (near-equal
    scores are what an approximate first pass gets wrong)."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(300, dimension))
    vectors = topics[rng.integers(0, 300, rows)] + 0.35 * rng.normal(size=(rows, dimension))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.skipif(not INT8, reason="SimSIMD is part of the chroma extra the tests install")
@pytest.mark.parametrize("top_k", [1, 10, 150, 400])
def test_int8_candidates_give_the_exact_top_k(top_k: int) -> None:
    """Over `INT8_AT` rows the scan reads int8 copies for candidates and ranks them on the
    float32 rows: the hits and scores a full float32 sort gives, with and without a thread
    filter, on near-duplicate vectors of 384 dimensions."""
    vectors = near_duplicates(INT8_AT + 4_000, 384, seed=top_k)
    ids = [f"v{i}" for i in range(len(vectors))]
    threads = [f"t{i % 7}" for i in range(len(vectors))]
    exact = ExactPartitions(lambda key: Loaded(ids, vectors.copy(), ids, threads))
    assert exact.load("p") and exact._loaded["p"].int8 is not None
    rng = np.random.default_rng(100 + top_k)
    for query in (vectors[5] + 0.05 * rng.normal(size=384), rng.normal(size=384)):
        q = query / np.linalg.norm(query)
        for wanted in (None, frozenset({"t2", "t5"})):
            scores = vectors @ q
            if wanted is not None:
                scores[[t not in wanted for t in threads]] = -np.inf
            want = np.argsort(-scores, kind="stable")[:top_k]
            got = exact.search("p", query.tolist(), top_k=top_k, threads=wanted)
            assert got is not None
            assert [i for i, _ in got] == [f"v{i}" for i in want]
            assert [s for _, s in got] == pytest.approx(scores[want].tolist(), abs=1e-5)


def test_writes_keep_the_int8_rows_in_step() -> None:
    """Rows written, overwritten and deleted after the load reach the int8 copy too: a
    rewritten vector is found where it now points, a deleted one never."""
    vectors = near_duplicates(INT8_AT + 10, 64, seed=3)
    ids = [f"v{i}" for i in range(len(vectors))]
    exact = ExactPartitions(lambda key: Loaded(ids, vectors.copy(), ids, ["t"] * len(ids)))
    assert exact.load("p")
    target = np.zeros(64, dtype=np.float32)
    target[0] = 1.0
    exact.upsert("p", ["v3"], [target.tolist()], ["v3"], ["t"])  # overwritten
    exact.upsert("p", ["new"], [(-target).tolist()], ["new"], ["t"])  # appended
    assert exact.search("p", target.tolist(), top_k=1)[0][0] == "v3"
    assert exact.search("p", (-target).tolist(), top_k=1)[0][0] == "new"
    exact.delete("p", message_ids=["v3", "new"])
    for query in (target, -target):
        assert {i for i, _ in exact.search("p", query.tolist(), top_k=50)} & {"v3", "new"} == set()


def test_a_write_during_a_save_leaves_no_snapshot(tmp_path: Path) -> None:
    """A snapshot is the matrix as no write in progress could have changed it: one begun
    before the save finishes means no file; any write removes the file first."""
    rows = Loaded(["a", "b"], np.eye(2, 3), ["a", "b"], ["t", "t"])
    snapshots = Snapshots(tmp_path)
    exact = ExactPartitions(lambda key: rows, snapshots=snapshots)
    assert exact.load("p")  # loaded from the store: saved for the next run
    assert (tmp_path / "p.npz").exists()
    with exact.writing("p"):
        assert not (tmp_path / "p.npz").exists()  # removed before the store is touched
        exact.upsert("p", ["c"], [[0.0, 0.0, 1.0]], ["c"], ["t"])
        exact._save("p")
        assert not (tmp_path / "p.npz").exists()  # not while a write is under way
    exact.close()  # at exit: what changed since is saved
    saved = Snapshots(tmp_path).read("p")
    assert saved is not None and saved.ids == ["a", "b", "c"]


def test_an_unreadable_snapshot_is_dropped_and_the_store_read(tmp_path: Path) -> None:
    reads: list[str] = []

    def load(key: str) -> Loaded:
        reads.append(key)
        return Loaded(["a"], np.eye(1, 2), ["a"], ["t"])

    (tmp_path / "p.npz").write_bytes(b"torn")
    exact = ExactPartitions(load, snapshots=Snapshots(tmp_path))
    assert exact.load("p") and reads == ["p"]
    assert exact.search("p", [1.0, 0.0], top_k=1) == [("a", pytest.approx(1.0))]
    assert Snapshots(tmp_path).read("p") is not None  # written anew from the store's rows


def test_a_snapshot_is_searched_at_once_without_reading_the_store(tmp_path: Path) -> None:
    """A partition with a snapshot is not waited for until it is hot: its first search waits
    for the file (a fraction of a second) and is exact."""
    Snapshots(tmp_path).commit(
        "p", Snapshots(tmp_path).write("p", np.eye(2, 2, dtype=np.float32), ["a", "b"],
                                       ["a", "b"], ["t", "t"]), valid=True,
    )  # fmt: skip

    def load(key: str) -> Loaded:
        raise AssertionError("the store was read")

    exact = ExactPartitions(load, snapshots=Snapshots(tmp_path))  # hot_after=2 as by default
    assert exact.search("p", [0.0, 1.0], top_k=1) == [("b", pytest.approx(1.0))]


@pytest.mark.skipif(not INT8, reason="the int8 copy needs SimSIMD (the chroma extra)")
def test_a_snapshot_brings_its_int8_rows_back(tmp_path: Path) -> None:
    """Read back, a partition is the rows it was saved with, int8 copy included (not made
    again), and searches as it did; a file whose int8 rows do not match is not trusted."""
    rows = near_duplicates(INT8_AT + 10, 24, seed=5)
    ids = [f"v{i}" for i in range(len(rows))]
    first = ExactPartitions(lambda key: Loaded(ids, rows, ids, ["t"] * len(ids)),
                            snapshots=Snapshots(tmp_path))  # fmt: skip
    assert first.load("p")
    query = rows[7] + 0.01
    expected = first.search("p", query.tolist(), top_k=5)
    back = Snapshots(tmp_path).read("p")
    assert back is not None and back.is_unit and back.int8 is not None
    assert np.array_equal(back.int8, first._loaded["p"].int8[: len(ids)])  # type: ignore[index]
    again = ExactPartitions(never_read, snapshots=Snapshots(tmp_path))
    assert again.search("p", query.tolist(), top_k=5) == expected
    with np.load(tmp_path / "p.npz") as saved:
        parts = {name: saved[name] for name in saved.files}
    np.savez(tmp_path / "p.npz", **{**parts, "int8": parts["int8"][:-1]})  # a row short
    assert Snapshots(tmp_path).read("p") is None and not (tmp_path / "p.npz").exists()


def saved(folder: Path, key: str, rows: int) -> None:
    """A snapshot of `rows` unit rows for partition `key`, as a previous process left it."""
    vectors = np.eye(rows, 4, dtype=np.float32)
    vectors[:, 0] = 1.0
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"{key}{i}" for i in range(rows)]
    snapshots = Snapshots(folder)
    assert snapshots.commit(key, snapshots.write(key, vectors, ids, ids, ["t"] * rows), valid=True)


def never_read(key: str) -> Loaded:
    raise AssertionError(f"the store was read for {key}")


def resumed(exact: ExactPartitions) -> set[str]:
    """Start reading the saved partitions back, wait for it, and say which are held."""
    exact.resume()
    for loader in list(exact._loaders):
        loader.join(30)
    return set(exact._loaded)


def test_the_last_processes_partitions_are_read_back_at_open(tmp_path: Path) -> None:
    """A restart holds again what the last process saved, newest first, before any search,
    within the memory bound, without reading the store."""
    saved(tmp_path, "older", 200)
    saved(tmp_path, "newer", 200)
    os.utime(tmp_path / "older.npz", (1, 1))  # saved long before "newer"
    assert resumed(ExactPartitions(never_read, snapshots=Snapshots(tmp_path))) == {
        "older", "newer"}  # fmt: skip
    one_fits = (tmp_path / "newer.npz").stat().st_size * 5 // 4 + 100
    bounded = ExactPartitions(never_read, snapshots=Snapshots(tmp_path), max_bytes=one_fits)
    assert resumed(bounded) == {"newer"}
    assert bounded.search("newer", [0.0, 0.0, 0.0, 1.0], top_k=1)[0][0] == "newer3"  # type: ignore[index]


def test_warming_a_partition_being_read_back_waits_for_it(tmp_path: Path) -> None:
    """An app warming its users' partitions right after a restart (`load`, what
    `ChromaVectorStore.warm` calls) gets True for one still being read back from its
    snapshot: it waits for that read instead of answering False, and never reads the store."""
    saved(tmp_path, "p", 50)
    started = threading.Event()

    class Slow(Snapshots):
        def read(self, key: str) -> Loaded | None:
            started.set()
            time.sleep(0.3)  # a big partition's file
            return super().read(key)

    exact = ExactPartitions(never_read, snapshots=Slow(tmp_path))
    exact.resume()
    assert started.wait(30)
    assert exact.load("p") is True
    assert exact.search("p", [0.0, 0.0, 0.0, 1.0], top_k=1)[0][0] == "p3"  # type: ignore[index]
    exact.close()


def test_a_snapshot_removed_before_it_is_read_back_is_left_to_the_store(tmp_path: Path) -> None:
    """Listed, then removed by a write before its turn: not held, not declined: the store
    serves it and loads it when it is hot, as if there had never been a snapshot."""
    saved(tmp_path, "p", 10)
    reads: list[str] = []

    def load(key: str) -> Loaded:
        reads.append(key)
        return Loaded(["x"], np.eye(1, 4), ["x"], ["t"])

    class Late(Snapshots):
        def saved(self) -> list[tuple[str, int]]:
            listed = super().saved()
            self.drop("p")  # a write's removal, between the listing and the read
            return listed

    exact = ExactPartitions(load, snapshots=Late(tmp_path))
    assert resumed(exact) == set() and reads == []
    assert exact.search("p", [1.0, 0.0, 0.0, 0.0], top_k=1) is None  # the store's turn
    exact.search("p", [1.0, 0.0, 0.0, 0.0], top_k=1)  # hot: loaded from the store
    for loader in list(exact._loaders):
        loader.join(30)
    assert reads == ["p"] and exact.search("p", [1.0, 0, 0, 0], top_k=1) == [
        ("x", pytest.approx(1.0))]  # fmt: skip


RESTART = textwrap.dedent(
    """
    import json, os, signal, sys
    import numpy as np
    from langchain_mastra_memory import ChromaVectorStore
    from langchain_mastra_memory.recall.vector import VectorRecord

    folder, step = sys.argv[1], sys.argv[2]
    store = ChromaVectorStore(folder)
    reads = []
    load = store._exact._load
    store._exact._load = lambda key: (reads.append(key), load(key))[1]
    rng = np.random.default_rng(0)
    def records(ids, thread="t1", owner="alice"):
        return [VectorRecord(i, rng.normal(size=32).tolist(), thread, owner, "user", 0.0)
                for i in ids]
    def found(owner="alice"):
        hits = store.query("idx", np.ones(32).tolist(), top_k=500, resource_id=owner)
        return [h.message_id for h in hits]
    if step == "write":  # an import, then a normal exit (the exit saves the snapshot)
        store.upsert("idx", records([f"m{i}" for i in range(300)]))
        store.upsert("idx", records(["b1"], owner="bob"))
    elif step == "crash":  # a write, then killed: no exit handler runs
        store.upsert("idx", [VectorRecord("late", np.ones(32).tolist(), "t1", "alice", "user",
                                          0.0)])
        print(json.dumps({"reads": reads, "found": []}), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    elif step == "warm":  # an application warming its users' partitions at start
        assert store.warm("idx", "alice")
    elif step == "resume":  # opened, nothing searched yet: what is held?
        for loader in list(store._exact._loaders):
            loader.join(60)
        print(json.dumps({"reads": reads, "held": len(store._exact._loaded)}))
        sys.exit(0)
    elif step == "erase":
        store.delete("idx", thread_id="t1", resource_id="alice")
    print(json.dumps({"reads": reads, "found": found(), "bob": found("bob")}))
    """
)


def run(folder: Path, step: str) -> dict:
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", RESTART, str(folder), step],
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    expected = -signal.SIGKILL if step == "crash" else 0
    assert done.returncode == expected, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def snapshot_files(folder: Path) -> list[Path]:
    return sorted((folder / FOLDER).glob("*.npz")) if (folder / FOLDER).exists() else []


@pytest.mark.slow
def test_restarts_read_snapshots_and_never_a_stale_or_erased_one(tmp_path: Path) -> None:
    """Real processes over one embedded folder: a clean exit saves what was written; the next
    process searches exactly without reading the store; a process killed after a write leaves
    no snapshot behind, so the next one reads the store and finds the write; after an erasure
    nothing of the erased thread is on disk or found."""
    folder = tmp_path / "vectors"
    first = run(folder, "write")
    assert len(first["found"]) == 300 and first["bob"] == ["b1"]
    assert len(snapshot_files(folder)) == 2  # alice's and bob's partitions
    assert run(folder, "resume") == {"reads": [], "held": 2}  # read back before any search
    again = run(folder, "read")
    assert again["reads"] == [] and again["found"] == first["found"]  # the snapshot, exact
    run(folder, "crash")  # wrote "late" to alice's partition, then killed
    assert len(snapshot_files(folder)) == 1  # alice's was removed before the write
    after = run(folder, "read")
    assert after["found"][0] == "late"  # the store's truth, not the snapshot before it
    warmed = run(folder, "warm")  # loaded from the store, saved at once
    assert len(warmed["reads"]) == 1 and warmed["found"] == after["found"]
    assert len(snapshot_files(folder)) == 2
    erased = run(folder, "erase")
    assert erased["found"] == [] and erased["bob"] == ["b1"]
    alice = ChromaVectorStore(folder)._existing(partition_name("idx", "alice"))
    assert alice is not None
    assert not (folder / FOLDER / f"{alice.id}.npz").exists()  # nothing held, nothing saved


@pytest.mark.slow
def test_the_int8_scan_runs_on_an_avx2_cpu() -> None:
    """SimSIMD picks its kernels at run time: on an emulated AVX2-only CPU the int8 scan runs
    (no illegal instruction) and gives the integer dot products Python computes. (numpy's
    own sort is not used here: under QEMU 7.2 its AVX2 argsort misorders or crashes, which
    real AVX2 CPUs do not; see test_native_isa.py.)"""
    from native_isa import on_avx2_cpu

    script = textwrap.dedent(
        """
        import numpy as np
        from langchain_mastra_memory.recall.exact.matrix import int8_dot
        from langchain_mastra_memory.recall.exact.matrix import small
        rng = np.random.default_rng(0)
        vectors = rng.normal(size=(300, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows, query = small(vectors), small(vectors[7])
        got = np.asarray(int8_dot(rows, vectors[7])).ravel().tolist()
        want = [sum(int(a) * int(b) for a, b in zip(row.tolist(), query.tolist()))
                for row in rows]
        print(got == [float(w) for w in want])
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(on_avx2_cpu([sys.executable, "-c", script]), capture_output=True,
                          text=True, timeout=600, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "True"


def test_a_store_with_exact_search_off_still_removes_the_snapshot(tmp_path: Path) -> None:
    """One folder, two stores: one that holds partitions (and saves them) and one with exact
    search off; the second's writes remove the first's snapshot, which would miss them."""
    from langchain_mastra_memory.recall.vector import VectorRecord

    def records(ids: list[str]) -> list[VectorRecord]:
        rng = np.random.default_rng(len(ids))
        return [VectorRecord(i, rng.normal(size=8).tolist(), "t", "alice", "user", 0.0)
                for i in ids]  # fmt: skip

    holding = ChromaVectorStore(tmp_path)
    holding.upsert("idx", records(["a", "b"]))
    assert holding._exact is not None
    holding._exact.close()  # as at exit: saved
    key = str(holding._existing(partition_name("idx", "alice")).id)
    assert (tmp_path / FOLDER / f"{key}.npz").exists()
    ChromaVectorStore(tmp_path, exact_limit=0).upsert("idx", records(["c"]))
    assert not (tmp_path / FOLDER / f"{key}.npz").exists()
