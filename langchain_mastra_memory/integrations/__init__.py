"""Memory in every shape LangChain users write: each module builds on `Memory`.

- `lcel`: `memory.as_runnable()` (the context as a Runnable) and `memory.wrap(chain)`.
- `graph`: `memory.pre_model_hook()` / `memory.as_node()` for LangGraph graphs.
- `checkpointer`: `MemoryCheckpointer`, any LangGraph saver mirrored into memory.
- `middleware`: `MemoryMiddleware` for ``langchain.agents.create_agent`` (``agents`` extra).
- `chat_history`: `MemoryChatMessageHistory`, a `BaseChatMessageHistory` over one thread.

Not imported here: importing the package stays light, and each loads when first asked for.
"""
