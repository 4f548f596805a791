"""Observational memory's log in the SQL backends: observation groups with their provenance.

A *scope* is ``thread:<id>`` or ``resource:<id>``. Each Observer run that lands is one
*observation* group: its text and the exact ids of the messages it covers. A Reflector run is
one *reflection* group listing the groups it condensed, which are marked ``replaced_by`` it
(kept, never deleted: the history of the log). The active log is the scope's active groups not
replaced, in order. Rolling archives (below) retire groups whole instead:
an *archive* row lists them, marked ``replaced_by`` it, and is never part of the log itself.
A per-scope state row holds the *cursor* (the last message the active log
covers), the *buffer frontier* (the last message any group covers) and a *lease* (who is
running the Observer or Reflector, until when).

Buffering: an Observer may run ahead of the threshold and commit its group *buffered*
(inactive: the messages stay in the turn's context, the frontier moves). At the threshold
`activate_observations` turns the oldest buffered groups active and moves the cursor to the end
of the last one, in one transaction and with no model call. Groups cover consecutive stretches
after the cursor, so activation keeps the log in message order.

Correctness lives in storage, not in process memory: a run first `claim_observation`s the
lease (compare-and-set: one runner per scope across threads, tasks and processes), calls its
model outside any transaction, then commits its group, the cursor and the lease's release in
one transaction that checks the lease is still its own (and, for a reflection, that every group
it condensed is still active). A run that crashes or loses its lease commits nothing: the
messages stay unobserved and the next run takes them. Written once over the `Dialect`.

**The history** of the log: every group a scope ever had, the log as it stood at a moment
(`observations_as_of`), and what a clone carries.

Groups are never deleted by the log itself (a reflection marks those it condensed
``replaced_by`` it) and each records when it joined the log (``activated_at``: an observation
at its activation, a reflection at its commit), so the log of any past moment is a query.

**Rolling archives** (Mastra's ``observation.archive``): the oldest groups leave the log whole,
with no model call, and stay readable by their archive.

An archive is one row of ``memory_observation_groups`` of kind ``archive``: it lists the groups
it retired (``replaces``, marked ``replaced_by`` it, as a reflection marks what it condensed),
covers their messages, and records when it was made (``activated_at``). It is never part of the
log (`ObservationTable._groups` leaves it out), so every reader of the log sees the live tail
only, while what reads provenance (a deleted message's groups, a clone's) treats it as it
treats a reflection.

**The values extractors keep** (`observational.extractors`), per observation scope: one row per
scope and slug, replaced by each new value. They go with the scope: a deleted thread or resource
takes its values along, a transferred thread's follow it."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from ..records import (
    MESSAGE_COLUMNS,
    ObservationArchive,
    ObservationGroup,
    StoredMessage,
    from_iso,
    now_utc,
)
from ..validation import check_id
from .statements import SQLRoom

GROUP_COLUMNS = (
    "id, scope_key, resource_id, kind, text, current_task, message_ids, replaces, "
    "token_count, created_at, replaced_by, active, message_tokens"
)


class ObservationTable(SQLRoom):
    """The log, its history, its archives and the extracted values: a room of `SQLStorage`
    (see the module docstring and `SQLRoom`)."""

    def _group(self, row: Sequence[Any]) -> ObservationGroup:
        (group_id, key, resource_id, kind, text, task, ids, replaces, tokens, at, by) = row[:11]
        return ObservationGroup(
            id=group_id,
            scope_key=key,
            resource_id=resource_id,
            kind=kind,
            text=text,
            current_task=task,
            message_ids=tuple(json.loads(ids)),
            replaces=tuple(json.loads(replaces)),
            token_count=float(tokens),
            created_at=from_iso(at),
            replaced_by=by,
            active=bool(row[11]),
            message_tokens=float(row[12]),
        )

    def _groups(self, conn: Any, key: str, *, active: bool) -> list[ObservationGroup]:
        rows = self._run(
            conn,
            f"SELECT {GROUP_COLUMNS} FROM memory_observation_groups WHERE scope_key = ? "
            "AND replaced_by IS NULL AND active = ? AND kind <> 'archive' "
            "ORDER BY created_at, id",
            (key, active),
        ).fetchall()
        return [self._group(r) for r in rows]

    def _every_group(self, conn: Any, key: str) -> list[ObservationGroup]:
        """Every group of a scope, oldest first: active, buffered and replaced alike."""
        rows = self._run(
            conn,
            f"SELECT {GROUP_COLUMNS} FROM memory_observation_groups WHERE scope_key = ? "
            "ORDER BY created_at, id",
            (key,),
        ).fetchall()
        return [self._group(r) for r in rows]

    def _delete_observations(self, conn: Any, key: str) -> None:
        """Forget a scope's log and state (its thread was deleted: a later owner of the same
        id starts with no log)."""
        for table in (
            "memory_observation_groups",
            "memory_observation_state",
            "memory_extracted_values",
        ):
            self._run(conn, f"DELETE FROM {table} WHERE scope_key = ?", (key,))

    def _forget_observed(self, conn: Any, key: str, message_ids: Sequence[str]) -> int:
        """Unlearn `message_ids` (a deleted or given-away thread's) from scope `key`'s log, by
        each group's provenance: a group covering any of them goes, and so does a reflection
        that condensed such a group (and what it condensed). A group's text cannot be split by
        message, so the log is cut back to before the first group that goes (later groups go
        too) and the cursors move back with it: the scope's other messages it covered are
        unobserved again, and the next Observer run re-derives them. The groups removed."""
        gone_ids = set(message_ids)
        groups = self._every_group(conn, key)
        tainted = {g.id for g in groups if gone_ids & set(g.message_ids)}
        changed = True
        while changed:  # a reflection of a tainted group is tainted, and so is what it condensed
            before = len(tainted)
            for g in groups:
                if tainted & set(g.replaces) or (g.replaced_by in tainted):
                    tainted.add(g.id)
            changed = len(tainted) != before
        if not tainted:
            return 0
        first = next(n for n, g in enumerate(groups) if g.id in tainted)
        dropped = tainted | {g.id for g in groups[first:] if g.replaced_by is None}
        dropped |= {g.id for g in groups if g.replaced_by in dropped}
        for group_id in dropped:
            self._run(conn, "DELETE FROM memory_observation_groups WHERE id = ?", (group_id,))
        kept = [g for g in groups if g.id not in dropped and g.replaced_by is None]
        active = [m for g in kept if g.active for m in g.message_ids]
        every = [m for g in kept for m in g.message_ids]
        self._run(
            conn,
            "UPDATE memory_observation_state SET seq = ?, buffered_seq = ? WHERE scope_key = ?",
            (self._last_seq(conn, active), self._last_seq(conn, every), key),
        )
        return len(dropped)

    def _last_seq(self, conn: Any, message_ids: Sequence[str]) -> int | None:
        """The highest seq among `message_ids` still stored (None: none)."""
        best: int | None = None
        ids = list(dict.fromkeys(message_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            (found,) = self._run(
                conn,
                f"SELECT max(seq) FROM memory_messages WHERE id IN ({', '.join('?' * len(chunk))})",
                chunk,
            ).fetchone()
            if found is not None:
                best = int(found) if best is None else max(best, int(found))
        return best

    def observation_log(self, key: str, *, buffered: bool = False) -> list[ObservationGroup]:
        """The active groups of a scope, oldest first; with `buffered`, the buffered groups
        after them."""
        with self._transaction(write=False) as conn:
            log = self._groups(conn, key, active=True)
            return log + self._groups(conn, key, active=False) if buffered else log

    def _after_cursor(
        self, conn: Any, key: str, resource_id: str, thread_id: str | None, *, buffered: bool
    ) -> tuple[str, list[Any]]:
        """The condition (on ``memory_messages m``) and its parameters selecting the scope's
        messages after its cursor (with `buffered`: after its buffer frontier)."""
        row = self._run(
            conn,
            "SELECT seq, buffered_seq FROM memory_observation_state WHERE scope_key = ?",
            (key,),
        ).fetchone()
        marks = [m for m in (row or ()) if m is not None]
        after = (max(marks) if buffered else (row[0] or 0)) if marks else 0
        if key.startswith("thread:"):
            return "m.thread_id = ? AND m.seq > ?", [thread_id, after]
        return "m.resource_id = ? AND m.seq > ?", [resource_id, after]

    def unobserved_messages(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> list[StoredMessage]:
        """The scope's messages after its cursor, in order (all of them before any run); with
        `buffered`, only those no buffered group covers yet (what the Observer takes next)."""
        columns = ", ".join("m." + c for c in MESSAGE_COLUMNS.split(", "))
        with self._transaction(write=False) as conn:
            where, params = self._after_cursor(conn, key, resource_id, thread_id, buffered=buffered)
            rows = self._run(
                conn,
                f"SELECT {columns} FROM memory_messages m WHERE {where} ORDER BY m.seq",
                params,
            ).fetchall()
        return [self._stored(r) for r in rows]

    def unobserved_tokens(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> float:
        """The stored token count of the scope's messages after its cursor (with `buffered`:
        after its buffer frontier); one aggregate query, what every save checks."""
        with self._transaction(write=False) as conn:
            where, params = self._after_cursor(conn, key, resource_id, thread_id, buffered=buffered)
            total = self._run(
                conn, f"SELECT sum(m.token_count) FROM memory_messages m WHERE {where}", params
            ).fetchone()[0]
        return float(total or 0.0)

    def claim_observation(self, key: str, *, owner: str, seconds: float) -> bool:
        """Take the scope's lease for `seconds` unless someone else holds a live one."""
        clock = time.time()
        with self._transaction(write=True) as conn:
            self._run(
                conn,
                "INSERT INTO memory_observation_state (scope_key) VALUES (?) "
                "ON CONFLICT (scope_key) DO NOTHING",
                (key,),
            )
            _seq, holder, until = self._locked_state(conn, key)
            if holder not in (None, owner) and until is not None and until > clock:
                return False
            self._run(
                conn,
                "UPDATE memory_observation_state SET lease_owner = ?, lease_until = ? "
                "WHERE scope_key = ?",
                (owner, clock + seconds, key),
            )
            return True

    def release_observation(self, key: str, *, owner: str) -> None:
        """Give the lease back (a run that ends without committing)."""
        with self._transaction(write=True) as conn:
            self._run(
                conn,
                "UPDATE memory_observation_state SET lease_owner = NULL, lease_until = NULL "
                "WHERE scope_key = ? AND lease_owner = ?",
                (key, owner),
            )

    def _locked_state(self, conn: Any, key: str) -> tuple[Any, Any, Any]:
        """The scope's cursor, lease owner and lease end, its row locked until commit (all
        None when the scope has no row yet)."""
        row = self._run(
            conn,
            "SELECT seq, lease_owner, lease_until FROM memory_observation_state "
            f"WHERE scope_key = ?{self.dialect.row_lock}",
            (key,),
        ).fetchone()
        return (row[0], row[1], row[2]) if row else (None, None, None)

    def _holds(self, conn: Any, key: str, owner: str) -> bool:
        _seq, holder, until = self._locked_state(conn, key)
        return holder == owner and (until or 0) > time.time()

    def _insert_group(
        self,
        conn: Any,
        group: ObservationGroup,
        last_seq: int | None = None,
        *,
        joined: Any = None,
    ) -> None:
        """Write `group`; `joined`: when it joined the log (None while it waits buffered),
        as a datetime or as the column stores it (a copy's)."""
        if isinstance(joined, datetime):
            joined = self._time(joined)
        self._run(
            conn,
            f"INSERT INTO memory_observation_groups ({GROUP_COLUMNS}, last_seq, activated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)",
            (
                group.id,
                group.scope_key,
                group.resource_id,
                group.kind,
                group.text,
                group.current_task,
                json.dumps(list(group.message_ids)),
                json.dumps(list(group.replaces)),
                group.token_count,
                self._time(group.created_at),
                group.active,
                group.message_tokens,
                last_seq,
                joined,
            ),
        )

    def commit_observation(
        self,
        key: str,
        *,
        owner: str,
        resource_id: str,
        text: str,
        current_task: str | None,
        message_ids: Sequence[str],
        token_count: float,
        buffered: bool = False,
    ) -> ObservationGroup | None:
        """Store an Observer's group covering `message_ids` and release the lease, in one
        transaction; None (nothing written) if the lease is no longer `owner`'s. The group
        goes into the log and the cursor past its last message; `buffered`, it waits
        inactive and only the buffer frontier moves."""
        with self._transaction(write=True) as conn:
            if not self._holds(conn, key, owner):
                return None
            seqs, tokens = [], 0.0  # one query per id chunk: its last message, its tokens
            for condition, params in self.dialect.ids_in("id", list(message_ids)):
                last, total = self._run(
                    conn,
                    f"SELECT max(seq), sum(token_count) FROM memory_messages WHERE {condition}",
                    params,
                ).fetchone()
                seqs += [last] if last is not None else []
                tokens += float(total or 0.0)
            group = ObservationGroup(
                id=str(uuid.uuid4()),
                scope_key=key,
                resource_id=resource_id,
                kind="observation",
                text=text,
                current_task=current_task,
                message_ids=tuple(message_ids),
                replaces=(),
                token_count=token_count,
                created_at=now_utc(),
                replaced_by=None,
                active=False,
                message_tokens=tokens,
            )
            last_seq = max(seqs, default=None)
            self._insert_group(conn, group, last_seq)
            self._run(  # the frontier never moves back (a covered message deleted meanwhile)
                conn,
                "UPDATE memory_observation_state SET buffered_seq = COALESCE(?, buffered_seq), "
                "lease_owner = NULL, lease_until = NULL WHERE scope_key = ?",
                (last_seq, key),
            )
            if not buffered:  # into the log now, with any buffered group before it
                self._activate(conn, key, retain_tokens=0.0, raw=float("inf"))
                group = replace(group, active=True)
        return group

    def activate_observations(
        self, key: str, *, resource_id: str, thread_id: str | None, retain_tokens: float
    ) -> list[ObservationGroup]:
        """Turn the oldest buffered groups active, as many as leave at most about
        `retain_tokens` of unobserved messages in the context (at least one), and move the
        cursor to the end of the last; one transaction. Returns the groups activated."""
        with self._transaction(write=True) as conn:
            self._locked_state(conn, key)  # first, so what stays raw is read under the lock
            where, params = self._after_cursor(conn, key, resource_id, thread_id, buffered=False)
            raw = self._run(
                conn, f"SELECT sum(m.token_count) FROM memory_messages m WHERE {where}", params
            ).fetchone()[0]
            return self._activate(conn, key, retain_tokens=retain_tokens, raw=float(raw or 0))

    def _activate(
        self, conn: Any, key: str, *, retain_tokens: float, raw: float
    ) -> list[ObservationGroup]:
        """`activate_observations` inside a write transaction; `raw`: the unobserved tokens."""
        cursor = self._locked_state(conn, key)[0]
        waiting = self._groups(conn, key, active=False)
        chosen: list[ObservationGroup] = []
        for group in waiting:  # oldest first, while too much would stay raw
            if chosen and raw <= retain_tokens:
                break
            chosen.append(group)
            raw -= group.message_tokens
        if not chosen:
            return []
        ids = [g.id for g in chosen]
        for condition, params in self.dialect.ids_in("id", ids):
            self._run(
                conn,
                f"UPDATE memory_observation_groups SET active = ?, activated_at = ? "
                f"WHERE {condition}",
                (True, self._time(now_utc()), *params),
            )
        last = self._run(
            conn, "SELECT last_seq FROM memory_observation_groups WHERE id = ?", (ids[-1],)
        ).fetchone()[0]
        self._run(
            conn,
            "UPDATE memory_observation_state SET seq = ? WHERE scope_key = ?",
            (max(last or 0, cursor or 0), key),
        )
        return [replace(g, active=True) for g in chosen]

    def commit_reflection(
        self,
        key: str,
        *,
        owner: str,
        resource_id: str,
        text: str,
        current_task: str | None,
        replaces: Sequence[str],
        token_count: float,
    ) -> ObservationGroup | None:
        """Store a Reflector's group in place of the `replaces` groups and release the lease;
        None (nothing written) if the lease is lost or one of them is no longer active."""
        group = ObservationGroup(
            id=str(uuid.uuid4()),
            scope_key=key,
            resource_id=resource_id,
            kind="reflection",
            text=text,
            current_task=current_task,
            message_ids=(),
            replaces=tuple(replaces),
            token_count=token_count,
            created_at=now_utc(),
            replaced_by=None,
        )
        with self._transaction(write=True) as conn:
            if not self._holds(conn, key, owner):
                return None
            for condition, params in self.dialect.ids_in("id", list(replaces)):
                active = self._run(
                    conn,
                    "SELECT count(*) FROM memory_observation_groups "
                    f"WHERE {condition} AND scope_key = ? AND replaced_by IS NULL",
                    (*params, key),
                ).fetchone()[0]
                if active != len(params if self.dialect.id_chunk else params[0]):
                    return None
            firsts = [
                self._run(
                    conn,
                    f"SELECT min(created_at) FROM memory_observation_groups WHERE {condition}",
                    params,
                ).fetchone()[0]
                for condition, params in self.dialect.ids_in("id", list(replaces))
            ]
            if firsts:  # it takes the place of the oldest group it replaces
                group = replace(group, created_at=min(from_iso(f) for f in firsts))
            self._supersede(conn, group, now_utc())  # (in the log from now)
        return group

    def _supersede(self, conn: Any, group: ObservationGroup, joined: datetime) -> None:
        """Write `group` (a reflection or an archive, joined at `joined`) in place of the groups
        it `replaces`, marked ``replaced_by`` it, and release the scope's lease."""
        self._insert_group(conn, group, joined=joined)
        for condition, params in self.dialect.ids_in("id", list(group.replaces)):
            self._run(
                conn,
                f"UPDATE memory_observation_groups SET replaced_by = ? WHERE {condition}",
                (group.id, *params),
            )
        self._run(
            conn,
            "UPDATE memory_observation_state SET lease_owner = NULL, lease_until = NULL "
            "WHERE scope_key = ?",
            (group.scope_key,),
        )

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

    def extracted_values(self, key: str) -> dict[str, Any]:
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                "SELECT slug, value FROM memory_extracted_values WHERE scope_key = ? ORDER BY slug",
                (key,),
            ).fetchall()
        return {str(slug): json.loads(value) for slug, value in rows}

    def save_extracted_values(
        self, key: str, values: Mapping[str, Any], *, resource_id: str, source: str
    ) -> None:
        check_id(resource_id, "resource_id")
        if not values:
            return
        now = self._time(now_utc())
        with self._transaction(write=True) as conn:
            for slug, value in values.items():
                self._run(
                    conn,
                    "DELETE FROM memory_extracted_values WHERE scope_key = ? AND slug = ?",
                    (key, slug),
                )
                self._run(
                    conn,
                    "INSERT INTO memory_extracted_values "
                    "(scope_key, slug, resource_id, value, source, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (key, slug, resource_id, json.dumps(value), source, now),
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
