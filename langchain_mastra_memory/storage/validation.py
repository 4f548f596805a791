"""What storage accepts, checked once at its public boundary, the same for every backend.

Ids are non-empty strings of valid Unicode without NUL (a lone ``str`` where several ids are
expected is refused, never read as a sequence of characters); texts are valid Unicode (a lone
surrogate cannot be encoded by any driver); JSON values (message content, metadata) are finite,
string-keyed and nested at most `MAX_DEPTH` deep, so whatever is stored can be read back;
timestamps lie between `EARLIEST` and `LATEST`, so later messages can always follow them.
Everything refused raises a `MastraMemoryError` subclass naming the field.

Examples:
    >>> check_ids(["m1", "m2"], "message_ids")
    ['m1', 'm2']
    >>> check_ids("m12", "ids")
    Traceback (most recent call last):
    ...
    langchain_mastra_memory.errors.ConfigurationError: ids must be a list of ids, not a str ('m12')
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any, TypeGuard, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import ConfigurationError, InvalidMessageError, MastraMemoryError

Model = TypeVar("Model", bound=BaseModel)

MAX_DEPTH = 64  # nesting of JSON values (message content, metadata)
MAX_ID_LENGTH = 1_024
EARLIEST = datetime(1900, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(3000, 1, 1, tzinfo=timezone.utc)


def is_count(value: object, *, at_least: int = 0) -> TypeGuard[int]:
    """Whether `value` is a whole number of at least `at_least`. A bool is not one, though
    Python's ``int`` says it is: ``limit=True`` is a mistake, never a limit of 1.

    Examples:
        >>> is_count(3), is_count(True), is_count(2.0), is_count(0, at_least=1)
        (True, False, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool) and value >= at_least


def stripped(value: object) -> str:
    """`value` without its outer whitespace when it is a string, else ``""`` (for checks of
    text a caller may have given as anything)."""
    return value.strip() if isinstance(value, str) else ""


ORDER_COLUMNS = ("created_at", "updated_at")


def check_order(order_by: str, limit: int | None, offset: int) -> None:
    """Validate list_threads ordering and paging arguments."""
    if order_by not in ORDER_COLUMNS:
        raise ConfigurationError(f"order_by must be one of {ORDER_COLUMNS}, got {order_by!r}")
    if limit is not None and not is_count(limit):
        raise ConfigurationError(f"limit must be a non-negative int or None, got {limit!r}")
    if not is_count(offset):
        raise ConfigurationError(f"offset must be a non-negative int, got {offset!r}")


def check_id(value: object, what: str, error: type[MastraMemoryError] = ConfigurationError) -> str:
    """An id: a non-empty string of valid Unicode, without NUL, at most 1,024 characters
    (`error`: `InvalidMessageError` for a message's own id, which is input, not an option)."""
    if not isinstance(value, str) or not value.strip():
        raise error(f"{what} must be a non-empty string, got {value!r:.80}")
    if len(value) > MAX_ID_LENGTH:
        raise error(f"{what} is longer than {MAX_ID_LENGTH} characters")
    if "\x00" in value:
        raise error(f"{what} must not contain NUL characters")
    check_unicode(value, what, error)
    return value


def check_optional_id(value: object, what: str) -> str | None:
    """`check_id`, or None."""
    return None if value is None else check_id(value, what)


def check_ids(values: object, what: str) -> list[str]:
    """Several ids: any iterable of ids except a string (which would be read as characters)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        name = type(values).__name__
        raise ConfigurationError(f"{what} must be a list of ids, not a {name} ({values!r:.60})")
    return [check_id(v, f"each of {what}") for v in values]


def check_unicode(
    text: str, what: str, error: type[MastraMemoryError] = InvalidMessageError
) -> str:
    """`text` if every driver can encode it (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        msg = f"{what} is not valid Unicode (a lone surrogate at position {exc.start})"
        raise error(msg) from None
    return text


def check_namespace(
    namespace: object,
    what: str = "namespace",
    error: type[MastraMemoryError] = ConfigurationError,
    *,
    empty: bool = False,
) -> tuple[str, ...]:
    """A store namespace: a tuple of labels, each a non-empty string of valid Unicode with no
    ``.`` (labels are kept joined by dots: ``"a.b"`` would address ``("a", "b")``) and no NUL,
    at most `MAX_ID_LENGTH` bytes joined; empty only where `empty` (a search prefix)."""
    if not isinstance(namespace, tuple):
        raise error(f"{what} must be a tuple of strings, got {type(namespace).__name__}")
    if not namespace and not empty:
        raise error(f"{what} must not be empty")
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise error(f"{what} {namespace!r:.80} has a label that is not a non-empty string")
        if "." in label or "\x00" in label:
            raise error(f"{what} label {label!r:.60} must not contain '.' or NUL characters")
        check_unicode(label, f"{what} label", error)
    if len(".".join(namespace).encode("utf-8")) > MAX_ID_LENGTH:
        raise error(f"{what} is longer than {MAX_ID_LENGTH} bytes (its labels joined by '.')")
    return namespace


def check_item_key(key: object, error: type[MastraMemoryError] = ConfigurationError) -> str:
    """A store item's key: an id (`check_id`) of at most `MAX_ID_LENGTH` bytes."""
    key = check_id(key, "key", error)
    if len(key.encode("utf-8")) > MAX_ID_LENGTH:
        raise error(f"key is longer than {MAX_ID_LENGTH} bytes")
    return key


def check_item_value(value: object, error: type[MastraMemoryError] = ConfigurationError) -> None:
    """A store item's value: a dict (LangGraph's `BaseStore.put` takes ``dict[str, Any]``) of
    JSON values every backend stores and reads back (`check_json_value`, NUL refused)."""
    if not isinstance(value, dict):
        msg = f"a store value must be a dict (LangGraph's BaseStore), got {type(value).__name__}"
        raise error(msg)
    check_json_value(value, "value", error, nul=False)


def check_query(value: object) -> str:
    """A search query: a string of valid Unicode."""
    if not isinstance(value, str):
        raise ConfigurationError(f"query must be a string, got {type(value).__name__}")
    return check_unicode(value, "query", ConfigurationError)


def check_title(value: object) -> str | None:
    """A thread title: a string (valid Unicode, no NUL) or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigurationError(f"title must be a string or None, got {type(value).__name__}")
    if "\x00" in value:
        raise ConfigurationError("title must not contain NUL characters")
    return check_unicode(value, "title", ConfigurationError)


def check_json_value(
    value: object,
    what: str,
    error: type[MastraMemoryError] = ConfigurationError,
    *,
    nul: bool = True,
) -> None:
    """A JSON value every backend stores and reads back: finite numbers, string keys, valid
    Unicode, nesting at most `MAX_DEPTH` deep (walked without recursion). ``nul=False``
    refuses NUL in strings (PostgreSQL's ``jsonb`` cannot hold it)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            check_unicode(item, what, error)
            if not nul and "\x00" in item:
                raise error(f"{what} holds a NUL character, which it cannot store")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise error(f"{what} holds {item!r}: only finite numbers can be stored")
        elif isinstance(item, dict):
            if depth > MAX_DEPTH:
                raise error(f"{what} is nested more than {MAX_DEPTH} levels deep")
            for key, inner in item.items():
                if not isinstance(key, str):
                    raise error(f"{what} has a key that is not a string: {key!r:.40}")
                stack.append((key, depth))
                stack.append((inner, depth + 1))
        elif isinstance(item, (list, tuple)):
            if depth > MAX_DEPTH:
                raise error(f"{what} is nested more than {MAX_DEPTH} levels deep")
            stack.extend((inner, depth + 1) for inner in item)
        elif item is not None and not isinstance(item, (bool, int)):
            raise error(f"{what} holds a {type(item).__name__}, which JSON cannot store")


def check_metadata(value: object, what: str = "metadata") -> dict[str, Any] | None:
    """Thread metadata: None or a dict of JSON values (see `check_json_value`)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigurationError(f"{what} must be a dict, got {type(value).__name__}")
    check_json_value(value, what, nul=False)
    return value


def check_time(
    value: object, what: str, error: type[MastraMemoryError] = InvalidMessageError
) -> datetime | None:
    """A timestamp to store (or to compare with): None (assign one / no bound) or a datetime
    between 1900 and 3000 (naive means UTC)."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        msg = f"{what} must be a datetime (or an ISO 8601 string in a file), got {value!r:.40}"
        raise error(msg)
    aware = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    try:
        inside = EARLIEST <= aware <= LATEST
    except OverflowError:  # an offset that moves it past datetime's own range
        inside = False
    if not inside:
        msg = f"{what} must lie between {EARLIEST:%Y} and {LATEST:%Y}, got {value.isoformat()}"
        raise error(msg)
    return value


def validated(model: type[Model], value: object, what: str) -> Model:
    """`value` as `model`: an instance as it is, a dict validated, None (or True: "on, with
    the defaults") the defaults; anything else a `ConfigurationError` naming `what`."""
    if isinstance(value, model):
        return value
    try:
        return model.model_validate({} if value is None or value is True else value)
    except ValidationError as exc:
        raise ConfigurationError(f"invalid {what}: {exc}") from exc
