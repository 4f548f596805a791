"""Options fuzzing: every option of `Memory(options=...)`, `observational_memory` and the
others, given a value of the wrong type (a bool for a count, a string for a bool, a list of
nonsense), is a `ConfigurationError` naming the option, or is accepted as documented: kept as
given, never coerced into something else (issue 83.3: ``message_tokens=True`` was a 1-token
threshold, ``observe_attachments="yes"`` and ``temporal_markers="no"`` were accepted).

The option paths are read from the option models themselves, so an option added later joins
this test without anyone remembering to add it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.config.call_options import CallOptions
from langchain_mastra_memory.config.options import KINDS, MemoryOptions
from langchain_mastra_memory.errors import ConfigurationError
from langchain_mastra_memory.observational.config import ArchiveConfig, ObservationalConfig
from langchain_mastra_memory.recall.options import MessageRange, RecallOptions
from langchain_mastra_memory.working_memory.config import WorkingMemoryConfig

MODEL = GenericFakeChatModel(messages=iter([AIMessage("unused")]))
MODELS = ("model", "observer_model", "reflector_model")


def _fields(model: Any) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _nested(path: str, value: Any) -> dict[str, Any]:
    """``options`` setting `path` (``"observational_memory.archive.keep_tokens"``) to `value`,
    with what the option around it needs to be on."""
    *outer, leaf = path.split(".")
    inner: Any = {leaf: value}
    for part in reversed(outer):
        if part == "observational_memory":
            inner = {"model": MODEL, **inner} if leaf not in MODELS else inner
        elif part == "working_memory":
            inner = {"enabled": True, **inner}
        elif part == "message_tokens" and leaf != "max_tokens":
            inner = {"max_tokens": 1_000, **inner}
        inner = {part: inner}
    return inner


PATHS = sorted(
    _fields(MemoryOptions)
    + [f"semantic_recall.{f}" for f in _fields(RecallOptions)]
    + [f"semantic_recall.message_range.{f}" for f in _fields(MessageRange)]
    + [f"working_memory.{f}" for f in _fields(WorkingMemoryConfig)]
    + [f"observational_memory.{f}" for f in _fields(ObservationalConfig) if f not in MODELS]
    + [f"observational_memory.archive.{f}" for f in _fields(ArchiveConfig)]
    + [f"message_tokens.{f}" for f in ("max_tokens", "at_max_remove_tokens", "encoding")]
    + [f"retention.{kind}" for kind in KINDS]
    + [f"generate_title.{f}" for f in ("model", "instructions")]
)

# What an option takes besides its own type, as its docstring says: the value accepted and
# what it reads as (a function of the value given), never a silent change of type.
DOCUMENTED: dict[str, dict[Any, Any]] = {
    "last_messages": {False: False},
    "semantic_recall": {True: "defaults", False: False},
    "generate_title": {True: True, False: False},
    "observational_memory": {False: None},
    "message_tokens": {False: None, None: None},
    "observational_memory.archive": {True: "defaults", False: None, None: None},
    "observational_memory.previous_observer_tokens": {False: None, None: None},
}

WRONG = st.one_of(
    st.booleans(),
    st.sampled_from(["yes", "no", "true", "false", "3", "", "picture", "1h!"]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 3),
    st.lists(st.sampled_from(["picture", "x", 3, None]), min_size=1, max_size=3),
    st.dictionaries(st.sampled_from(["a", "nonsense"]), st.integers(), min_size=1, max_size=2),
    st.none(),
)


def _build(options: dict[str, Any]) -> Memory:
    return Memory(storage=SQLiteStorage(":memory:"), embedder=DeterministicFakeEmbedding(size=8),
                  options=options)  # fmt: skip


def _read_back(memory: Memory, path: str) -> Any:
    """The value `memory` holds for `path`, as its parsed options read it."""
    head, *rest = path.split(".")
    holder: Any = memory.options
    if head == "semantic_recall" and rest:
        holder = RecallOptions.parse(memory.options.semantic_recall)
    elif head == "working_memory" and rest:
        holder = memory.working_memory
    elif head == "observational_memory" and rest:
        holder = ObservationalConfig.parse(memory.options.observational_memory)
    elif rest:  # message_tokens, retention, generate_title: dicts kept as given
        holder = getattr(memory.options, head)
        for part in rest:
            holder = holder[part] if isinstance(holder, dict) else getattr(holder, part)
        return holder
    else:
        return getattr(holder, head)
    for part in rest:
        holder = getattr(holder, {"schema": "json_schema"}.get(part, part))
    return holder


def _same_kind(given: Any, kept: Any) -> bool:
    """`kept` is `given` with no change of kind: a bool stays a bool, a string a string, a
    number the same number (an int may be held as a float), a list a list of the same."""
    if isinstance(given, bool) or isinstance(kept, bool):
        return type(given) is type(kept) and given == kept
    if isinstance(given, (int, float)):
        return isinstance(kept, (int, float)) and (kept == given or kept != kept)  # (nan)
    if isinstance(given, (str, list)):
        return type(kept) is type(given) and kept == given
    return True  # a dict: parsed into its own model, checked key by key by its own paths


def check(path: str, value: Any) -> None:
    try:
        memory = _build(_nested(path, value))
    except ConfigurationError as exc:
        leaf = path.rsplit(".", 1)[-1]
        assert leaf in str(exc) or path.split(".")[0] in str(exc), (path, value, str(exc))
        return
    documented = DOCUMENTED.get(path, {})
    kept = _read_back(memory, path)
    if isinstance(value, bool | None.__class__) and value in documented:
        return  # (each documented reading is checked by the option's own tests)
    assert _same_kind(value, kept), f"{path}={value!r} was silently read as {kept!r}"


def test_every_option_path_is_one_the_models_know() -> None:
    assert "observational_memory.temporal_markers" in PATHS
    assert "observational_memory.observe_attachments" in PATHS
    assert len(PATHS) > 60  # every field of every option model


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("observational_memory.message_tokens", True),
        ("observational_memory.observe_attachments", "yes"),
        ("observational_memory.observe_attachments", "no"),
        ("observational_memory.observe_attachments", ["picture"]),
        ("observational_memory.temporal_markers", "no"),
        ("observational_memory.buffer_tokens", True),
        ("observational_memory.lease_seconds", "300"),
        ("semantic_recall.top_k", True),
        ("semantic_recall.date_rule", "no"),
        ("semantic_recall.message_range", -1),
        ("working_memory.enabled", "yes"),
        ("working_memory.max_chars", 2.5),
        ("cache_breakpoints", "no"),
        ("generate_title.instructions", 3),
        ("message_tokens.max_tokens", True),
        ("retention.messages", True),
    ],
)
def test_a_wrong_type_is_refused_naming_the_option(path: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=path.rsplit(".", 1)[-1]):
        _build(_nested(path, value))


def test_mime_patterns_and_auto_are_taken() -> None:
    for rule in (["image/*", "application/pdf"], ["*"], ["IMAGE/PNG"], "auto", True, False):
        memory = _build(_nested("observational_memory.observe_attachments", rule))
        assert _read_back(memory, "observational_memory.observe_attachments") == rule


def test_a_per_call_option_of_the_wrong_type_is_refused() -> None:
    for wrong in ({"read_only": "yes"}, {"last_messages": True}, {"semantic_recall": "on"}):
        with pytest.raises(ConfigurationError, match=next(iter(wrong))):
            CallOptions.parse(wrong)


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(PATHS), value=WRONG)
def test_any_value_of_any_option_is_refused_by_name_or_kept_as_given(path: str, value: Any) -> None:
    check(path, value)
