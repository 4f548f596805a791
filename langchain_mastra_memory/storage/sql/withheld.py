"""The withheld room of `SQLStorage`: ids of messages a read-only turn left in a graph's state.

A read-only call (``memory_options={"read_only": True}``, or a read-only memory) saves nothing
of its turn, but its messages stay in the graph's state (a checkpoint, an agent's state), and
the next writable turn would find them there as new. Their ids are kept here, per thread, so
no later turn ever stores them. Only ids are kept (no content), with the owner: a thread's
ids go with the thread (delete, transfer) and with the resource (`delete_resource`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..validation import check_id, check_ids
from .statements import SQLRoom


class WithheldTable(SQLRoom):
    """A room of `SQLStorage` (see `SQLRoom`)."""

    def withhold_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> None:
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        check_id(thread_id, "thread_id")
        check_id(resource_id, "resource_id")
        if not ids:
            return
        with self._transaction(write=True) as conn:
            for message_id in ids:
                self._run(
                    conn,
                    "INSERT INTO memory_withheld_messages (thread_id, message_id, resource_id) "
                    "VALUES (?, ?, ?) ON CONFLICT (thread_id, message_id) DO NOTHING",
                    (thread_id, message_id, resource_id),
                )

    def withheld_ids(self, message_ids: Sequence[str], *, thread_id: str) -> set[str]:
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        check_id(thread_id, "thread_id")
        found: set[str] = set()
        if not ids:
            return found
        with self._transaction(write=False) as conn:
            for condition, params in self.dialect.ids_in("message_id", ids):
                rows = self._run(
                    conn,
                    f"SELECT message_id FROM memory_withheld_messages "
                    f"WHERE thread_id = ? AND {condition}",
                    [thread_id, *params],
                ).fetchall()
                found.update(str(r[0]) for r in rows)
        return found
