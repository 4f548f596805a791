"""Observational memory on Mastra's ``mastra_observational_memory``, both ways.

Mastra keeps one record per scope and *generation*: ``lookupKey`` is ``thread:<id>`` or
``resource:<id>`` (our scope keys, letter for letter), the current record is the scope's
highest ``generationCount``, its ``activeObservations`` the whole log as one text, its
``observedMessageIds`` the rows it covers and ``lastObservedAt`` the newest of them; a
reflection inserts the next generation (``originType 'reflection'``) and leaves the old one as
history. Our log is groups (`storage.sql.observations`): the Observer's, each covering its
messages, and the Reflector's, each replacing the groups it condensed.

- **Out** (`_observations_out`): a transaction that changed a scope's groups writes the
  scope's current record again: the active log joined as our Observer and context join it,
  the Mastra rows holding the messages it covers. A reflection of ours not written yet makes
  the next generation, as Mastra's Reflector does.
- **In** (`_observations_in`): a current record Mastra changed (not what we last wrote or
  read) becomes groups of ours: text appended to our log is an observation group covering the
  messages up to ``lastObservedAt``; a new reflection generation (or any other rewrite) is a
  reflection group in place of the active log. The scope's cursor moves past what the record
  covers, so the Observer takes only what Mastra did not observe.

Buffered groups of ours (written ahead of the threshold) wait outside the log on both sides:
Mastra's buffered chunks are its engine's, not read here, and ours are not written there.

Examples:
    >>> _id_list('["row-1", "row-2"]'), _id_list(["row-1"]), _id_list("{truncated")
    (['row-1', 'row-2'], ['row-1'], [])
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..records import ObservationGroup, now_utc
from .layout import from_js_time, json_value

TABLE = "mastra_observational_memory"
_CURRENT = (
    'id, "lookupKey", scope, "resourceId", "threadId", "activeObservations", "originType", '
    'config, "generationCount", "observedMessageIds", "totalTokensObserved", '
    '"observationTokenCount"'
)


class ObservationsSync:
    """The observation log kept in step with Mastra's records (see the module docstring); a
    part of `MastraStorage`."""

    if TYPE_CHECKING:  # MastraStorage's and SQLStorage's
        dialect: Any
        mirrored_times: bool

        def _t(self, table: str) -> str: ...
        def _run(self, conn: Any, statement: str, params: Sequence[Any] = ()) -> Any: ...
        def _time(self, moment: Any) -> Any: ...
        def _time_param(self, text: str) -> Any: ...
        def _time_values(self, **texts: str) -> tuple[list[str], list[Any]]: ...
        def _mastra_time(self, value: Any) -> str | None: ...
        def _seen(self, conn: Any, kind: str, key: str, updated: str) -> None: ...
        def _unseen(self, conn: Any, kind: str, key: str) -> None: ...
        def _seen_of(self, conn: Any, kind: str, keys: Sequence[str]) -> dict[str, str]: ...
        def _groups(self, conn: Any, key: str, *, active: bool) -> list[ObservationGroup]: ...
        def _insert_group(
            self,
            conn: Any,
            group: ObservationGroup,
            last_seq: int | None = None,
            *,
            joined: Any = None,
        ) -> None: ...

    def _current_record(self, conn: Any, key: str) -> dict[str, Any] | None:
        """Mastra's current record of a scope (its newest generation), None when it has none."""
        columns = [c.strip().strip('"') for c in _CURRENT.split(",")]
        last = '"lastObservedAtZ"' if self.mirrored_times else '"lastObservedAt"'
        row = self._run(
            conn,
            f'SELECT {_CURRENT}, {last} FROM {self._t(TABLE)} WHERE "lookupKey" = ? '
            'ORDER BY "generationCount" DESC LIMIT 1',
            (key,),
        ).fetchone()
        if row is None:
            return None
        record = dict(zip([*columns, "lastObservedAt"], row, strict=True))
        record["lastObservedAt"] = self._mastra_time(record["lastObservedAt"])
        return record

    def _om_seen(self, conn: Any, key: str) -> dict[str, Any]:
        raw = self._seen_of(conn, "observations", [key]).get(key)
        return json.loads(raw) if raw else {}

    def _om_note(
        self, conn: Any, key: str, record_id: str, digest: str, log: Sequence[ObservationGroup]
    ) -> None:
        """What both sides hold now: the record (by digest) and the reflections of the `log`
        already in it."""
        reflections = [g.id for g in log if g.kind == "reflection"]
        note = {"row": record_id, "digest": digest, "reflections": reflections}
        self._seen(conn, "observations", key, json.dumps(note))

    # -- in ------------------------------------------------------------------------------------
    def _observations_in(self, conn: Any, since: str) -> None:
        """The records Mastra changed since `since`, into our logs."""
        keys = [
            key
            for (key,) in self._run(
                conn,
                f'SELECT DISTINCT "lookupKey" FROM {self._t(TABLE)} WHERE "updatedAt" >= ?',
                (self._time_param(since),),
            ).fetchall()
            if key.startswith(("thread:", "resource:"))
        ]
        for key in keys:
            record = self._current_record(conn, key)
            if record is None:
                continue
            digest, seen = _om_digest(record), self._om_seen(conn, key)
            if seen.get("digest") != digest:
                generation = seen.get("row") not in (None, record["id"])
                self._record_in(conn, key, record, reflected=generation)
                self._om_note(conn, key, record["id"], digest, self._groups(conn, key, active=True))

    def _record_in(self, conn: Any, key: str, record: dict[str, Any], *, reflected: bool) -> None:
        """Mastra's current record of a scope, as groups of ours and the scope's cursor
        (`reflected`: a generation after the one last seen, which replaces the log)."""
        log = self._groups(conn, key, active=True)
        ours = "\n".join(g.text for g in log)
        text = record["activeObservations"] or ""
        owner = str(record["resourceId"] or key.split(":", 1)[1])
        thread_scope = key.startswith("thread:")
        scope = ("m.thread_id = ?", key[7:]) if thread_scope else ("m.resource_id = ?", owner)
        self._run(
            conn,
            "INSERT INTO memory_observation_state (scope_key) VALUES (?) "
            "ON CONFLICT (scope_key) DO NOTHING",
            (key,),
        )
        cursor = self._run(
            conn, "SELECT seq FROM memory_observation_state WHERE scope_key = ?", (key,)
        ).fetchone()[0]
        reached = max(cursor or 0, self._observed_seq(conn, record, scope))
        covered = [
            (message_id, float(tokens or 0))
            for message_id, tokens in self._run(
                conn,
                f"SELECT m.id, m.token_count FROM memory_messages m WHERE {scope[0]} "
                "AND m.seq > ? AND m.seq <= ? ORDER BY m.seq",
                (scope[1], cursor or 0, reached),
            ).fetchall()
        ]
        if text != ours:
            appended = bool(log) and text.startswith(ours) and not reflected
            group = ObservationGroup(
                id=str(uuid.uuid4()),
                scope_key=key,
                resource_id=owner,
                kind="observation" if appended or not log else "reflection",
                text=text[len(ours) :].lstrip("\n") if appended else text,
                current_task=None,
                message_ids=tuple(m for m, _ in covered),
                replaces=() if appended or not log else tuple(g.id for g in log),
                token_count=float(record["observationTokenCount"] or 0)
                - (sum(g.token_count for g in log) if appended else 0.0),
                created_at=now_utc() if appended or not log else log[0].created_at,
                replaced_by=None,
                message_tokens=sum(t for _, t in covered),
            )
            group = replace(group, token_count=max(group.token_count, 0.0))
            self._insert_group(conn, group, reached or None, joined=now_utc())
            for condition, params in self.dialect.ids_in("id", list(group.replaces)):
                self._run(
                    conn,
                    f"UPDATE memory_observation_groups SET replaced_by = ? WHERE {condition}",
                    (group.id, *params),
                )
        self._run(  # the cursor and the buffer frontier never move back
            conn,
            "UPDATE memory_observation_state SET seq = ?, buffered_seq = CASE WHEN "
            "buffered_seq IS NULL OR buffered_seq < ? THEN ? ELSE buffered_seq END "
            "WHERE scope_key = ?",
            (reached or None, reached, reached, key),
        )

    def _observed_seq(self, conn: Any, record: dict[str, Any], scope: tuple[str, str]) -> int:
        """The last of our messages a record covers: those its ``observedMessageIds`` rows
        hold, and any of the scope's up to its ``lastObservedAt`` (to the millisecond)."""
        best = 0
        rows = [str(r) for r in _id_list(record["observedMessageIds"])]
        for condition, params in self.dialect.ids_in("b.row_id", rows):
            (found,) = self._run(
                conn,
                "SELECT max(m.seq) FROM memory_mastra_members b JOIN memory_messages m "
                f"ON m.id = b.message_id WHERE {condition}",
                params,
            ).fetchone()
            best = max(best, int(found or 0))
        moment = from_js_time(record["lastObservedAt"])
        if moment is not None:
            (found,) = self._run(
                conn,
                f"SELECT max(m.seq) FROM memory_messages m WHERE {scope[0]} AND m.created_at <= ?",
                (scope[1], self._time(moment + timedelta(microseconds=999))),
            ).fetchone()
            best = max(best, int(found or 0))
        return best

    # -- out -----------------------------------------------------------------------------------
    def _observations_out(self, conn: Any, key: str, stamp: str) -> None:
        """A scope's log as Mastra's current record (a new generation for a new reflection)."""
        log = self._groups(conn, key, active=True)
        record = self._current_record(conn, key)
        thread_scope = key.startswith("thread:")
        if not log and record is None:
            return
        if (
            not log
            and thread_scope
            and self._run(conn, "SELECT 1 FROM memory_threads WHERE id = ?", (key[7:],)).fetchone()
            is None
        ):  # the thread is gone, and its log with it
            self._run(conn, f'DELETE FROM {self._t(TABLE)} WHERE "lookupKey" = ?', (key,))
            self._unseen(conn, "observations", key)
            return
        text = "\n".join(g.text for g in log)
        seen = self._om_seen(conn, key)
        reflected = any(
            g.kind == "reflection" and g.id not in seen.get("reflections", ()) for g in log
        )
        if record is not None and not reflected and record["activeObservations"] == text:
            return
        rows, last = self._rows_of(conn, [m for g in log for m in g.message_ids])
        tokens = round(sum(g.token_count for g in log))
        times: dict[str, str] = {"updatedAt": stamp}
        if last is not None:
            times["lastObservedAt"] = last
        if record is not None and not reflected:
            columns, values = self._time_values(**times)
            sets = ", ".join(f"{c} = ?" for c in columns)
            self._run(
                conn,
                f'UPDATE {self._t(TABLE)} SET "activeObservations" = ?, '
                f'"observationTokenCount" = ?, "totalTokensObserved" = ?, '
                f'"observedMessageIds" = ?{self.dialect.json_cast}, "pendingMessageTokens" = 0, '
                f"{sets} WHERE id = ?",
                (
                    text,
                    tokens,
                    max(int(record["totalTokensObserved"] or 0), tokens),
                    _compact(rows),
                    *values,
                    record["id"],
                ),
            )
            written = {**record, "activeObservations": text}
            self._om_note(conn, key, record["id"], _om_digest(written), log)
            return
        record_id = str(uuid.uuid4())
        made: dict[str, Any] = {
            "id": record_id,
            "lookupKey": key,
            "scope": "thread" if thread_scope else "resource",
            "resourceId": log[0].resource_id,
            "threadId": key[7:] if thread_scope else None,
            "activeObservations": text,
            "originType": "initial" if record is None else "reflection",
            "config": record["config"] if record is not None else "{}",
            "generationCount": 0 if record is None else int(record["generationCount"]) + 1,
            "pendingMessageTokens": 0,
            "totalTokensObserved": tokens
            if record is None
            else max(int(record["totalTokensObserved"] or 0), tokens),
            "observationTokenCount": tokens,
            "isObserving": False,
            "isReflecting": False,
            "isBufferingObservation": False,
            "isBufferingReflection": False,
            "lastBufferedAtTokens": 0,
            "observedMessageIds": _compact(rows),
        }
        if isinstance(made["config"], dict):  # (PostgreSQL may hand the JSON back parsed)
            made["config"] = json.dumps(made["config"])
        times["createdAt"] = stamp
        if record is not None:
            times["lastReflectionAt"] = stamp
        time_columns, time_values = self._time_values(**times)
        marks = [f"?{self.dialect.json_cast}" if c == "observedMessageIds" else "?" for c in made]
        self._run(
            conn,
            f"INSERT INTO {self._t(TABLE)} ({', '.join(f'{chr(34)}{c}{chr(34)}' for c in made)}, "
            f"{', '.join(time_columns)}) VALUES ({', '.join(marks + ['?'] * len(time_values))})",
            [*made.values(), *time_values],
        )
        self._om_note(conn, key, record_id, _om_digest(made), log)

    def _rows_of(self, conn: Any, message_ids: Sequence[str]) -> tuple[list[str], str | None]:
        """The Mastra rows holding these messages (in thread order) and the newest one's
        time, as Mastra's text."""
        found: list[tuple[str, Any]] = []
        for condition, params in self.dialect.ids_in("b.message_id", list(message_ids)):
            found += self._run(
                conn,
                f'SELECT DISTINCT r.id, r."createdAt" FROM memory_mastra_members b JOIN '
                f"{self._t('mastra_messages')} r ON r.id = b.row_id WHERE {condition}",
                params,
            ).fetchall()
        timed = sorted({(self._mastra_time(at) or "", row_id) for row_id, at in found})
        return [row_id for _, row_id in timed], (timed[-1][0] if timed else None)


def _id_list(raw: Any) -> list[Any]:
    """``observedMessageIds`` as stored: JSON text, JSONB, a PostgreSQL array or a JSON string
    of one; [] for anything else."""
    try:
        value = json_value(raw)
        if isinstance(value, str):
            value = json.loads(value)
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _compact(value: Any) -> str:
    """JSON as JavaScript's ``JSON.stringify`` writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _om_digest(record: dict[str, Any]) -> str:
    """A current record as it stands: which row, which generation, what text."""
    text = f"{record['id']}\0{record['generationCount']}\0{record['activeObservations'] or ''}"
    return hashlib.sha1(text.encode()).hexdigest()
