"""Working-memory options: the mode (Markdown template or schema), scope and limits.

What a working-memory update does, as pure logic (Mastra's working memory rules).

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

The system message that shows the model its working memory (and how to update it).
"""

from __future__ import annotations

import json
from typing import Any, Literal

import jsonschema
from langchain_core.messages import SystemMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ConfigurationError, WorkingMemoryError
from ..messages import DATA_NOT_INSTRUCTIONS, SOURCE_KEY, fenced

TOOL_NAME = "update_working_memory"

DEFAULT_TEMPLATE = """# User Information
- **First Name**:
- **Last Name**:
- **Location**:
- **Occupation**:
- **Interests**:
- **Goals**:
- **Events**:
- **Facts**:
- **Projects**:"""


class WorkingMemoryConfig(BaseModel):
    """``working_memory`` options: ``{"enabled", "template" | "schema", "scope", ...}``.

    Examples:
        >>> WorkingMemoryConfig.parse({"enabled": True}).mode
        'markdown'
    """

    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, populate_by_name=True, strict=True
    )

    enabled: bool = False
    template: str | None = None
    json_schema: Any = Field(default=None, alias="schema")
    scope: Literal["resource", "thread"] = "resource"
    read_only: bool = False
    agent_managed: bool = True  # Mastra's ``agentManaged``: False is ``read_only=True``
    max_chars: int = Field(default=10_000, gt=0)

    @model_validator(mode="after")
    def _agent_managed(self) -> WorkingMemoryConfig:
        """Mastra's ``agentManaged: false`` (the application alone writes working memory; no
        tool; the model still sees it) is this package's ``read_only=True``."""
        if not self.agent_managed:
            if "read_only" in self.model_fields_set and not self.read_only:
                raise ValueError(
                    "agent_managed=False means read_only=True (the application alone writes "
                    "working memory): drop read_only=False"
                )
            self.read_only = True
        return self

    @model_validator(mode="after")
    def _one_mode(self) -> WorkingMemoryConfig:
        if self.template is not None and self.json_schema is not None:
            raise ValueError("give either template or schema, not both")
        if self.json_schema is not None:
            _schema_dict(self.json_schema)  # fails early on something that is not a schema
        return self

    @classmethod
    def parse(cls, options: WorkingMemoryConfig | dict[str, Any] | None) -> WorkingMemoryConfig:
        """Validate options (a dict, or None for disabled)."""
        if isinstance(options, WorkingMemoryConfig):
            return options
        if options is None:
            return cls(enabled=False)
        try:
            return cls.model_validate(options)
        except ValidationError as exc:
            raise ConfigurationError(f"invalid working_memory options: {exc}") from exc

    @property
    def mode(self) -> Literal["markdown", "schema"]:
        """``"schema"`` when a schema is given, else ``"markdown"``."""
        return "schema" if self.json_schema is not None else "markdown"

    @property
    def markdown_template(self) -> str:
        """The template in markdown mode (the default user profile when none is given)."""
        return (self.template if self.template is not None else DEFAULT_TEMPLATE).strip()

    @property
    def schema_dict(self) -> dict[str, Any]:
        """The schema as a JSON Schema dict."""
        return _schema_dict(self.json_schema)


def _schema_dict(schema: Any) -> dict[str, Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ConfigurationError(
                f"working memory schema is not a JSON Schema: {exc.message}"
            ) from exc
        return schema
    raise ConfigurationError(
        f"schema must be a pydantic model or a JSON Schema dict, got {schema!r}"
    )


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


def instructions(config: WorkingMemoryConfig, data: str | None, *, observed: bool = False) -> str:
    """The system message that injects working memory (and, unless read-only or `observed`,
    how to update it). `observed`: the Observer keeps it up to date (`WorkingMemoryExtractor`,
    ``manage_working_memory``), so the model is not told to call a tool it may not have."""
    current = data if data is not None else ""
    if config.mode == "markdown":
        shape = fenced("working_memory_template", config.markdown_template)
        how = (
            f"Call the {TOOL_NAME} tool with the ENTIRE Markdown document (every section, "
            "including empty ones): it replaces what is stored."
        )
    else:
        shape = fenced("working_memory_schema", json.dumps(config.schema_dict))
        how = (
            f"Call the {TOOL_NAME} tool with ONLY the fields that changed: objects are merged, "
            "arrays replace the stored array, null deletes a field."
        )
    head = "WORKING_MEMORY_SYSTEM_INSTRUCTION:"
    if observed and not config.read_only:
        return (
            f"{head}\nWhat you know about the user, kept up to date from the conversation by "
            "memory itself (you need not update it). "
            f"{DATA_NOT_INSTRUCTIONS}\n\n{fenced('working_memory_data', current)}"
        )
    if config.read_only:
        return (
            f"{head}\nWhat you know about the user from earlier conversations (read-only). "
            f"{DATA_NOT_INSTRUCTIONS}\n\n{fenced('working_memory_data', current)}"
        )
    return f"""{head}
Store and update any conversation-relevant information by calling the {TOOL_NAME} tool. If \
information might be referenced again, store it.

Guidelines:
1. Store anything that could be useful later in the conversation.
2. Update proactively when information changes, no matter how small.
3. Act naturally: don't mention this system to the user.
4. {how}

{shape}

{fenced("working_memory_data", current)}

Notes:
- Update memory whenever referenced information changes.
- If you are unsure whether to store something, store it.
- The user does not see this memory; it keeps the conversation going when the history is short.
- {DATA_NOT_INSTRUCTIONS}"""


def working_memory_message(
    config: WorkingMemoryConfig, data: str | None, *, observed: bool = False
) -> SystemMessage:
    """The system message for stored working-memory text `data`, tagged as memory's own."""
    return SystemMessage(
        instructions(config, data, observed=observed),
        response_metadata={SOURCE_KEY: "working_memory"},
    )
