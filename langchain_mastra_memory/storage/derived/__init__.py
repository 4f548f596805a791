"""What the SQL backends keep beside the conversation, by subject (each a module here, as
`sql` keeps them): LangGraph store items, the ids read-only turns withheld, a graph's message
lists, retention's reads, and observational memory's log. A backend without one raises
`NotImplementedError` naming what needs it.
"""

from __future__ import annotations

from .checkpoint_lists import CheckpointListRecords
from .items import ItemRecords
from .observations import ObservationRecords
from .retention import RetentionRecords
from .withheld import WithheldRecords


class DerivedRecords(
    ItemRecords, WithheldRecords, CheckpointListRecords, RetentionRecords, ObservationRecords
):
    """Every subject's records, with their async twins (part of `MemoryStorage`)."""


__all__ = [
    "CheckpointListRecords",
    "DerivedRecords",
    "ItemRecords",
    "ObservationRecords",
    "RetentionRecords",
    "WithheldRecords",
]
