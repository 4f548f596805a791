"""The values extractors keep (`observational.extractors`), per observation scope, in the SQL
backends: one row per scope and slug, replaced by each new value. They go with the scope: a
deleted thread or resource takes its values along, a transferred thread's follow it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..records import now_utc
from ..validation import check_id
from .statements import SQLRoom


class ExtractedValuesTable(SQLRoom):
    """A room of `SQLStorage` (see `SQLRoom`)."""

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
