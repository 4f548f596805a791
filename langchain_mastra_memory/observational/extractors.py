"""Extractors: values the Observer (or the Reflector) pulls out in the same pass, as Mastra's.

An `Extractor` names a value to keep up to date from the conversation: a text (instructions
only) or a structured one (a Pydantic model or a JSON schema). Text extractors ride the
Observer's own reply: the prompt asks for an optional ``<slug>`` section after the
observations, and it is read out and cut from them. Structured ones are asked in a follow-up
turn of the same exchange (the Observer's prompt, its reply, then a request for one JSON
object), so a provider's prompt cache serves the whole prefix: no cold second call. Each value
is validated, handed to ``on_extracted`` (which may replace it), kept per observation scope
(thread or resource), reported as an ``extracted`` event, and read back with
``Memory.extracted_values``. The previous value is shown to the model unless
``include_previous=False``.

Example:
    >>> from pydantic import BaseModel
    >>> class Trip(BaseModel):
    ...     destination: str | None = None
    >>> Extractor("Trip plan", "Where the user is travelling", schema=Trip).slug
    'trip-plan'

**Observational memory's side of extractors**: the values a pass reads, then what becomes of
them (``on_extracted``, the scope's kept values, an ``extracted`` event each).

**`WorkingMemoryExtractor`**: the Observer keeps working memory up to date, no tool call
needed.

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
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from pydantic import BaseModel, ValidationError

from ..errors import ConfigurationError, MastraMemoryError
from ..storage.base import MemoryStorage
from ..storage.validation import stripped
from ..twins import Steps, call
from .as_of import owned_key

RESERVED = frozenset(
    {
        "observations",
        "observation",
        "extracted-values",
        "thread",
        "message",
        "messages",
        "conversation",
        "history",
        "system",
        "user",
        "assistant",
        "tool",
        "current-task",
        "suggested-response",
        "thread-title",
        "working-memory",
        "existing-observations",
        "new-messages",
    }
)  # (the tags the Observer's prompt and reply already use)


def slugify(name: str) -> str:
    """Mastra's slug of an extractor name: lower-case letters and digits, other runs as ``-``.

    >>> slugify("User's Trip Plan!")
    'users-trip-plan'
    """
    words = re.sub(r"['\"`]", "", name.strip().lower())
    return re.sub(r"[^a-z0-9]+", "-", words).strip("-")


@dataclass(frozen=True)
class ExtractorContext:
    """Where an extraction runs: ``source`` (``"observer"`` or ``"reflector"``), the ids, and
    memory's working-memory store (None when working memory is off)."""

    source: str
    resource_id: str
    thread_id: str | None
    working: Any = None


@dataclass(frozen=True)
class Extracted:
    """What ``on_extracted`` receives: the extractor, the new value (JSON: a Pydantic
    schema's value as ``model_dump(mode="json")``), the value kept before, and where."""

    extractor: Extractor
    value: Any
    previous: Any
    context: ExtractorContext


class Extractor:
    """A value the Observer keeps up to date (see the module docstring).

    - ``name``: shown to no one but the model; its slug (`slugify`) keys the value.
    - ``instructions``: what to extract (a string, or a function of an `ExtractorContext`).
    - ``schema``: a Pydantic model or a JSON schema (structured); None for a text value.
    - ``include_previous``: show the model the value kept so far (default True).
    - ``persist``: keep the value for ``Memory.extracted_values`` (default True).
    - ``on_extracted``: called with an `Extracted`; a value it returns replaces the
      extracted one, None keeps it (Mastra's ``onExtracted``).

    Example:
        >>> Extractor("Mood", "The user's mood, one word").mode
        'text'
    """

    def __init__(
        self,
        name: str,
        instructions: str | Callable[[ExtractorContext], str],
        *,
        schema: type[BaseModel] | Mapping[str, Any] | None = None,
        include_previous: bool = True,
        persist: bool = True,
        on_extracted: Callable[[Extracted], Any] | None = None,
        _internal: bool = False,
    ) -> None:
        self.name = stripped(name)
        self.slug = slugify(self.name)
        if not re.fullmatch(r"[a-z][a-z0-9-]*[a-z0-9]|[a-z]", self.slug):
            raise ConfigurationError(
                f"an extractor's name must give a slug that starts with a letter, got {name!r}"
            )
        if self.slug in RESERVED and not _internal:
            raise ConfigurationError(f"the extractor slug {self.slug!r} is reserved by memory")
        if not callable(instructions) and not stripped(instructions):
            raise ConfigurationError(f"extractor {self.name!r} needs instructions")
        if schema is not None and not _is_model(schema):
            if not isinstance(schema, Mapping):
                raise ConfigurationError(
                    f"extractor {self.name!r}: schema must be a Pydantic model or a JSON schema"
                )
            try:
                jsonschema.validators.validator_for(schema).check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise ConfigurationError(f"extractor {self.name!r}: {exc.message}") from exc
        self.instructions = instructions
        self.schema = schema
        self.include_previous = include_previous
        self.persist = persist
        self.on_extracted = on_extracted

    def __repr__(self) -> str:
        return f"Extractor({self.name!r}, mode={self.mode!r})"

    @property
    def mode(self) -> str:
        """``"text"`` (rides the reply) or ``"structured"`` (the follow-up turn)."""
        return "text" if self.schema is None else "structured"

    def resolve(self, context: ExtractorContext) -> ResolvedExtractor:
        """The extractor as this run sees it (its instructions, and schema, settled)."""
        text = self.instructions(context) if callable(self.instructions) else self.instructions
        if not stripped(text):
            raise ConfigurationError(f"extractor {self.name!r} gave no instructions")
        return ResolvedExtractor(self, stripped(text), self.json_schema(context))

    def json_schema(self, context: ExtractorContext) -> dict[str, Any] | None:
        """The value's JSON schema (None for a text value)."""
        if self.schema is None:
            return None
        if isinstance(self.schema, type):
            return self.schema.model_json_schema()
        return dict(self.schema)

    def validate(self, value: Any, context: ExtractorContext) -> Any:
        """The value as JSON, checked against the schema (`ValueError` when it does not fit)."""
        if self.schema is None:
            if not isinstance(value, str):
                value = json.dumps(value)
            return value.strip()
        if isinstance(self.schema, type):
            try:
                return self.schema.model_validate(value).model_dump(mode="json")
            except ValidationError as exc:
                raise ValueError(str(exc)) from exc
        schema = self.json_schema(context)
        errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(value))
        if errors:
            raise ValueError(errors[0].message)
        return value

    def extracted(self, value: Any, previous: Any, context: ExtractorContext) -> Any:
        """``on_extracted``'s word on a new value (None: keep nothing new)."""
        if self.on_extracted is None:
            return value
        replaced = self.on_extracted(Extracted(self, value, previous, context))
        return value if replaced is None else self.validate(replaced, context)


def _is_model(schema: Any) -> bool:
    return isinstance(schema, type) and issubclass(schema, BaseModel)


@dataclass(frozen=True)
class ResolvedExtractor:
    """An extractor with this run's instructions and schema."""

    extractor: Extractor
    instructions: str
    schema: dict[str, Any] | None

    @property
    def slug(self) -> str:
        return self.extractor.slug


def check_extractors(extractors: Sequence[Any]) -> list[Extractor]:
    """The list, each an `Extractor` with its own slug (`ConfigurationError` otherwise)."""
    seen: dict[str, str] = {}
    for extractor in extractors:
        if not isinstance(extractor, Extractor):
            raise ConfigurationError(f"extractors must be Extractor objects, got {extractor!r}")
        if extractor.slug in seen:
            raise ConfigurationError(
                f"two extractors share the slug {extractor.slug!r}: "
                f"{seen[extractor.slug]!r} and {extractor.name!r}"
            )
        seen[extractor.slug] = extractor.name
    return list(extractors)


# -- the prompts and the replies -------------------------------------------------------------
def _prior(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def text_sections(extractors: Sequence[ResolvedExtractor], previous: Mapping[str, Any]) -> str:
    """What the Observer's prompt adds for text extractors (empty when there are none)."""
    text = [e for e in extractors if e.schema is None]
    if not text:
        return ""
    sections = "\n\n".join(
        f"<{e.slug}>\n{e.instructions}\nInclude this section when the conversation holds "
        f"something for <{e.slug}>. Write only that inside the tag.\n</{e.slug}>"
        for e in text
    )
    kept = [
        f"<{e.slug}>\n{_prior(previous[e.slug])}\n</{e.slug}>"
        for e in text
        if e.extractor.include_previous and previous.get(e.slug) not in (None, "")
    ]
    known = (
        "\n\nThe values kept so far (carry one forward when it still holds):\n"
        + ("\n\n".join(kept))
        if kept
        else ""
    )
    return (
        "Additional optional sections: if the messages hold something for any of these tags, "
        f"write that tag after <observations>.\n{sections}{known}"
    )


def read_text_values(
    reply: str, extractors: Sequence[ResolvedExtractor]
) -> tuple[str, dict[str, Any]]:
    """The reply without the text extractors' sections, and their raw values by slug (the
    last section of a slug counts)."""
    values: dict[str, str] = {}
    for e in extractors:
        if e.schema is not None:
            continue
        pattern = re.compile(rf"[ \t]*<{e.slug}>(.*?)</{e.slug}>\s*", re.S | re.I)
        found = [m.group(1).strip() for m in pattern.finditer(reply)]
        reply = pattern.sub("", reply)
        if found and found[-1]:
            values[e.slug] = found[-1]
    return reply, values


def structured_request(
    extractors: Sequence[ResolvedExtractor], previous: Mapping[str, Any], source: str
) -> str | None:
    """The follow-up turn asking for the structured values (None when there are none)."""
    structured = [e for e in extractors if e.schema is not None]
    if not structured:
        return None
    subject = "reflection" if source == "reflector" else "observations"
    properties = {e.slug: e.schema for e in structured}
    lines = "\n".join(f"- {e.slug}: {e.instructions}" for e in structured)
    kept = [
        f"- {e.slug}: {_prior(previous[e.slug])}"
        for e in structured
        if e.extractor.include_previous and previous.get(e.slug) is not None
    ]
    known = "\n\n## Values kept so far\n\n" + "\n".join(kept) if kept else ""
    return (
        f"Extract structured data from the {subject} you made.\n\nReply with one JSON object "
        "and nothing else: no observations, XML, markdown or explanation. Its properties are "
        "optional; leave out any the conversation does not support. If a value kept so far "
        f"still holds, return it.\n\n## Values\n\n{lines}{known}\n\n## JSON schema of each "
        f"property\n\n{json.dumps(properties)}"
    )


def read_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply (a fenced block or the outermost braces); `ValueError` when
    there is none."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the reply holds no JSON object")
    value = json.loads(body[start : end + 1])
    if not isinstance(value, dict):
        raise ValueError("the reply's JSON is not an object")
    return value


@dataclass
class Extraction:
    """A pass's values by slug (validated JSON) and the slugs it could not read, with why."""

    values: dict[str, Any] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    def take(
        self,
        extractors: Sequence[ResolvedExtractor],
        raw: Mapping[str, Any],
        context: ExtractorContext,
    ) -> None:
        """Validate the raw values of `extractors` found in `raw` (empty ones are no value)."""
        for e in extractors:
            value = raw.get(e.slug)
            if value is None or value == "" or value == {} or value == []:
                continue
            try:
                self.values[e.slug] = e.extractor.validate(value, context)
            except ValueError as exc:
                self.failures[e.slug] = str(exc)


logger = logging.getLogger(__name__)


def check_working_extractor(config: Any, working: Any) -> None:
    """`WorkingMemoryExtractor` among the Observer's extractors only, with working memory on
    and not managed by ``manage_working_memory`` as well (`ConfigurationError`)."""

    if any(isinstance(e, WorkingMemoryExtractor) for e in config.reflector_extractors):
        raise ConfigurationError("WorkingMemoryExtractor rides the Observer: put it in extractors")
    if not any(isinstance(e, WorkingMemoryExtractor) for e in config.extractors):
        return
    if working is None:
        raise ConfigurationError(NEEDS_WORKING_MEMORY)
    if config.manage_working_memory:
        raise ConfigurationError("give manage_working_memory or a WorkingMemoryExtractor, not both")


def keeps_working_memory(config: Any) -> bool:
    """Whether the Observer keeps working memory up to date (``manage_working_memory`` or a
    `WorkingMemoryExtractor`): the model is then shown it, not told to call the tool."""

    return config.manage_working_memory or any(
        isinstance(e, WorkingMemoryExtractor) for e in config.extractors
    )


def pass_inputs(
    storage: MemoryStorage, extractors: Sequence[Extractor], key: str, context: ExtractorContext
) -> Steps[dict[str, Any]]:
    """What an Observer or Reflector call is given for `extractors` ({} when there are none):
    them, settled for this run, and the values kept so far."""
    if not extractors:
        return {}
    resolved = [extractor.resolve(context) for extractor in extractors]
    previous = yield from call(storage.extracted_values, key)
    return {"extractors": resolved, "extracted": previous, "extractor_context": context}


def keep_extracted(
    storage: MemoryStorage,
    extraction: Extraction | None,
    inputs: dict[str, Any],
    key: str,
    emit: Callable[..., None],
) -> Steps[None]:
    """Hand each value to its ``on_extracted``, keep those to persist (one transaction), and
    report each as an ``extracted`` event (a failure as ``failed``, step ``extract``: the
    observations stand, and the value is asked again at the next pass)."""
    if extraction is None:
        return
    context: ExtractorContext = inputs["extractor_context"]
    previous = inputs["extracted"]
    where = (key, context.resource_id, context.thread_id)
    resolved: list[ResolvedExtractor] = inputs["extractors"]
    failures = dict(extraction.failures)
    kept: dict[str, Any] = {}
    reports: list[dict[str, Any]] = []
    for slug, value in extraction.values.items():
        extractor = next(e.extractor for e in resolved if e.slug == slug)
        try:
            final = extractor.extracted(value, previous.get(slug), context)
        except (ValueError, MastraMemoryError) as exc:
            failures[slug] = str(exc)
            continue
        except Exception as exc:  # the application's handler failed: its value is not kept
            failures[slug] = f"on_extracted failed: {exc}"
            continue
        if extractor.persist:
            kept[slug] = final
        reports.append({"slug": slug, "value": final, "previous": previous.get(slug)})
    if kept:
        try:
            yield from call(
                storage.save_extracted_values,
                key,
                kept,
                resource_id=context.resource_id,
                source=context.source,
            )
        except Exception as exc:  # the pass's log stands; the values are asked again next pass
            failures.update({slug: f"not kept: {exc}" for slug in kept})
            reports = [r for r in reports if r["slug"] not in kept]
    for report in reports:
        emit("extracted", *where, source=context.source, **report)
    for slug, error in failures.items():
        logger.warning("observational memory: extractor %r of %s: %s", slug, key, error)
        emit("failed", *where, step="extract", slug=slug, error=error)


def extracted_values(
    storage: MemoryStorage,
    default_scope: Any,
    *,
    resource_id: str,
    thread_id: str | None = None,
    scope: Any = None,
) -> Steps[dict[str, Any]]:
    """Steps of the values the extractors keep for `resource_id`'s scope (`as_of.owned_key`:
    owner-checked), by slug."""
    key = yield from owned_key(storage, default_scope, resource_id, thread_id, scope)
    values: dict[str, Any] = yield from call(storage.extracted_values, key)
    return values


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
