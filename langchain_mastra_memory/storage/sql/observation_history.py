"""The history of observational memory's log in the SQL backends: every group a scope ever
had, the log as it stood at a moment (`observations_as_of`), and what a clone carries.

Groups are never deleted by the log itself (a reflection marks those it condensed
``replaced_by`` it) and each records when it joined the log (``activated_at``: an observation
at its activation, a reflection at its commit), so the log of any past moment is a query.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from ..records import ObservationGroup
from .observations import GROUP_COLUMNS, ObservationTable


class ObservationHistoryTable(ObservationTable):
    """The log's history, a layer of `SQLStorage` over `ObservationTable`."""

    def observation_history(self, key: str) -> list[ObservationGroup]:
        """Every group of a scope, oldest first: the log, the buffered groups waiting, and
        those a reflection replaced (`replaced_by` names it) — what an explorer shows."""
        with self._transaction(write=False) as conn:
            return self._every_group(conn, key)

    def observations_as_of(self, key: str, at: datetime) -> list[ObservationGroup]:
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                f"SELECT {GROUP_COLUMNS} FROM memory_observation_groups g "
                "WHERE g.scope_key = ? AND g.activated_at <= ? AND g.kind <> 'archive' "
                "AND (g.replaced_by IS NULL "
                "OR NOT EXISTS (SELECT 1 FROM memory_observation_groups r "
                "WHERE r.id = g.replaced_by AND r.activated_at <= ?)) ORDER BY created_at, id",
                (key, self._time(at), self._time(at)),
            ).fetchall()
        return [self._group(r) for r in rows]

    def _copy_observations(
        self, conn: Any, source: str, target: str, copies: dict[str, tuple[str, int, int]]
    ) -> None:
        """Copy to the empty scope `target` (a clone) what scope `source`'s log says of the
        copied messages alone, with its cursors: `copies` maps each copied message id to its
        copy's ``(id, seq)`` and the original's seq (`carried_groups`). A cursor moves to the
        last copy up to which every copy is covered by a carried group (none: 0); the copies
        after it are observed again in the clone, from their own words."""
        rows = self._run(
            conn,
            f"SELECT {GROUP_COLUMNS}, activated_at FROM memory_observation_groups "
            "WHERE scope_key = ? ORDER BY created_at, id",
            (source,),
        ).fetchall()
        joined = {row[0]: row[13] for row in rows}  # (as stored: copied as it is)
        carried = carried_groups([self._group(row) for row in rows], copies)
        ids = {group.id: str(uuid.uuid4()) for group in carried}
        covered: dict[str, bool] = {}  # copied message id -> covered by a carried active group
        for group in carried:
            mine = [copies[m] for m in group.message_ids]
            copy = replace(
                group,
                id=ids[group.id],
                scope_key=target,
                message_ids=tuple(new for new, _, _ in mine),
                replaces=tuple(ids[g] for g in group.replaces),
            )
            last = max((seq for _, seq, _ in mine), default=None)
            self._insert_group(conn, copy, last, joined=joined[group.id])
            if group.replaced_by in ids:  # else its condensation is not carried: active again
                self._run(
                    conn,
                    "UPDATE memory_observation_groups SET replaced_by = ? WHERE id = ?",
                    (ids[group.replaced_by], copy.id),
                )
            for message_id in group.message_ids:
                covered[message_id] = covered.get(message_id, False) or group.active
        state = self._run(
            conn,
            "SELECT seq, buffered_seq FROM memory_observation_state WHERE scope_key = ?",
            (source,),
        ).fetchone()
        if state is not None:
            in_order = sorted(copies.items(), key=lambda item: item[1][2])

            def moved(cursor: int | None, *, buffered: bool) -> int | None:
                if cursor is None:
                    return None
                last = 0
                for original, (_, new, old) in in_order:
                    if (
                        old > cursor
                        or original not in covered
                        or not (covered[original] or buffered)
                    ):
                        break
                    last = new
                return last

            self._run(
                conn,
                "INSERT INTO memory_observation_state (scope_key, seq, buffered_seq) "
                "VALUES (?, ?, ?)",
                (target, moved(state[0], buffered=False), moved(state[1], buffered=True)),
            )


def carried_groups(
    groups: list[ObservationGroup], copies: Mapping[str, object]
) -> list[ObservationGroup]:
    """The groups of a log (oldest first) that a clone holding the `copies` may carry: an
    observation whose every message is copied (its provenance), a reflection whose every
    condensed group is carried. A group that also speaks of messages left behind, or that
    cannot say what it comes from, is not carried: the clone's owner is never told what the
    source said in messages the clone does not hold."""
    whole = {
        g.id
        for g in groups
        if g.kind == "observation" and g.message_ids and all(m in copies for m in g.message_ids)
    }
    reflections = [g for g in groups if g.kind in ("reflection", "archive") and g.replaces]
    grew = True
    while grew:  # reflections of reflections (a log's order cannot tell: equal timestamps)
        grew = False
        for group in reflections:
            if group.id not in whole and all(r in whole for r in group.replaces):
                whole.add(group.id)
                grew = True
    return [group for group in groups if group.id in whole]
