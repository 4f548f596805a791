"""A short program, as a user writes one: it opens memory, saves, and ends (no `flush`, no
`close`). Run as ``python short_program.py WORLD WHERE HOW N EXIT_DRAIN``; the tests open the
same world with `open_memory` in the next process.

HOW is how the program ends: ``sync`` (its last line), ``async`` (``asyncio.run`` returns),
``raise`` (an uncaught exception), ``async-exit`` (``sys.exit(3)`` inside ``asyncio.run``),
``kill`` (saves batches until killed, printing ``ACK <ids>`` once each save returned).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_mastra_memory import Memory, PostgresStorage, SQLiteStorage

RESOURCE = os.environ.get("LMM_TEST_RESOURCE", "alice")  # (each test its own)
CROPS = "tomatoes basil beans leeks chard kale peas garlic onions squash".split()


def open_storage(world: str, where: str) -> Any:
    """WORLD's storage alone (no writer: nothing is embedded by opening it)."""
    if world == "postgres":
        dsn, schema = where.split("|")
        return PostgresStorage(dsn, schema=schema)
    return SQLiteStorage(os.path.join(where, "m.db"))


def open_memory(world: str, where: str, exit_drain: float = 2.0) -> Memory:
    """Vector recall over WORLD's storage and engine: ``sqlite`` (embedded Chroma beside the
    file), ``postgres`` (pgvector; WHERE is ``dsn|schema``), ``chroma-server``, ``qdrant``,
    ``milvus-server`` (beside a SQLite file in the folder WHERE)."""
    vector: Any = None
    storage = open_storage(world, where)
    if world == "chroma-server":
        import chromadb

        from langchain_mastra_memory import ChromaVectorStore

        port = int(os.environ["LMM_TEST_CHROMA_PORT"])
        vector = ChromaVectorStore(client=chromadb.HttpClient(host="127.0.0.1", port=port))
    elif world == "qdrant":
        from langchain_mastra_memory import QdrantVectorStore

        vector = QdrantVectorStore(os.path.join(where, "qdrant"))
    elif world == "milvus-server":
        from langchain_mastra_memory import MilvusVectorStore

        vector = MilvusVectorStore(uri=os.environ["LMM_TEST_MILVUS_URI"])
    options = {"semantic_recall": {"mode": "vector"}, "exit_drain": exit_drain}
    return Memory(storage=storage, vector=vector, options=options)


def turn(thread: str, i: int) -> list[BaseMessage]:
    """Two messages of a garden diary, each its own text."""
    crop = CROPS[i % len(CROPS)]
    return [
        HumanMessage(f"Diary {thread}-{i}: I planted {crop} in bed number {i} today."),
        AIMessage(f"Noted for {thread}-{i}: {crop} in bed {i}, water them tomorrow."),
    ]


def main(world: str, where: str, how: str, n: int, exit_drain: float) -> None:
    handler = logging.StreamHandler()  # memory's own lines, INFO and up, to stderr
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    library = logging.getLogger("langchain_mastra_memory")
    library.addHandler(handler)
    library.setLevel(logging.INFO)
    memory = open_memory(world, where, exit_drain)
    thread = f"t{os.getpid()}"
    messages = [m for i in range(n // 2) for m in turn(thread, i)]
    if how in ("async", "async-exit"):

        async def program() -> None:
            await memory.acreate_thread(thread_id=thread, resource_id=RESOURCE)
            await memory.asave_messages(messages, thread_id=thread, resource_id=RESOURCE)
            print("saved", flush=True)
            if how == "async-exit":
                sys.exit(3)

        asyncio.run(program())
        return
    memory.create_thread(thread_id=thread, resource_id=RESOURCE)
    if how == "kill":
        for i in range(10**6):
            saved = memory.save_messages(turn(thread, i), thread_id=thread, resource_id=RESOURCE)
            print("ACK", *(m.id for m in saved), flush=True)
    memory.save_messages(messages, thread_id=thread, resource_id=RESOURCE)
    print("saved", flush=True)
    if how == "raise":
        raise RuntimeError("the program itself failed")


if __name__ == "__main__":
    world, where, how, n, exit_drain = sys.argv[1:6]
    main(world, where, how, int(n), float(exit_drain))
