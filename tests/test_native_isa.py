"""The native code the tests run works on any x86-64 with AVX2, not only on CPUs with AVX-512.

The test PostgreSQL and its pgvector once came from a wheel built for AVX-512: on an AVX2 CPU
every vector query killed the backend (SIGILL), and CI stayed green on machines that have
AVX-512. These checks fail on such a build whatever the CPU running them: the machine code is
read, and the programs are run on an emulated CPU without AVX-512.
"""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy
import pgserver
import pytest
from native_isa import avx512_functions, avx512_outside_dispatch, on_avx2_cpu
from pgserver.utils import ensure_user_exists

from langchain_mastra_memory.testing import pgvector_problem

pytestmark = pytest.mark.slow
PGINSTALL = Path(pgserver.__file__).parent / "pginstall"
AVX512_PROGRAM = """
#include <immintrin.h>
#include <stdio.h>
__attribute__((target("avx512f"))) float sum_avx512(const float *v) {
    return _mm512_reduce_add_ps(_mm512_loadu_ps(v));
}
__attribute__((target("avx512f"))) float sum_plain(const float *v) {  /* not dispatched */
    return _mm512_reduce_add_ps(_mm512_loadu_ps(v));
}
int main(int argc, char **argv) {
    float v[16] = {1};
    printf("%f\\n", argc > 1 ? sum_plain(v) : 1.0f);
    return 0;
}
"""


@pytest.fixture(scope="module")
def avx512_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A program with a dispatched-looking AVX-512 function and one that is not."""
    folder = tmp_path_factory.mktemp("isa")
    (folder / "p.c").write_text(AVX512_PROGRAM)
    subprocess.run(["gcc", "-O2", "-o", str(folder / "p"), str(folder / "p.c")], check=True)
    return folder / "p"


def test_the_checks_catch_an_avx512_build(avx512_program: Path) -> None:
    """The reading names the undispatched function; the emulated CPU dies on it."""
    assert set(avx512_functions(avx512_program)) == {"sum_avx512", "sum_plain"}
    assert avx512_outside_dispatch(avx512_program) == ["sum_plain"]
    fine = subprocess.run(on_avx2_cpu([str(avx512_program)]), capture_output=True, text=True)
    assert fine.returncode == 0 and fine.stdout.strip() == "1.000000"
    crash = subprocess.run(on_avx2_cpu([str(avx512_program), "go"]), capture_output=True)
    assert crash.returncode == -signal.SIGILL


@pytest.mark.parametrize(
    "binary",
    [
        "bin/postgres",
        "bin/initdb",
        "bin/pg_ctl",
        "bin/pg_basebackup",  # (the standbys of the failover and read-replica tests)
        *sorted(str(p.relative_to(PGINSTALL)) for p in (PGINSTALL / "lib/postgresql").glob("*.so")),
    ],
)
def test_postgres_and_pgvector_use_avx512_only_where_chosen_at_run_time(binary: str) -> None:
    assert avx512_outside_dispatch(PGINSTALL / binary) == []


SITE = Path(numpy.__file__).parents[1]  # the venv's site-packages
# SimSIMD names its kernels by the CPU generation that CPUID must report before one is chosen
SIMSIMD_DISPATCHED = re.compile(r"_(skylake|ice|genoa|sapphire|turin)$")


def test_qdrant_edge_uses_avx512_only_where_chosen_at_run_time() -> None:
    assert avx512_outside_dispatch(SITE / "qdrant_edge" / "qdrant_edge.abi3.so") == []


def test_libsql_uses_avx512_only_where_chosen_at_run_time() -> None:
    """The libsql wheel `MastraVectorStore` writes Mastra's LibSQL vector index with."""
    [library] = (SITE / "libsql").glob("*.so")
    assert avx512_outside_dispatch(library) == []


def test_simsimd_uses_avx512_only_in_kernels_chosen_at_run_time() -> None:
    (library,) = SITE.glob("simsimd*.so")
    outside = avx512_outside_dispatch(library)
    assert outside, "SimSIMD ships AVX-512 kernels: the check would find them"
    assert [f for f in outside if not SIMSIMD_DISPATCHED.search(f)] == []


def preloaded() -> list[Path]:
    """The bundled extensions that load only at server start (as pgserver starts them)."""
    return list((PGINSTALL / "lib/postgresql").glob("pg_textsearch.so"))


def run_as_server_user(command: list[str], **kwargs) -> subprocess.Popen:
    """PostgreSQL refuses to run as root: as root, run as pgserver's own system user."""
    user = "pgserver" if os.geteuid() == 0 else None
    return subprocess.Popen(command, user=user, **kwargs)


def test_postgres_with_pgvector_serves_vector_search_on_an_avx2_cpu() -> None:
    """The session's PostgreSQL build, started on an emulated AVX2-only CPU: the canary every
    test session runs first (HNSW, cosine and L2 distance, vector and halfvec) passes."""
    data = Path(tempfile.mkdtemp(prefix="lmm-isa-"))
    sockets = Path(tempfile.mkdtemp(prefix="lmm-isa-sock-"))
    if os.geteuid() == 0:
        ensure_user_exists("pgserver")
        for folder in (data, sockets):
            subprocess.run(["chown", "pgserver", str(folder)], check=True)
    init = run_as_server_user(
        [str(PGINSTALL / "bin/initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"],
        stdout=subprocess.DEVNULL,
    )
    assert init.wait(timeout=120) == 0
    server = run_as_server_user(
        on_avx2_cpu(
            [str(PGINSTALL / "bin/postgres"), "-D", str(data), "-k", str(sockets), "-h", ""]
            + ["-c", "fsync=off"]
            + [arg for p in preloaded() for arg in ("-c", f"shared_preload_libraries={p.stem}")]
        ),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        dsn = f"postgresql://postgres@/postgres?host={sockets}"
        deadline = time.monotonic() + 120
        while not list(sockets.glob(".s.PGSQL.*")):
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, "the emulated server did not start in 2 min"
            time.sleep(0.5)
        problem = pgvector_problem(dsn)
        assert problem is None, problem
        assert server.poll() is None  # no backend died, no restart
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)


def test_chroma_and_the_embedding_model_run_on_an_avx2_cpu(tmp_path: Path) -> None:
    """Recall's embedded engine and the default embedder (ONNX Runtime or numpy) choose their
    instructions at run time: they embed, store and find on an emulated AVX2-only CPU."""
    script = textwrap.dedent(
        f"""
        from langchain_mastra_memory import ChromaVectorStore
        from langchain_mastra_memory.recall.embedders import default_embedder
        from langchain_mastra_memory.recall.vector import VectorRecord

        embedder = default_embedder()
        texts = ["I play the cello on Sundays", "Paris in the spring", "green tea"]
        vectors = embedder.embed_documents(texts)
        store = ChromaVectorStore(path={str(tmp_path)!r})
        store.upsert("isa", [VectorRecord(f"m{{i}}", v, "t", "alice", "user", float(i))
                             for i, v in enumerate(vectors)])
        query = embedder.embed_query("which instrument do I play?")
        print([h.message_id for h in store.query("isa", query, top_k=1, resource_id="alice")])
        """
    )
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        on_avx2_cpu([sys.executable, "-c", script]),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "['m0']"


def test_milvus_lite_and_qdrant_local_run_on_an_avx2_cpu(tmp_path: Path) -> None:
    """Milvus Lite searches with FAISS (whose wheels carry AVX2 and AVX-512 builds chosen at
    load time), Qdrant Edge with its own kernels and Qdrant's local mode with numpy: all run
    on an emulated AVX2-only CPU (no illegal instruction). Milvus's and Qdrant Edge's answers
    are checked; Qdrant local mode's ranking comes out wrong under QEMU 7.2 (not natively:
    numpy's AVX2 sort misorders or crashes under QEMU, see test_exact_restart.py), so only
    that it answers is checked for it."""
    script = textwrap.dedent(
        f"""
        import warnings
        warnings.simplefilter("ignore")
        from langchain_mastra_memory import (MilvusVectorStore, QdrantEdgeVectorStore,
                                             QdrantVectorStore)
        from langchain_mastra_memory.recall.vector import VectorRecord

        found = []
        for store in (MilvusVectorStore({str(tmp_path / "m.db")!r}),
                      QdrantEdgeVectorStore({str(tmp_path / "e")!r}),
                      QdrantVectorStore({str(tmp_path / "q")!r})):
            store.upsert("isa", [VectorRecord(f"m{{i}}", [1.0, float(i), 0.5], "t", "alice",
                                              "user", 0.0) for i in range(50)])
            found.append(store.query("isa", [1.0, 0.0, 0.5], top_k=1, resource_id="alice")[0].message_id)
        print(found)
        """
    )
    done = subprocess.run(on_avx2_cpu([sys.executable, "-c", script]), capture_output=True,
                          text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    milvus, edge, qdrant = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert milvus == "m0" and edge == "m0" and qdrant.startswith("m")


def test_the_langgraph_server_stack_runs_on_an_avx2_cpu() -> None:
    """`langgraph dev`'s native parts (the test runs it): jsonschema-rs, orjson, uvloop and
    gRPC, exercised on an emulated AVX2-only CPU (the static check flags code that orjson and
    jsonschema-rs choose at run time, so their code is run instead)."""
    script = textwrap.dedent(
        """
        import asyncio, json
        import grpc, jsonschema_rs, orjson, uvloop
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        valid = jsonschema_rs.validator_for(schema)
        assert valid.is_valid({"n": 3}) and not valid.is_valid({"n": "x"})
        big = {"values": [i / 7 for i in range(20_000)], "text": "é" * 50_000 + "x" * 70_000}
        assert orjson.loads(orjson.dumps(big)) == json.loads(json.dumps(big))
        grpc.insecure_channel("127.0.0.1:9").close()

        async def main():
            await asyncio.sleep(0)
            return "ok"

        print(uvloop.run(main()))
        """
    )
    done = subprocess.run(on_avx2_cpu([sys.executable, "-c", script]), capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "ok"
