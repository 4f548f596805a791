"""What a working-memory update does, as pure logic (Mastra's working memory rules).

Two modes:

- **markdown** (``template``): the document is replaced whole by each update; an update that
  is just the empty template is refused when real data is stored.
- **schema** (``schema``: a pydantic model or a JSON Schema): each update is a JSON merge patch
  (RFC 7396): objects merge recursively, arrays and scalars replace, ``null`` deletes a key. The
  merged result must validate against the schema, or nothing is stored.

Both refuse documents over ``max_chars``. Storage does the read-modify-write in one transaction.

Examples:
    >>> merge_patch({"name": "Ada", "likes": ["tea"], "home": {"city": "Paris", "zip": "75001"}},
    ...             {"likes": ["coffee"], "home": {"zip": None}})
    {'name': 'Ada', 'likes': ['coffee'], 'home': {'city': 'Paris'}}
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from pydantic import BaseModel, ValidationError

from ..errors import WorkingMemoryError
from .config import WorkingMemoryConfig


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge, ``None`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def schema_errors(config: WorkingMemoryConfig, data: Any) -> list[str]:
    """Why `data` does not fit the schema (empty when it does)."""
    schema = config.json_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            schema.model_validate(data)
        except ValidationError as exc:
            return [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors()]
        return []
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [
        f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.path)))
    ]


def apply_update(config: WorkingMemoryConfig, stored: str | None, update: Any) -> str:
    """The new stored text for `update`, or `WorkingMemoryError` saying why it is refused."""
    if config.mode == "markdown":
        new = _markdown_update(config, stored, update)
    else:
        new = _schema_update(config, stored, update)
    if len(new) > config.max_chars:
        msg = (
            f"working memory would be {len(new)} characters, over the limit of {config.max_chars}: "
            "keep it shorter (summarize, drop stale facts) and send it again"
        )
        raise WorkingMemoryError(msg)
    return new


def _markdown_update(config: WorkingMemoryConfig, stored: str | None, update: Any) -> str:
    if not isinstance(update, str):
        raise WorkingMemoryError("memory must be the whole Markdown document as a string")
    template = config.markdown_template
    has_data = stored is not None and stored.strip() not in ("", template)
    if has_data and update.strip() in ("", template):
        msg = (
            "refused: that would replace the stored working memory with the empty template; "
            "send the whole document with its current data"
        )
        raise WorkingMemoryError(msg)
    return update.strip()


def _schema_update(config: WorkingMemoryConfig, stored: str | None, update: Any) -> str:
    if isinstance(update, str):
        try:
            update = json.loads(update)
        except json.JSONDecodeError as exc:
            raise WorkingMemoryError(f"memory must be a JSON object: {exc}") from exc
    if not isinstance(update, dict):
        raise WorkingMemoryError("memory must be an object holding only the fields that changed")
    merged = merge_patch(load_data(config, stored) or {}, update)
    errors = schema_errors(config, merged)
    if errors:
        raise WorkingMemoryError("invalid working memory, nothing stored: " + "; ".join(errors))
    return json.dumps(merged, ensure_ascii=False, sort_keys=True)


def load_data(config: WorkingMemoryConfig, stored: str | None) -> Any:
    """Stored text as the caller sees it: a dict in schema mode, the document in markdown mode."""
    if stored is None:
        return None
    return json.loads(stored) if config.mode == "schema" else stored
