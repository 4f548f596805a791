"""Memory behind a real LangGraph Server: ``langgraph dev`` (langgraph-cli[inmem]) started in a
temporary folder with ``langgraph.json`` naming `langchain_mastra_memory.langgraph_server`'s
checkpointer and store, a custom auth giving two identities (alice, bob), and a graph using
``memory.middleware()``. It is driven with ``langgraph-sdk`` as an application would: runs,
state, history, copy, delete and store search answer the owner; the other identity is refused
and its model input holds nothing of the first user's; memory's rows sit under each identity;
recall crosses the owner's threads; the server warns of no missing checkpointer method. A web
page (another origin, no token, or Studio's header) reaches nothing of alice's.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from langchain_mastra_memory import Memory, SQLiteStorage

pytestmark = [
    pytest.mark.langgraph_server,
    pytest.mark.skipif(sys.version_info < (3, 11), reason="langgraph-cli[inmem] needs Python 3.11"),
]
FIXTURE = Path(__file__).parent / "fixtures" / "langgraph_server"
SECRET = "Zanzibar-7731"


@dataclass
class Server:
    url: str
    folder: Path
    log: Path

    def client(self, token: str | None) -> Any:
        from langgraph_sdk import get_sync_client

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return get_sync_client(url=self.url, headers=headers)

    def memory(self) -> Memory:
        return Memory(storage=SQLiteStorage(self.folder / "memory.db"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_server(
    folder: Path, db: str, options: str = '{"semantic_recall": true}'
) -> Iterator[Server]:
    """``langgraph dev`` on the fixture's ``langgraph.json`` in `folder`, memory on `db` (a
    SQLite file or a PostgreSQL DSN, ``LMM_DB``), until the block ends."""
    for name in ("agent.py", "auth.py", "langgraph.json"):
        shutil.copy(FIXTURE / name, folder / name)
    port, log = free_port(), folder / "server.log"
    env = {
        **os.environ,
        "LMM_DB": db,
        "LMM_OPTIONS": options,
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    command = [str(Path(sys.executable).parent / "langgraph"), "dev", "--host", "127.0.0.1",
               "--port", str(port), "--no-browser", "--no-reload"]  # fmt: skip
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=out,
                                   start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("langgraph dev did not start:\n" + log.read_text()[-4000:])
            time.sleep(0.5)
        yield Server(url, folder, log)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("langgraph-server")
    with running_server(folder, str(folder / "memory.db")) as started:
        yield started


def ask(client: Any, thread_id: str, text: str, **kwargs: Any) -> str:
    """One run; the reply (the model answers with what it was shown)."""
    out = client.runs.wait(
        thread_id, "agent", input={"messages": [{"role": "user", "content": text}]}, **kwargs
    )
    return str(out["messages"][-1]["content"])


def new_thread(client: Any) -> str:
    return str(client.threads.create()["thread_id"])


@pytest.fixture(scope="module")
def alices(server: Server) -> dict[str, str]:
    """Alice's first thread, with her secret in it; her second thread, asking for it."""
    alice = server.client("alice-token")
    first = new_thread(alice)
    ask(alice, first, f"My gym locker code is {SECRET}.")
    second = new_thread(alice)
    reply = ask(alice, second, "What is my gym locker code?")
    return {"first": first, "second": second, "second_reply": reply}


def test_the_server_warns_of_no_missing_checkpointer_method(server: Server, alices) -> None:
    text = server.log.read_text()
    assert "Using custom checkpointer: MemoryCheckpointer" in text
    assert "Custom checkpointer missing" not in text
    assert "Traceback" not in text, text[-3000:]


def test_the_owner_reads_state_and_history_and_recalls_across_her_threads(
    server: Server, alices
) -> None:
    alice = server.client("alice-token")
    state = alice.threads.get_state(alices["first"])
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai"]
    history = alice.threads.get_history(alices["first"])
    assert history and SECRET in str(history[0]["values"])
    assert SECRET in alices["second_reply"]  # recalled from her first thread into the model


def test_memory_keeps_each_turn_under_the_callers_identity(server: Server, alices) -> None:
    memory = server.memory()
    threads = {t.id: t for t in memory.list_threads(resource_id="alice")}
    assert {alices["first"], alices["second"]} <= set(threads)
    kept = [str(m.content) for m in memory.get_messages(thread_id=alices["first"])]
    assert kept[0] == f"My gym locker code is {SECRET}." and len(kept) == 2  # once each


def test_copy_carries_memory_and_delete_removes_it(server: Server, alices) -> None:
    from langgraph_sdk.errors import NotFoundError

    alice = server.client("alice-token")
    copy = alice.threads.copy(alices["first"])["thread_id"]
    state = alice.threads.get_state(copy)
    assert SECRET in str(state["values"]["messages"])
    memory = server.memory()
    assert memory.get_thread(copy).resource_id == "alice"
    assert SECRET in str(memory.get_messages(thread_id=copy)[0].content)
    ask(alice, copy, "And my bike lock?")  # the copy goes on: its turns stored once
    assert len(memory.get_messages(thread_id=copy)) == 4
    alice.threads.delete(copy)
    assert server.memory().get_thread(copy) is None
    with pytest.raises(NotFoundError):
        alice.threads.get_state(copy)


def test_the_owners_store_search(server: Server, alices) -> None:
    alice = server.client("alice-token")
    alice.store.put_item(("alice", "notes"), "locker", {"text": f"code {SECRET}"})
    found = alice.store.search_items(("alice", "notes"))["items"]
    assert [i["key"] for i in found] == ["locker"] and SECRET in str(found[0]["value"])


def test_the_other_identity_is_refused_and_sees_nothing(server: Server, alices) -> None:
    from langgraph_sdk.errors import ConflictError, NotFoundError, PermissionDeniedError

    bob = server.client("bob-token")
    for read in (lambda: bob.threads.get_state(alices["first"]),
                 lambda: bob.threads.get_history(alices["first"]),
                 lambda: bob.threads.copy(alices["first"]),
                 lambda: bob.threads.delete(alices["first"])):  # fmt: skip
        with pytest.raises((NotFoundError, ConflictError)):  # (a copy: 409)
            read()
    with pytest.raises((NotFoundError, httpx.HTTPStatusError), match=r"404|[Nn]ot [Ff]ound"):
        ask(bob, alices["first"], "What is the locker code?")
    with pytest.raises(PermissionDeniedError):
        bob.store.search_items(("alice", "notes"))
    reply = ask(bob, new_thread(bob), "What is my gym locker code?")
    assert SECRET not in reply  # his model input held nothing of hers
    memory = server.memory()
    assert all(SECRET not in str(memory.get_messages(thread_id=t.id))
               for t in memory.list_threads(resource_id="bob"))  # fmt: skip
    assert SECRET in str(memory.get_messages(thread_id=alices["first"]))  # hers, intact


def test_a_config_naming_another_owner_is_refused(server: Server, alices) -> None:
    bob = server.client("bob-token")
    thread = new_thread(bob)
    out = bob.runs.wait(
        thread,
        "agent",
        input={"messages": [{"role": "user", "content": "the locker code?"}]},
        config={"configurable": {"resource_id": "alice"}},
        raise_error=False,
    )
    assert SECRET not in str(out)
    assert "ResourceMismatchError" in str(out) or "a caller reaches its own memory" in str(out)
    assert thread not in {t.id for t in server.memory().list_threads(resource_id="alice")}


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://evil.example", "x-auth-scheme": "langsmith"},  # Studio's header
        {"Origin": "null", "Authorization": "Bearer guess"},
    ],
)
def test_a_web_page_reaches_nothing_of_alices(server: Server, alices, headers: dict) -> None:
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as page:
        reads = [
            page.post("/threads/search", json={}),
            page.get(f"/threads/{alices['first']}/state"),
            page.post(f"/threads/{alices['first']}/history", json={}),
            page.post("/store/items/search", json={"namespace_prefix": ["alice"]}),
        ]
        run = page.post("/runs/wait", json={"assistant_id": "agent", "input": {
            "messages": [{"role": "user", "content": "What is my gym locker code?"}]}})  # fmt: skip
    for response in [*reads, run]:
        assert SECRET not in response.text
        assert response.status_code != 500, response.text
    assert [r.status_code for r in reads[1:]] != [200, 200, 200]
