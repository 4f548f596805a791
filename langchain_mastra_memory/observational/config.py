"""Observational memory's options (`ObservationalConfig`, Mastra's ``observationalMemory``) and
the status events it emits (`ObservationEvent`, a LangChain custom event)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import ConfigurationError
from .runnables import ObservationHooks, chat_model

SOURCE = "observational_memory"
EVENT = "memory_status"  # the LangChain custom event's name
EventKind = Literal[
    "observing",
    "buffered",
    "activated",
    "reflecting",
    "reflected",
    "working_memory_updated",
    "extracted",
    "archived",
    "failed",
    "timeout",
]


CACHE_LIFETIME = 300.0  # seconds: Anthropic's and OpenAI's default prompt-cache lifetime
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def idle_seconds(value: Any) -> float:
    """``activate_after_idle`` in seconds: a number, ``"90s"``, ``"5m"``, ``"1h"``, ``"auto"``.

    Examples:
        >>> idle_seconds("5m"), idle_seconds(30), idle_seconds("auto")
        (300.0, 30.0, 300.0)
    """
    if value == "auto":
        return CACHE_LIFETIME
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    if isinstance(value, str) and (m := re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", value)):
        return float(m.group(1)) * _UNITS[m.group(2)]
    raise ValueError(
        f"activate_after_idle must be seconds, a duration like '5m' or 'auto', got {value!r}"
    )


@dataclass(frozen=True)
class ObservationEvent:
    """What observational memory just did, for a status line (`ObservationalConfig.on_status`).

    Examples:
        >>> ObservationEvent("activated", "thread:t1", "alice", "t1", {"groups": 2}).kind
        'activated'
    """

    kind: EventKind
    scope_key: str
    resource_id: str
    thread_id: str | None
    detail: dict[str, Any] = field(default_factory=dict)


def turn_ended(message: Any) -> bool:
    """Whether `message` ends a turn: the model's answer, with no tool call pending."""
    return getattr(message, "type", None) == "ai" and not getattr(message, "tool_calls", None)


class ArchiveConfig(BaseModel):
    """Rolling archives instead of reflection (Mastra's ``observation.archive``).

    - ``after_tokens``: live log tokens that retire its oldest groups (Mastra: 40,000).
    - ``keep_tokens``: about how many of the newest log tokens stay live (Mastra: 8,000); a
      group is never split, so a little more may stay.
    - ``max_catalog_tokens``: the most the catalog of archived groups shown to the model may
      take (Mastra: 2,000); newest first, what does not fit is marked hidden.

    Examples:
        >>> ArchiveConfig(keep_tokens=4_000).after_tokens
        40000
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    after_tokens: int = Field(default=40_000, gt=0)
    keep_tokens: int = Field(default=8_000, ge=0)
    max_catalog_tokens: int = Field(default=2_000, ge=0)

    @model_validator(mode="after")
    def _keeps_less_than_it_archives_at(self) -> ArchiveConfig:
        if self.keep_tokens >= self.after_tokens:
            raise ValueError(
                f"archive.keep_tokens ({self.keep_tokens}) must be under archive.after_tokens "
                f"({self.after_tokens}): otherwise nothing is ever archived"
            )
        return self


# a MIME type or a pattern of them: "*", "image/*", "application/pdf" (RFC 6838's characters)
MIME_PATTERN = re.compile(r"\*|[a-z0-9][\w!#$&^.+-]*/(\*|[a-z0-9][\w!#$&^.+-]*)", re.I)

REFLECTION_OPTIONS = (
    "observation_tokens",
    "reflector_model",
    "reflector_instruction",
    "reflector_extractors",
)


class ObservationalConfig(BaseModel):
    """``options={"observational_memory": {...}}`` (``True`` is not enough: a model is needed).

    - ``model``: the chat model of the Observer and the Reflector (required).
    - ``scope``: ``"thread"`` (default) or ``"resource"`` (one log over the owner's threads).
    - ``message_tokens``: unobserved tokens that put observations into the log (Mastra:
      30,000).
    - ``observation_tokens``: log tokens that start the Reflector (Mastra: 40,000).
    - ``buffer_tokens``: how many new tokens start a buffering Observer run ahead of the
      threshold: a fraction of ``message_tokens`` when at most 1 (default 0.2, Mastra's), else
      a count; ``None`` or 0 turns buffering off (the Observer runs at the threshold).
    - ``buffer_activation``: the share of the threshold that activation moves into the log
      (default 0.8: about a fifth stays as raw messages).
    - ``block_after``: a turn over this multiple of ``message_tokens`` waits for the Observer
      (default 1.2, Mastra's).
    - ``lease_seconds``: how long a run may hold its scope before another may take it.
    - ``block_timeout``: the longest a turn waits for the Observer (default: the lease); past
      it the turn goes on with what the log holds and a ``timeout`` event is emitted (the run
      goes on behind; a hung one's lease lapses).

    Mastra 1.x's options too:

    - ``observer_model`` / ``reflector_model``: a model for one of the two (``model`` is the
      other's, or both's). Any model option may be a list (a fallback chain: the next model
      answers when one raises) or a `ModelByInputTokens` (a model chosen by the input's size).
    - ``instruction``: the developer's own words added to both prompts (what to keep, what to
      ignore); ``observer_instruction`` / ``reflector_instruction`` for one of them.
    - ``manage_working_memory``: the Observer also rewrites the working memory (it must be
      enabled) when the conversation changed what it should say; the update goes through the
      same validation as the tool, and an invalid one is dropped with a warning.
    - ``temporal_markers``: a pause of an hour or more between two messages is marked in what
      the Observer reads (``(3 days later)``), so its notes keep the conversation's rhythm.
    - ``suggest_title``: the Observer suggests a title for a thread that has none, and the
      thread takes it (a title set meanwhile is never replaced).
    - ``max_tokens_per_batch``: the most message tokens one Observer call reads; more are
      observed in several calls, oldest first, each seeing the log the last one wrote.
    - ``activate_after_idle``: seconds (or ``"5m"``, ``"1h"``; ``"auto"``: 5 minutes, the
      prompt-cache lifetime of Anthropic and OpenAI): buffered observations activate at the
      first save after the thread was idle that long, under the threshold too. The provider's
      cache is cold by then, so the smaller context costs nothing it had not lost already.
    - ``on_status``: called with an `ObservationEvent` at each step (observing, buffered,
      activated, reflecting, reflected, archived, working_memory_updated, extracted,
      failed, timeout),
      so an app can show what memory is doing; inside a run the same events go out as
      LangChain custom events named ``memory_status`` (``astream_events`` shows them).
    - ``observe_attachments``: the images and files of the messages observed go to the
      Observer with them (``True``, the default, as Mastra's), none (``False``), those of
      some MIME types (``["image/*", "application/pdf"]``), or ``"auto"``: what the
      Observer's model accepts by its LangChain profile. The transcript names each one
      (``[Image #1: receipt.png]``) either way.
    - ``extractors``: `Extractor` objects whose values the Observer keeps up to date in its
      own pass (an ``extracted`` event each; ``Memory.extracted_values`` reads them);
      ``reflector_extractors`` for the Reflector's pass. `WorkingMemoryExtractor` keeps
      working memory up to date without a tool call.
    - ``archive``: rolling archives instead of reflection (`ArchiveConfig`; ``True`` or
      ``{}`` for Mastra's defaults): past ``after_tokens`` the oldest groups leave the log
      whole, with no model call; the model sees a catalog of them and reads one with the
      recall tool (``mode="observations"``). Not with the reflection options.
    - ``buffer_on_idle``: a turn that ends (the model's answer saved, no tool call pending)
      starts a buffering Observer run on what it added, under ``buffer_tokens`` too, so
      short turns are observed while the user reads (Mastra's ``observation.bufferOnIdle``).
    - ``previous_observer_tokens``: the most of the log the Observer is shown, newest
      entries first (``0``: none; ``None``/``False``, the default: the whole log; Mastra
      shows 2,000).
    - ``hooks``: `ObservationHooks` (or a dict of them): ``before_observation``,
      ``after_observation``, ``before_reflection``, ``after_reflection`` change what the
      Observer reads and what is kept (to redact, say); a failing hook fails that pass.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, strict=True)

    model: Any = None
    observer_model: Any = None
    reflector_model: Any = None
    instruction: str | None = None
    observer_instruction: str | None = None
    reflector_instruction: str | None = None
    manage_working_memory: bool = False
    temporal_markers: bool = False
    suggest_title: bool = False
    max_tokens_per_batch: int | None = Field(None, gt=0)
    activate_after_idle: float | str | None = None
    on_status: Callable[[ObservationEvent], None] | None = None
    extractors: list[Any] = Field(default_factory=list)
    observe_attachments: bool | list[str] | Literal["auto"] = True
    reflector_extractors: list[Any] = Field(default_factory=list)
    scope: Literal["thread", "resource"] = "thread"
    message_tokens: int = Field(30_000, gt=0)
    observation_tokens: int = Field(40_000, gt=0)
    buffer_tokens: float | None = Field(0.2, ge=0)
    buffer_activation: float = Field(0.8, gt=0, le=1)
    block_after: float = Field(1.2, ge=1)
    lease_seconds: float = Field(300.0, gt=0)
    block_timeout: float | None = Field(None, gt=0)
    archive: ArchiveConfig | None = None
    hooks: ObservationHooks | None = None
    previous_observer_tokens: int | None = Field(default=None, ge=0)
    buffer_on_idle: bool = False

    @field_validator("previous_observer_tokens", mode="before")
    @classmethod
    def _previous(cls, value: Any) -> Any:
        return None if value is False else value

    @field_validator("archive", mode="before")
    @classmethod
    def _archive(cls, value: Any) -> Any:
        if value is True:
            return ArchiveConfig()
        return None if value is False else value

    @model_validator(mode="after")
    def _archive_or_reflection(self) -> ObservationalConfig:
        both = [name for name in REFLECTION_OPTIONS if name in self.model_fields_set]
        hooks = self.hooks
        both += [
            f"hooks.{name}"
            for name in ("before_reflection", "after_reflection")
            if hooks is not None and getattr(hooks, name) is not None
        ]
        if self.archive is not None and both:
            raise ValueError(
                f"archive and reflection are exclusive (Mastra's rule): drop {', '.join(both)} "
                "or archive; with archive, old observations are archived, never reflected"
            )
        return self

    @field_validator("extractors", "reflector_extractors", mode="after")
    @classmethod
    def _extractors(cls, value: list[Any]) -> list[Any]:
        from .extractors import check_extractors

        try:
            return check_extractors(value)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("observe_attachments", mode="after")
    @classmethod
    def _mime_patterns(cls, value: Any) -> Any:
        if isinstance(value, list):
            wrong = [p for p in value if not MIME_PATTERN.fullmatch(p)]
            if wrong:
                raise ValueError(
                    f'observe_attachments takes MIME types or patterns ("image/*", '
                    f'"application/pdf", "*"), got {wrong!r}'
                )
        return value

    @field_validator("activate_after_idle", mode="before")
    @classmethod
    def _idle(cls, value: Any) -> float | None:
        return None if value is None else idle_seconds(value)

    @property
    def turn_wait(self) -> float:
        """The longest a turn waits for the Observer (`block_timeout`, else the lease)."""
        return self.block_timeout if self.block_timeout is not None else self.lease_seconds

    @property
    def buffer_step(self) -> float | None:
        """New tokens that start a buffering run (None: buffering is off)."""
        if not self.buffer_tokens:
            return None
        share = self.buffer_tokens <= 1
        return self.buffer_tokens * self.message_tokens if share else self.buffer_tokens

    @property
    def retain_tokens(self) -> float:
        """Unobserved tokens activation leaves in the context (0 without buffering)."""
        if self.buffer_step is None:
            return 0.0
        return (1 - self.buffer_activation) * self.message_tokens

    @classmethod
    def parse(cls, option: bool | dict[str, Any]) -> ObservationalConfig | None:
        if option is False or option is None:
            return None
        given = option if isinstance(option, dict) else {}
        for role in ("observer", "reflector"):
            model = given.get(f"{role}_model") or given.get("model")
            if model is None:
                raise ConfigurationError(
                    'observational_memory needs {"model": <a LangChain chat model>} (the '
                    f'Observer and Reflector run on it; or "{role}_model" for the {role}); '
                    f"got {option!r}"
                )
            try:  # a model, a fallback chain or ModelByInputTokens
                chat_model(model, role)
            except ConfigurationError as exc:
                raise ConfigurationError(f"observational_memory needs a model: {exc}") from exc
        try:
            return cls.model_validate(option)
        except ValidationError as exc:
            raise ConfigurationError(f"invalid observational_memory options: {exc}") from exc
