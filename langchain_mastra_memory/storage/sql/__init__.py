"""The SQL both databases share, written once over a small `Dialect`:

- `backend`: `SQLStorage`, the algorithms, which hands each part of the contract to a room;
- the rooms: `threads`, `messages` (and the ids a read-only turn left in a graph's state),
  `search` (keyword search, neighbour windows, the embedding backlog), `working_memory`,
  `items` (LangGraph store items), `observations` (observational memory's log, its history,
  archives and extracted values), `checkpoint_lists` and `retention`;
- `statements`: the SQL the rooms share (``?`` placeholders; a dialect rewrites them).

Imports storage's front (`base`, `records`, `validation`); `sqlite` and `postgres` import it.
"""

from .backend import Dialect, SQLStorage, TextMatch

__all__ = ["Dialect", "SQLStorage", "TextMatch"]
