"""`langchain-mastra-memory mcp`: memory over the Model Context Protocol, driven by the official
SDK's client, the server in a real subprocess (stdio, and streamable HTTP attacked as a web page
would attack it)."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from langchain_mastra_memory import Memory, SQLiteStorage

CLI = str(Path(sys.executable).with_name("langchain-mastra-memory"))
TOOLS = {"search_memory", "get_working_memory", "update_working_memory", "list_threads",
         "read_thread", "save_message", "read_observations"}  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database where bob already has a thread with a secret."""
    path = tmp_path / "memory.db"
    memory = Memory(storage=SQLiteStorage(path))
    memory.create_thread(thread_id="bobs", resource_id="bob", title="Bob's plans")
    memory.save_messages([HumanMessage("bob's locker code is qx4471")], thread_id="bobs",
                         resource_id="bob")  # fmt: skip
    memory.flush(60)
    memory.storage.close()
    return path


async def session_calls(db: Path, *args: str, calls: list[tuple[str, dict]]) -> list:
    """Start the server over stdio (a real subprocess), run `calls`, return the results."""
    params = StdioServerParameters(command=CLI, args=["mcp", "--db", str(db), *args],
                                   env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        results: list = [await session.list_tools()]
        for name, arguments in calls:
            results.append(await session.call_tool(name, arguments))
        results.append(await session.list_resources())
        return results


def text(result) -> str:
    return "\n".join(c.text for c in result.content if hasattr(c, "text"))


async def test_every_tool_over_stdio_and_bad_arguments_are_tool_errors(db: Path) -> None:
    tools, *results, resources = await session_calls(db, "--resource", "alice", calls=[
        ("save_message", {"thread_id": "pets", "text": "my cat is called Tom", "title": "Pets"}),
        ("save_message", {"thread_id": "pets", "text": "noted: cat Tom", "role": "note"}),
        ("search_memory", {"query": "cat", "mode": "keyword"}),
        ("list_threads", {}),
        ("read_thread", {"thread_id": "pets"}),
        ("update_working_memory", {"content": "# User\n- **Pet**: Tom, a cat"}),
        ("get_working_memory", {}),
        ("read_observations", {"thread_id": "pets"}),
        ("search_memory", {"query": 5}),
        ("save_message", {"thread_id": "", "text": "x"}),
        ("save_message", {"thread_id": "pets", "text": "x", "role": "robot"}),
        ("search_memory", {"query": "cat", "since": "yesterday"}),
        ("read_thread", {"thread_id": "pets", "page": -1}),
    ])  # fmt: skip
    assert {t.name for t in tools.tools} == TOOLS
    assert all(t.description for t in tools.tools)
    saved, note, found, listed, thread, updated, wm, log, *bad = results
    assert not saved.is_error and "saved as" in text(saved) and not note.is_error
    assert "my cat is called Tom" in text(found) and '"Pets"' in text(found)
    assert text(listed).startswith("pets · Pets")
    assert "user: my cat is called Tom" in text(thread)
    assert not updated.is_error and "**Pet**: Tom" in text(wm)
    assert text(log) == "(no observations)"
    assert all(r.is_error for r in bad), [text(r) for r in bad]
    assert "thread_id must be a non-empty string" in text(bad[1])
    uris = {str(r.uri) for r in resources.resources}
    assert {"memory://working-memory", "memory://threads"} <= uris


async def test_another_resources_data_is_never_reached(db: Path) -> None:
    _tools, *results, _ = await session_calls(db, "--resource", "alice", calls=[
        ("read_thread", {"thread_id": "bobs"}),
        ("get_working_memory", {"thread_id": "bobs"}),
        ("read_observations", {"thread_id": "bobs"}),
        ("search_memory", {"query": "bob's locker code"}),
        ("search_memory", {"query": "locker code", "thread_id": "bobs"}),
        ("list_threads", {}),
        ("save_message", {"thread_id": "bobs", "text": "alice writes into bob's thread"}),
        ("search_memory", {"query": "locker", "resource_id": "bob"}),
    ])  # fmt: skip
    assert all("qx4471" not in text(r) for r in results)
    assert results[0].is_error and "no thread 'bobs'" in text(results[0])
    assert results[1].is_error and results[2].is_error
    assert results[6].is_error  # bob's thread is not alice's to write
    assert results[7].is_error  # resource_id is not an argument of a one-resource server
    memory = Memory(storage=SQLiteStorage(db))
    assert len(memory.get_messages(thread_id="bobs", resource_id="bob")) == 1


async def test_threads_and_observations_modes_over_stdio_are_the_callers(db: Path) -> None:
    _tools, listed, titled, cursor_refused, no_query, _ = await session_calls(
        db, "--resource", "alice", calls=[
            ("search_memory", {"mode": "threads"}),
            ("search_memory", {"mode": "threads", "query": "no such title words"}),
            ("search_memory", {"query": "cat", "cursor": "garbage!"}),
            ("search_memory", {"mode": "keyword"}),
        ])  # fmt: skip
    assert not listed.is_error and "bobs" not in text(listed) and "qx4471" not in text(listed)
    assert "No conversations with" in text(titled)
    assert cursor_refused.is_error and "not one this tool gave" in text(cursor_refused)
    assert no_query.is_error and "query is required" in text(no_query)


async def test_a_second_client_finds_what_the_first_saved(db: Path) -> None:
    await session_calls(db, "--resource", "alice", calls=[
        ("save_message", {"thread_id": "trip", "text": "We fly to Porto on May 3rd"}),
    ])  # fmt: skip
    _tools, found, _ = await session_calls(db, "--resource", "alice", calls=[
        ("search_memory", {"query": "when is the flight to Porto?"}),
    ])  # fmt: skip
    assert not found.is_error and "We fly to Porto on May 3rd" in text(found)


async def test_a_multi_resource_server_takes_the_resource_per_call(db: Path) -> None:
    _tools, bobs, missing, _ = await session_calls(db, "--multi-resource", calls=[
        ("search_memory", {"query": "locker code", "resource_id": "bob"}),
        ("search_memory", {"query": "locker code"}),
    ])  # fmt: skip
    assert "qx4471" in text(bobs)
    assert missing.is_error and "resource_id is required" in text(missing)


def test_the_command_needs_exactly_one_way_to_choose_the_resource(db: Path) -> None:
    for args in ([], ["--resource", "alice", "--multi-resource"]):
        done = subprocess.run([CLI, "mcp", "--db", str(db), *args], capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
        assert done.returncode == 2 and "--resource" in done.stderr


# -- streamable HTTP --------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(db: Path) -> Iterator[tuple[str, str]]:
    port, token = free_port(), "t0ken-for-tests"
    server = subprocess.Popen(
        [CLI, "mcp", "--db", str(db), "--resource", "alice", "--http", "--port", str(port),
         "--token", token],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while True:
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/mcp", token
    server.terminate()
    server.wait(30)


async def test_over_streamable_http_with_the_token(http_server: tuple[str, str]) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url, token = http_server
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        saved = await session.call_tool("save_message", {"thread_id": "h1", "text": "HTTP works"})
        assert not saved.is_error
        found = await session.call_tool("search_memory", {"query": "HTTP", "mode": "keyword"})
        assert "HTTP works" in text(found) and "qx4471" not in text(found)


def raw_post(url: str, headers: dict[str, str]) -> tuple[int, str]:
    """A request as a web page (or a process without the token) would send it."""
    from urllib.parse import urlsplit

    where = urlsplit(url)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "evil", "version": "1"}}})  # fmt: skip
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    connection.putrequest("POST", where.path, skip_host=True)
    for name, value in {"Host": where.netloc, "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream", **headers}.items():  # fmt: skip
        connection.putheader(name, value)
    connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body.encode())
    answer = connection.getresponse()
    return answer.status, answer.read().decode(errors="replace")


def test_http_refuses_no_token_foreign_hosts_and_cross_site_pages(
    http_server: tuple[str, str],
) -> None:
    url, token = http_server
    bearer = {"Authorization": f"Bearer {token}"}
    port = url.split(":")[2].split("/")[0]
    assert raw_post(url, {})[0] == 401
    assert raw_post(url, {"Authorization": "Bearer wrong"})[0] == 401
    status, body = raw_post(url, {**bearer, "Host": f"rebind.evil.example:{port}"})
    assert status == 400 and "qx4471" not in body
    assert raw_post(url, {**bearer, "Origin": "http://evil.example"})[0] == 403
    assert raw_post(url, {**bearer, "Sec-Fetch-Site": "cross-site"})[0] == 403
    assert raw_post(url, bearer)[0] == 200  # the client itself


async def test_archives_over_stdio_are_the_callers(db: Path) -> None:
    storage = SQLiteStorage(db)  # bob's thread gets an archived group holding his secret
    bobs = Memory(storage=storage).get_messages(thread_id="bobs", resource_id="bob")
    assert storage.claim_observation("thread:bobs", owner="o", seconds=30)
    group = storage.commit_observation(
        "thread:bobs", owner="o", resource_id="bob", text="Date: 2026-04-01\n- [high] code qx4471",
        current_task=None, message_ids=[m.id for m in bobs], token_count=9,
    )  # fmt: skip
    assert storage.claim_observation("thread:bobs", owner="o", seconds=30)
    archive = storage.commit_archive("thread:bobs", owner="o", resource_id="bob",
                                     retires=[group.id])  # fmt: skip
    storage.close()
    _tools, alices, listed, bobs_read, _ = await session_calls(db, "--resource", "alice", calls=[
        ("search_memory", {"archive_id": archive.id, "group_id": group.id}),
        ("search_memory", {"mode": "observations"}),
        ("search_memory", {"mode": "observations", "query": "code"}),
    ])  # fmt: skip
    assert alices.is_error and "no archive" in text(alices)
    assert all("qx4471" not in text(r) for r in (alices, listed, bobs_read))
    _tools, own, _ = await session_calls(db, "--resource", "bob", calls=[
        ("search_memory", {"archive_id": archive.id, "char_offset": 5}),
    ])  # fmt: skip
    assert not own.is_error and "qx4471" in text(own)
