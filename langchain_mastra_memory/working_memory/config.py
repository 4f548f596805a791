"""Working-memory options: the mode (Markdown template or schema), scope and limits."""

from __future__ import annotations

from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ConfigurationError

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
