"""Observational memory (Mastra 1.x): an Observer and a Reflector keep a dense, dated log.

So far: the prompts, the tolerant parser and the two model calls as Runnables (`Observer`,
`Reflector`). Storing the log with its provenance, thresholds, buffering and the turn's
context follow (issue 14).
"""

from .parse import ParsedLog, parse_log
from .prompts import Entry, context_block, format_entries
from .runnables import Observer, Reflector

__all__ = [
    "Entry",
    "Observer",
    "ParsedLog",
    "Reflector",
    "context_block",
    "format_entries",
    "parse_log",
]
