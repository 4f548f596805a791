"""What memory holds, from its end: erasing a thread or a resource everywhere, and memory's
own file as LangGraph's checkpoint store.

- `erasure`: `Erasure`, a part of `Memory` (its ``erasure``): a thread with everything keyed
  by it (messages, vectors, observation log, thread working memory, branch threads, every
  checkpointer's checkpoints and the file's), or a whole resource (a user's right to erasure).
  `Memory`, the MCP server, the CLI and the explorer all come here through `Memory`.
- `checkpoint_store`: the default saver on memory's own SQLite file or PostgreSQL schema, and
  a thread's checkpoints removed from it.
- `retention`: ``options["retention"]`` (an age per kind) and `Pruner` (``memory.prune()``),
  which deletes what is older in bounded, resumable batches through the parts that own it.

Below `Memory` and the shapes, above storage and recall: it imports `storage`, `recall`'s
`MemoryWrites` and `conversation.branches`; a checkpointer reaches it only through the
`Forgets` protocol (it never imports `integrations`).
"""

from .checkpoint_store import default_saver, forget_in_file, warn_if_volatile
from .erasure import Erasure, Forgets

__all__ = ["Erasure", "Forgets", "default_saver", "forget_in_file", "warn_if_volatile"]
