"""Observational memory (Mastra 1.x): an Observer and a Reflector keep a dense, dated log.

`Memory(options={"observational_memory": {"model": chat_model, ...}})` turns it on
(`ObservationalConfig`); `ObservationalMemory` observes behind the turn and gives the turn its
history (the log, then what it does not cover yet). The parts: the prompts, the tolerant
parser, and the two model calls as Runnables (`Observer`, `Reflector`); the log itself lives in
storage (`storage/sql/observations.py`), buffered groups included: the Observer runs ahead of the
threshold in a worker thread and its groups are activated, without a model call, at it.
"""

from .config import ObservationalConfig
from .prompts import Entry, context_block, format_entries
from .replies import ParsedLog, parse_log
from .runnables import Observer, Reflector
from .service import ObservationalMemory

__all__ = [
    "Entry",
    "ObservationalConfig",
    "ObservationalMemory",
    "Observer",
    "ParsedLog",
    "Reflector",
    "context_block",
    "format_entries",
    "parse_log",
]
