"""`MemoryCheckpointer`: any LangGraph saver, with each thread's conversation kept in memory.

The class is in `main`, and it runs every put and read itself, over the parts it holds (each
takes what it needs as arguments, and none calls back into the class):

- `saver_io`: the wrapped saver's calls, sync or async (its own async methods, else its sync
  ones in memory's I/O pool), some of its checkpoints deleted in its own rows, and a turn's
  checkpoint with its new messages in one SQLite transaction (`OneFileWrites`);
- `owners`: which resource owns a thread, checked at every read and write (`ThreadOwners`),
  and a new thread's puts let in one at a time (`FirstPuts`);
- `channel`: the ``messages`` channel (a list or a delta channel), each message stored once
  in memory and referenced from the checkpoint;
- `maintenance`: copying, rolling back and pruning a thread's checkpoints, and writing a
  thread back in the saver's own format (steps the class runs sync or async).

A put::

    put(config, checkpoint) -> main._owned_put (owners: trust a checked parent, else read
        the owner, a new thread's first puts one at a time) -> main._put
        -> channel.at_put (the channel's messages) -> conversation.mirroring.plan
        -> channel.encoded (the list stored once; the checkpoint keeps a reference)
        -> saver_io: OneFileWrites.put | SaverIO.put beside mirroring.apply

A read::

    get_tuple(config) -> main._get_tuple -> saver_io.get_tuple -> channel.resolved
        (the list put back, the owner read with it) -> owners (check)
"""

from .main import MemoryCheckpointer

__all__ = ["MemoryCheckpointer"]
