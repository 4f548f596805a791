"""The `Thread` record: one conversation, owned by one resource."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Thread(BaseModel):
    """One conversation (Mastra's ``StorageThreadType``).

    Examples:
        >>> from datetime import datetime, timezone
        >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> Thread(id="t1", resource_id="alice", created_at=now, updated_at=now).title is None
        True
    """

    model_config = ConfigDict(frozen=True)

    id: str
    resource_id: str
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None = None  # set by `Memory.archive_thread`

    @property
    def archived(self) -> bool:
        """Whether the thread is archived (out of listings and recall unless asked for)."""
        return self.archived_at is not None
