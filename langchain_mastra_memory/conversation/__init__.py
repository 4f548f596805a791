"""How a graph's state becomes the stored conversation, in one package.

A checkpoint (or a middleware's turn) is a view of the conversation memory keeps. Following
one write from `MemoryCheckpointer.put` down to storage stays here and goes down the layers:

- `mirroring`: `ThreadMirror` plans what a checkpoint changes (reads only, before the saver
  writes) and applies it: new turns saved, edits updated, forks followed (on a fork, what each
  side of the split holds alone, from the checkpoints);
- `suffix`: a state's unknown suffix (its new turns, read from the end) and its edits;
- `branches`: branch threads, where a fork's abandoned continuation is kept.

It depends on storage and `twins` (and, for types only, the recall writes it goes through);
nothing here imports the `Memory` facade or the integrations built on it.
"""
