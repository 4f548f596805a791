"""The retention room of `SQLStorage`: what is older than an age, oldest first, a batch at a
time (`lifecycle.retention` deletes it through the parts that own it, so vectors, keyword
index, observation provenance and checkpoint lists follow).

Each read is one short transaction and names rows, never a cursor kept between calls: a
prune that stops (its time is up, the process ends) resumes by asking again, and two
processes asking at once get overlapping batches whose deletes are idempotent.
"""

from __future__ import annotations

import json
from datetime import datetime

from ..records import Namespace, scope_key
from .statements import SQLRoom


class RetentionTable(SQLRoom):
    """A room of `SQLStorage` (see `SQLRoom`)."""

    def aged_messages(self, before: datetime, limit: int) -> list[tuple[str, str, str]]:
        """Up to `limit` messages created before `before`, oldest first: (id, thread, owner)."""
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                "SELECT id, thread_id, resource_id FROM memory_messages WHERE created_at < ? "
                "ORDER BY created_at, seq LIMIT ?",
                (self._time(before), limit),
            ).fetchall()
        return [(str(a), str(b), str(c)) for a, b, c in rows]

    def idle_threads(self, before: datetime, limit: int) -> list[tuple[str, str]]:
        """Up to `limit` threads last active before `before`, least recent first: (id, owner)."""
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                "SELECT id, resource_id FROM memory_threads WHERE updated_at < ? "
                "ORDER BY updated_at, id LIMIT ?",
                (self._time(before), limit),
            ).fetchall()
        return [(str(a), str(b)) for a, b in rows]

    def delete_aged_observations(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` observation groups written before `before`; how many went."""
        with self._transaction(write=True) as conn:
            rows = self._run(
                conn,
                "SELECT id FROM memory_observation_groups WHERE created_at < ? "
                "ORDER BY created_at, id LIMIT ?",
                (self._time(before), limit),
            ).fetchall()
            for condition, params in self.dialect.ids_in("id", [str(r[0]) for r in rows]):
                self._run(conn, f"DELETE FROM memory_observation_groups WHERE {condition}", params)
        return len(rows)

    def aged_items(self, before: datetime, limit: int) -> list[tuple[Namespace, str]]:
        """Up to `limit` store items with no time to live, last written before `before`."""
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                "SELECT namespace, key FROM memory_store_items "
                "WHERE expires_at IS NULL AND updated_at < ? ORDER BY updated_at LIMIT ?",
                (self._time(before), limit),
            ).fetchall()
        return [(tuple(str(ns).split(".")), str(key)) for ns, key in rows]

    def drop_observation_sources(
        self, message_ids: list[str], *, thread_id: str, resource_id: str
    ) -> int:
        """Take pruned messages out of the provenance of the observation groups of their
        thread's and owner's logs (the observations stay: they are their own kind, with their
        own age); how many groups changed."""
        gone = set(message_ids)
        keys = (
            scope_key("thread", resource_id="", thread_id=thread_id),
            scope_key("resource", resource_id=resource_id, thread_id=None),
        )
        changed = 0
        with self._transaction(write=True) as conn:
            for key in keys:
                rows = self._run(
                    conn,
                    "SELECT id, message_ids FROM memory_observation_groups WHERE scope_key = ?",
                    (key,),
                ).fetchall()
                for group_id, ids in rows:
                    sources = json.loads(ids)
                    kept = [i for i in sources if i not in gone]
                    if len(kept) != len(sources):
                        self._run(
                            conn,
                            "UPDATE memory_observation_groups SET message_ids = ? WHERE id = ?",
                            (json.dumps(kept), group_id),
                        )
                        changed += 1
        return changed
