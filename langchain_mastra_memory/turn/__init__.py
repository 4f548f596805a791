"""The turn: what a model is sent, and what is saved after it.

- `context` (`TurnContext`): the read side, a turn's context assembled once (working memory,
  the recall block, the history window, the processors, the provider's rules);
- `writes` (`MemoryWrites`): the write side, every save, edit, copy, move and delete, each
  followed by what keeps the rest in step (the vectors' upkeep, titles, observations);
- `history`: which of a thread's stored messages a turn shows (windows that move in blocks, and
  `BudgetedHistory`: the history that fits a token budget, read in pages);
- `recall_block`: what recall found, as the context shows it.

Nothing is imported here: each module is imported by its own path (the turn's parts sit
below the facade and beside recall, which `writes` keeps in step).
"""
