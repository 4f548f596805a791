"""Test helpers: every scripted model checks its input as OpenAI and Anthropic do."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.graph.message import _messages_delta_reducer
from typing_extensions import TypedDict

from langchain_mastra_memory.testing import ProviderStrictChatModel, strict_model

ScriptedChatModel = ProviderStrictChatModel
scripted = strict_model

__all__ = [
    "DeltaMessagesState",
    "ScriptedChatModel",
    "delta_state",
    "drop_milvus_collections",
    "free_port",
    "garden",
    "scripted",
    "start_chroma_server",
    "strict_model",
    "thread_columns_before_archiving",
]


def garden(memory) -> None:
    """Alice's garden thread (one message of two sentences: two pieces) and bob's secret, saved
    and embedded: what the vector-store tests search."""
    memory.create_thread(thread_id="g1", resource_id="alice", title="Garden")
    memory.create_thread(thread_id="b1", resource_id="bob")
    memory.save_messages([HumanMessage("I grow tomatoes on the balcony"),
                          AIMessage("Tomatoes need six hours of sun. Water them daily.")],
                         thread_id="g1", resource_id="alice")  # fmt: skip
    memory.save_messages([HumanMessage("bob's locker code is qx4471")], thread_id="b1",
                         resource_id="bob")  # fmt: skip
    memory.flush(60)


def thread_columns_before_archiving(patch: Any) -> None:
    """Storage reading threads as a schema before ``archived_at`` did: every loaded storage
    module holding the thread columns, patched with `patch` (a pytest ``MonkeyPatch``)."""
    from langchain_mastra_memory.storage.sql.statements import NEW_THREAD_COLUMNS

    for name, module in list(sys.modules.items()):
        if name.startswith("langchain_mastra_memory.storage") and hasattr(module, "THREAD_COLUMNS"):
            patch.setattr(module, "THREAD_COLUMNS", NEW_THREAD_COLUMNS)


def delta_state(snapshot_frequency: int) -> Any:
    """A state whose ``messages`` live in LangGraph's ``DeltaChannel`` (as deep agents keep
    them), with the reducer LangGraph ships for it, snapshotted every `snapshot_frequency`
    updates."""
    channel = DeltaChannel(_messages_delta_reducer, snapshot_frequency=snapshot_frequency)
    return TypedDict(  # type: ignore[operator]
        f"DeltaMessagesState{snapshot_frequency}",
        {"messages": Annotated[list[AnyMessage], channel]},
    )


DeltaMessagesState = delta_state(3)  # crosses a snapshot every 3 updates


def echo_graph(checkpointer: Any, schema: Any = None) -> Any:
    """A one-node LangGraph graph answering ``echo: <last message>``, on `checkpointer`
    (`schema`: its state, ``MessagesState`` by default)."""
    from langgraph.graph import START, MessagesState, StateGraph

    graph = StateGraph(schema or MessagesState)
    graph.add_node(
        "reply", lambda s: {"messages": [AIMessage(f"echo: {s['messages'][-1].content}")]}
    )
    graph.add_edge(START, "reply")
    return graph.compile(checkpointer=checkpointer)


def drop_milvus_collections(uri: str) -> None:
    """Leave the session's Milvus server empty for the next test."""
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri)
    for name in client.list_collections():
        client.drop_collection(name)
    client.close()


def listed_messages(checkpoint: dict, storage: Any, thread_id: str) -> list:
    """The ``messages`` list of a checkpoint as a saver is given it: the list itself, or the
    list memory keeps for it (`checkpointer.channel`), read back from `storage`."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from langchain_mastra_memory.integrations.checkpointer.channel import MessageRefs, referenced_at
    from langchain_mastra_memory.twins import run_sync

    value = checkpoint["channel_values"].get("messages")
    at = referenced_at(value)
    if at is None:
        return list(value or [])
    refs = MessageRefs(None, storage, JsonPlusSerializer(), "messages", enabled=True)
    return run_sync(refs.messages(thread_id, "", at, checkpoint["id"]))


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_chroma_server(path: Path, port: int) -> subprocess.Popen:
    """`chroma run` (the chromadb package's server) on 127.0.0.1:`port`, data in `path`."""
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen(
        [chroma, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("chroma server did not start")


def start_milvus(folder: Path) -> Any:
    """A real Milvus server (the `milvus` wheel: Milvus 2.3 standalone with embedded etcd, no
    Docker) on its data `folder` and a free port of 127.0.0.1, started and answering."""
    from milvus import MilvusServer

    server = MilvusServer()
    server.set_base_dir(str(folder))
    server.listen_port = free_port()
    server.start()
    return server


def milvus_answers(uri: str) -> bool:
    """Whether the Milvus server at `uri` serves a request now."""
    from pymilvus import MilvusClient

    try:
        MilvusClient(uri=uri, timeout=10).list_collections()
        return True
    except Exception:
        return False
