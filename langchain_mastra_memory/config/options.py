"""`MemoryOptions`: Mastra's memory options with snake_case names, validated by pydantic.

``options["retention"]`` (`RetentionPolicy`): an age per kind (Mastra's
``storage.retention``), validated; `lifecycle.retention` applies it (``memory.prune()``).

Examples:
    >>> RetentionPolicy.parse({"messages": "90d", "checkpoints": {"keep": 20}}).messages
    datetime.timedelta(days=90)
    >>> parse_age("12h", "age")
    datetime.timedelta(seconds=43200)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigurationError
from ..storage.validation import is_count, validated
from ..tokens.counting import TokenCounter

EXIT_DRAIN = 2.0  # seconds of vector writing at interpreter exit, by default


def check_last_messages(value: Any) -> Any:
    """`value` if it is a non-negative int or False (`ValueError` for pydantic if not)."""
    if value is not False and not is_count(value):
        raise ValueError(f"last_messages must be a non-negative int or False, got {value!r}")
    return value


@dataclass(frozen=True)
class MessageTokens:
    """A validated ``message_tokens`` option."""

    max_tokens: int
    at_max_remove_tokens: int
    encoding: str = "o200k_base"

    @classmethod
    def parse(cls, value: Any) -> MessageTokens | None:
        """`value` checked (None or False: no budget); a `ConfigurationError` names the key."""
        if value is None or value is False:
            return None
        if isinstance(value, MessageTokens):
            return value
        if not isinstance(value, Mapping):
            msg = 'message_tokens must be {"max_tokens": int, "at_max_remove_tokens": int}'
            raise ConfigurationError(msg)
        unknown = set(value) - {"max_tokens", "at_max_remove_tokens", "encoding"}
        if unknown:
            raise ConfigurationError(f"message_tokens: unknown keys {sorted(unknown)}")
        most = value.get("max_tokens")
        if not is_count(most, at_least=1):
            raise ConfigurationError(
                f"message_tokens.max_tokens must be a positive int, got {most!r}"
            )
        remove = value.get("at_max_remove_tokens")
        if remove is None:
            remove = max(1, most // 4)
        if not is_count(remove, at_least=1) or remove > most:
            raise ConfigurationError(
                "message_tokens.at_max_remove_tokens must be an int in 1..max_tokens "
                f"({most}), got {remove!r}"
            )
        encoding = value.get("encoding", "o200k_base")
        if not isinstance(encoding, str) or not encoding:
            raise ConfigurationError(
                f"message_tokens.encoding must be a tiktoken name, got {encoding!r}"
            )
        TokenCounter(encoding)  # an unknown encoding fails here, with its own clear error
        return cls(most, remove, encoding)

    @cached_property
    def counter(self) -> TokenCounter:
        return TokenCounter(self.encoding)


class MemoryOptions(BaseModel):
    """Options of `Memory` (Mastra's ``MemoryConfig``).

    - ``last_messages``: how many recent messages of the thread go into the context
      (default 40; ``False`` disables history).
    - ``semantic_recall``: ``False``, ``True`` or a dict of `SemanticRecall` options.
    - ``working_memory``: ``{"enabled": True, "template" | "schema": ..., "scope": ...}``.
    - ``generate_title``: ``False``/``True`` or ``{"model": chat_model}``.
    - ``observational_memory``: ``False`` or ``{"model": chat_model, ...}``
      (`ObservationalConfig`).
    - ``recall_placement``: where this turn's recalled messages go. ``"end"`` (default): in one
      fenced message after the history, just before the new input, so the context starts the
      same way every turn and a provider's prompt cache serves it; ``"system"``: Mastra's
      order (other threads' hits in the leading system message, the thread's own before the
      history).
    - ``history_window``: ``"blocks"`` (default) drops the oldest history half a window at a
      time (at least ``last_messages`` shown, at most 1.5 times as many), so the history's
      first message stays put for many turns; ``"sliding"``: Mastra's newest-N rule.
    - ``cache_breakpoints``: mark the end of the system message and of the history with
      Anthropic's ``cache_control`` (for ``ChatAnthropic`` and Bedrock's Anthropic models).
    - ``read_only``: assemble the context but save nothing of a turn (routing agents,
      sub-agents); the working-memory tool then refuses updates. One call can ask for it too
      (`call_options`).
    - ``message_tokens``: ``{"max_tokens", "at_max_remove_tokens", "encoding"}``, Mastra's
      ``messageTokens``: a token budget for what memory sends, the oldest history dropped in
      chunks behind a stored boundary (`turn.history`); ``last_messages``, when
      given too, caps the count on top.
    - ``retention``: an age per kind (``messages``, ``threads``, ``checkpoints``,
      ``observations``, ``items``), Mastra's ``storage.retention``; ``memory.prune()``
      applies it (`lifecycle.retention`). Nothing is pruned unless configured.
    - ``exit_drain``: seconds the vectors still queued get to be written when the interpreter
      exits (default 2.0; 0: none). What is left stays in storage's backlog, which the next
      `Memory` over that storage writes by itself; ``memory.close()`` (or ``with Memory(...)``)
      writes everything before it returns.

    Examples:
        >>> MemoryOptions.parse({"last_messages": 10}).last_messages
        10
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, strict=True)

    last_messages: int | Literal[False] = 40
    semantic_recall: bool | dict[str, Any] = False
    working_memory: dict[str, Any] | None = None
    generate_title: bool | dict[str, Any] = False
    observational_memory: bool | dict[str, Any] = False
    recall_placement: Literal["end", "system"] = "end"
    history_window: Literal["blocks", "sliding"] = "blocks"
    cache_breakpoints: bool = False
    read_only: bool = False
    message_tokens: dict[str, Any] | None = None
    retention: dict[str, Any] | None = None
    exit_drain: float = Field(default=EXIT_DRAIN, ge=0.0, le=600.0)

    @field_validator("last_messages", mode="before")
    @classmethod
    def _check_last(cls, value: Any) -> Any:
        return check_last_messages(value)

    @field_validator("message_tokens", mode="before")
    @classmethod
    def _check_budget(cls, value: Any) -> Any:

        parsed = MessageTokens.parse(value)
        return (
            None
            if parsed is None
            else {
                "max_tokens": parsed.max_tokens,
                "at_max_remove_tokens": parsed.at_max_remove_tokens,
                "encoding": parsed.encoding,
            }
        )

    @field_validator("retention", mode="before")
    @classmethod
    def _check_retention(cls, value: Any) -> Any:

        RetentionPolicy.parse(value)  # a ConfigurationError naming the option, or fine
        return value

    def history_cap(self) -> int | Literal[False] | None:
        """``last_messages`` as a count cap: None when ``message_tokens`` governs alone (it was
        given and ``last_messages`` was not)."""
        if self.message_tokens is not None and "last_messages" not in self.model_fields_set:
            return None
        return self.last_messages

    @classmethod
    def parse(cls, options: MemoryOptions | dict[str, Any] | None) -> MemoryOptions:
        """Validate options given as a dict (or None for the defaults)."""
        return validated(cls, options, "memory options")


KINDS = ("messages", "threads", "checkpoints", "observations", "items")

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_age(value: Any, where: str) -> timedelta:
    """A positive duration: ``"90d"``, ``"12h"``, ``"30m"``, ``"45s"``, ``"2w"``, or a
    ``timedelta``; anything else a `ConfigurationError` naming `where`."""
    if isinstance(value, timedelta):
        age = value
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        age = timedelta(seconds=float(match[1]) * UNITS[match[2]])
    else:
        msg = (
            f"{where}: {value!r} is not a duration; give one like '90d', '12h', '30m', '45s', "
            "'2w' or a datetime.timedelta"
        )
        raise ConfigurationError(msg)
    if age <= timedelta(0):
        raise ConfigurationError(f"{where}: {value!r} must be longer than zero")
    return age


@dataclass(frozen=True)
class RetentionPolicy:
    """How old each kind may grow (None: kept forever)."""

    messages: timedelta | None = None
    threads: timedelta | None = None
    checkpoints: timedelta | None = None
    checkpoints_keep: int | None = None
    observations: timedelta | None = None
    items: timedelta | None = None

    @property
    def configured(self) -> bool:
        return any(getattr(self, name) is not None for name in self.__dataclass_fields__)

    @classmethod
    def parse(cls, value: Any) -> RetentionPolicy:
        """``{"messages": "90d", "checkpoints": {"max_age": "30d", "keep": 20}, ...}``;
        each kind an age or ``{"max_age": age}`` (Mastra's ``maxAge`` too)."""
        where = "options['retention']"
        if value is None:
            return cls()
        if not isinstance(value, dict):
            raise ConfigurationError(f"{where} must be a dict of ages by kind, got {value!r}")
        ages: dict[str, Any] = {}
        for kind, setting in value.items():
            if kind not in KINDS:
                msg = f"{where}: unknown kind {kind!r}; use {', '.join(map(repr, KINDS))}"
                raise ConfigurationError(msg)
            here = f"{where}[{kind!r}]"
            if isinstance(setting, dict):
                allowed = {"max_age", "maxAge"} | ({"keep"} if kind == "checkpoints" else set())
                if unknown := set(setting) - allowed:
                    msg = f"{here}: unknown option(s) {sorted(unknown)}; use {sorted(allowed)}"
                    raise ConfigurationError(msg)
                age = setting.get("max_age", setting.get("maxAge"))
                if "keep" in setting:
                    keep = setting["keep"]
                    if not is_count(keep, at_least=1):
                        msg = f"{here}['keep']: {keep!r} must be a whole number of at least 1"
                        raise ConfigurationError(msg)
                    ages["checkpoints_keep"] = keep
                if age is None and "keep" not in setting:
                    raise ConfigurationError(f"{here}: give 'max_age'")
                if age is not None:
                    ages[kind] = parse_age(age, f"{here}['max_age']")
            else:
                ages[kind] = parse_age(setting, here)
        return cls(**ages)
