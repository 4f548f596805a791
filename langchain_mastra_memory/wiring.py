"""How `Memory`'s parts are made and joined: its composition root.

`Memory.__init__` parses what it is given and calls `wire`, which makes each part on the ones
below it: the recall index (and the searcher pages go through), titles, working and
observational memory, the write side (`MemoryWrites`, given the index's vector upkeep), the
turn (`TurnContext`), the thread queries, erasure and retention. The facade then only forwards
(`test_memory_is_a_thin_facade`); no part is given the facade to call back into.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import Runnable

from .config.retention import RetentionPolicy
from .lifecycle import Erasure
from .lifecycle.retention import Pruner
from .observational.extracting import keeps_working_memory
from .observational.service import ObservationalMemory
from .recall.index import RecallIndex, RecallOptions
from .threads.summaries import ThreadQueries
from .titles import TitleWriter
from .tokens.startup import settle
from .turn.context import TurnContext, warn_if_limiter_not_last
from .turn.writes import MemoryWrites
from .working_memory import WorkingMemoryConfig, WorkingMemoryStore

if TYPE_CHECKING:
    from .memory import Memory


def wire(
    memory: Memory, vector: Any, embedder: Any, processors: Sequence[Runnable[Any, Any]]
) -> None:
    """Make `memory`'s parts over its ``storage`` and ``options`` (set before this is called)."""
    storage, options = memory.storage, memory.options
    memory.recall_index = None
    if options.semantic_recall:
        memory.recall_index = RecallIndex.with_defaults(
            storage, options.semantic_recall, vector, embedder
        )
        vector, embedder = memory.recall_index.vector, memory.recall_index.embedder
    memory.vector, memory.embedder = vector, embedder
    # what searches and pages go through: semantic recall's index, else keyword search
    memory.searcher = memory.recall_index or RecallIndex(
        storage, options=RecallOptions(mode="keyword")
    )
    memory.titles = TitleWriter(storage, options.generate_title, exit_drain=options.exit_drain)
    memory.working_memory = WorkingMemoryConfig.parse(options.working_memory)
    memory.working = WorkingMemoryStore(storage, memory.working_memory)
    om = ObservationalMemory.from_option(
        storage, options.observational_memory, memory.working, exit_drain=options.exit_drain
    )
    memory.observation_scope = om.config.scope if om is not None else "thread"
    memory.working.observed = om is not None and keeps_working_memory(om.config)
    upkeep = None if memory.recall_index is None else memory.recall_index.upkeep
    memory.writes = MemoryWrites(
        storage,
        upkeep,
        memory.titles,
        om,
        read_only=options.read_only,
        exit_drain=options.exit_drain,
    )
    memory.processors = list(processors)
    warn_if_limiter_not_last(memory.processors)
    memory.checkpointers = weakref.WeakSet()
    memory.turns = TurnContext(
        storage, options, memory.recall_index, memory.working, processors, om
    )
    memory.queries = ThreadQueries(storage, memory.writes)
    memory.erasure = Erasure(storage, memory.writes, memory.checkpointers)
    memory.pruner = Pruner(
        storage,
        memory.writes,
        memory.erasure,
        memory.checkpointers,
        memory.checkpointer,
        RetentionPolicy.parse(options.retention),
    )
    settle()  # once per process: what the first turns would otherwise pay
