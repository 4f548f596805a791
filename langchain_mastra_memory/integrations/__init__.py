"""Memory in every shape LangChain users write: each module builds on `Memory`.

- `lcel`: `memory.as_runnable()` (the context as a Runnable) and `memory.wrap(chain)`.
- `graph`: `memory.pre_model_hook()` / `memory.as_node()` for LangGraph graphs, and what the
  graph shapes share (a run's ids, its turn, whether memory's checkpointer saves it).
- `checkpointer/`: `MemoryCheckpointer`, any LangGraph saver mirrored into memory (a package:
  its parts are listed there).
- `middleware`: `MemoryMiddleware` for ``langchain.agents.create_agent`` (``agents`` extra),
  with `model_budget` (memory's share of a model's input budget).
- `chat_history`: `MemoryChatMessageHistory`, a `BaseChatMessageHistory` over one thread.
- `store`: `MemoryStore`, LangGraph's `BaseStore` over memory.
- `retriever`: `MemoryRetriever`, a `BaseRetriever` over semantic recall.
- `recall_tool/`: the ``search_memory`` tool (a package: the tool, listings, archives).
- `mcp_server`: memory's tools over the Model Context Protocol.

Not imported here: importing the package stays light, and each loads when first asked for.
"""
