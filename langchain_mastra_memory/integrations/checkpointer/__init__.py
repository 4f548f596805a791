"""`MemoryCheckpointer`: any LangGraph saver, with each thread's conversation kept in memory.

The class is in `main`; it is built from the parts it holds (no mixins), each a module here:

- `io`: the wrapped saver's calls, sync or async (its own async methods, else its sync ones in
  memory's I/O pool), and `deletes` (some checkpoints of a thread, in the saver's own rows);
- `owners`: which resource owns a thread, checked at every read and write (`ThreadOwners`);
  `first_puts` lets a new thread's puts in one at a time;
- `messages` and `refs`: the ``messages`` channel (a list or a delta channel), each message
  stored once in memory and referenced from the checkpoint;
- `one_file`: a turn's checkpoint and its new messages in one SQLite transaction;
- `listing`: ``list`` and ``alist``, the owner's checkpoints only;
- `upkeep`: copying, rolling back and pruning a thread's checkpoints, and writing a thread
  back in the saver's own format (steps the class runs sync or async);
- `configs`: the configs the parts pass around.

A put::

    put(config, checkpoint) -> owners (check, or claim a new thread)
        -> messages.at_put (the channel's messages) -> conversation.mirroring.plan
        -> refs.encoded (the list stored once; the checkpoint keeps a reference)
        -> one_file.put | io.put beside mirroring.apply (the saver's write, the new turns)

A read::

    get_tuple(config) -> owners (check) -> io.get_tuple -> refs.resolved (the list put back)
"""

from .main import MemoryCheckpointer

__all__ = ["MemoryCheckpointer"]
