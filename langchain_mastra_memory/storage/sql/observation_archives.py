"""Rolling archives of observational memory's log in the SQL backends (Mastra's
``observation.archive``): the oldest groups leave the log whole, with no model call, and stay
readable by their archive.

An archive is one row of ``memory_observation_groups`` of kind ``archive``: it lists the groups
it retired (``replaces``, marked ``replaced_by`` it, as a reflection marks what it condensed),
covers their messages, and records when it was made (``activated_at``). It is never part of the
log (`ObservationTable._groups` leaves it out), so every reader of the log sees the live tail
only, while what reads provenance (a deleted message's groups, a clone's) treats it as it
treats a reflection.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ..records import ObservationArchive, ObservationGroup, from_iso, now_utc
from .observations import GROUP_COLUMNS, ObservationTable


class ObservationArchiveTable(ObservationTable):
    """Rolling archives, a layer of `SQLStorage` over `ObservationTable`."""

    def commit_archive(
        self, key: str, *, owner: str, resource_id: str, retires: Sequence[str]
    ) -> ObservationArchive | None:
        """Move the `retires` groups out of the log into a new archive and release the lease,
        in one transaction; None (nothing written) if the lease is no longer `owner`'s or one
        of them has left the log meanwhile."""
        with self._transaction(write=True) as conn:
            if not self._holds(conn, key, owner):
                return None
            log = {g.id: g for g in self._groups(conn, key, active=True)}
            if not retires or any(group_id not in log for group_id in retires):
                return None
            groups = tuple(log[group_id] for group_id in retires)
            archived_at = now_utc()
            row = ObservationGroup(
                id=f"arc-{uuid.uuid4().hex[:16]}",
                scope_key=key,
                resource_id=resource_id,
                kind="archive",
                text="",
                current_task=None,
                message_ids=tuple(m for g in groups for m in g.message_ids),
                replaces=tuple(retires),
                token_count=sum(g.token_count for g in groups),
                created_at=min(g.created_at for g in groups),
                replaced_by=None,
                message_tokens=sum(g.message_tokens for g in groups),
            )
            self._supersede(conn, row, archived_at)
        return ObservationArchive(row.id, key, resource_id, archived_at, groups)

    def observation_archives(
        self, keys: Sequence[str], *, limit: int, offset: int = 0
    ) -> list[ObservationArchive]:
        """The archives of the scopes `keys` (at most 500), newest first: `limit` of them
        after the first `offset`."""
        if isinstance(keys, str) or not 0 < len(keys) <= 500:
            raise ValueError("keys must be a list of 1 to 500 observation scope keys")
        ((condition, params),) = self.dialect.ids_in("scope_key", list(keys))
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                f"SELECT {GROUP_COLUMNS}, activated_at FROM memory_observation_groups "
                f"WHERE {condition} AND kind = 'archive' "
                "ORDER BY activated_at DESC, id DESC LIMIT ? OFFSET ?",
                (*params, int(limit), int(offset)),
            ).fetchall()
            return self._archives(conn, rows)

    def observation_archive(self, archive_id: str) -> ObservationArchive | None:
        """One archive by id, whichever scope holds it (the caller checks the scope is the
        reader's), or None."""
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                f"SELECT {GROUP_COLUMNS}, activated_at FROM memory_observation_groups "
                "WHERE id = ? AND kind = 'archive'",
                (archive_id,),
            ).fetchall()
            found = self._archives(conn, rows)
        return found[0] if found else None

    def _archives(self, conn: Any, rows: Sequence[Any]) -> list[ObservationArchive]:
        """The archives of `rows` (archive rows with their ``activated_at``), in that order,
        each with its groups read in one statement per id chunk."""
        heads = [(self._group(row), row[13]) for row in rows]
        retired: dict[str, list[ObservationGroup]] = {}
        ids = [head.id for head, _ in heads]
        for condition, params in self.dialect.ids_in("replaced_by", ids):
            found = self._run(
                conn,
                f"SELECT {GROUP_COLUMNS} FROM memory_observation_groups WHERE {condition} "
                "ORDER BY created_at, id",
                params,
            ).fetchall()
            for row in found:
                group = self._group(row)
                retired.setdefault(str(group.replaced_by), []).append(group)
        archives = []
        for head, archived_at in heads:
            order = {group_id: n for n, group_id in enumerate(head.replaces)}
            groups = sorted(retired.get(head.id, []), key=lambda g: order.get(g.id, len(order)))
            made = from_iso(archived_at) if archived_at is not None else head.created_at
            archives.append(
                ObservationArchive(head.id, head.scope_key, head.resource_id, made, tuple(groups))
            )
        return archives
