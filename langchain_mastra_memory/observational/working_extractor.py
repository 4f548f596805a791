"""`WorkingMemoryExtractor`: the Observer keeps working memory up to date, no tool call needed.

Mastra's extractor of the same name, on this package's working memory: the Observer is shown
the template (or schema) and the document as it stands, and returns it updated; a Markdown
document rides the Observer's reply, a schema's object comes in the structured follow-up
turn. Empty members are pruned before the update (a provider's constrained decoding fills
every key), a factless object changes nothing, and the update goes through working memory's
own validation. The value is not kept apart: working memory is where it lives.

Example:
    >>> WorkingMemoryExtractor().slug
    'working-memory'
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ConfigurationError
from .extractors import Extracted, Extractor, ExtractorContext

NEEDS_WORKING_MEMORY = (
    "WorkingMemoryExtractor needs working memory: "
    'options={"working_memory": {"enabled": True}, ...}'
)
MARKDOWN = (
    "Update working memory with durable facts from the observations you made. Return the full "
    "updated Markdown working memory: keep what still holds, add or revise only what changed. "
    "Always include this section; if nothing durable changed, return the current working "
    "memory verbatim."
)
SCHEMA = (
    "Update working memory with durable facts from the observations you made. Return the full "
    "updated JSON object: fill every field the observations or the current working memory "
    "hold a durable fact for, carrying existing values forward unless contradicted. Leave the "
    "property out when no update is needed."
)


def prune_empty(value: Any) -> Any:
    """`value` without null, blank, empty-list and empty-object members (None if nothing is
    left).

    >>> prune_empty({"name": "Ada", "city": "", "pets": [], "job": {"title": None}})
    {'name': 'Ada'}
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, list):
        kept = [v for v in (prune_empty(v) for v in value) if v is not None]
        return kept or None
    if isinstance(value, dict):
        pairs = {k: v for k, v in ((k, prune_empty(v)) for k, v in value.items()) if v is not None}
        return pairs or None
    return value


class WorkingMemoryExtractor(Extractor):
    """Working memory updated by the Observer (see the module docstring). Needs working memory
    on, and replaces ``manage_working_memory`` (give one or the other)."""

    def __init__(self) -> None:
        super().__init__(
            "Working Memory",
            self._instructions,
            include_previous=False,
            persist=False,
            on_extracted=self._update,
            _internal=True,
        )

    def _store(self, context: ExtractorContext) -> Any:
        if context.working is None:
            raise ConfigurationError(NEEDS_WORKING_MEMORY)
        return context.working

    def _schema_mode(self, context: ExtractorContext) -> bool:
        return bool(self._store(context).config.mode == "schema")

    def _instructions(self, context: ExtractorContext) -> str:
        store = self._store(context)
        current = store.get(resource_id=context.resource_id, thread_id=context.thread_id)
        if self._schema_mode(context):
            shown = json.dumps(current) if current else ""
            return SCHEMA + (f"\n\nCurrent working memory JSON:\n{shown}" if shown else "")
        template = store.config.markdown_template
        return f"{MARKDOWN}\n\nWorking memory template:\n{template}" + (
            f"\n\nCurrent working memory:\n{current}" if current else ""
        )

    def json_schema(self, context: ExtractorContext) -> dict[str, Any] | None:
        if not self._schema_mode(context):
            return None
        return dict(self._store(context).config.schema_dict)

    def validate(self, value: Any, context: ExtractorContext) -> Any:
        if not self._schema_mode(context):
            return super().validate(value, context)
        if not isinstance(value, dict):
            raise ValueError("working memory in schema mode takes a JSON object")
        return value  # working memory's own update validates it against the schema

    def _update(self, extracted: Extracted) -> None:
        context = extracted.context
        value = extracted.value
        if isinstance(value, dict):
            value = prune_empty(value)
            if value is None:
                return  # a factless object never overwrites the document
        store = self._store(context)
        store.update(value, resource_id=context.resource_id, thread_id=context.thread_id)
