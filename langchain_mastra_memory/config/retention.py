"""``options["retention"]``: an age per kind (Mastra's ``storage.retention``), validated.

`lifecycle.retention` applies it (``memory.prune()``).

Examples:
    >>> RetentionPolicy.parse({"messages": "90d", "checkpoints": {"keep": 20}}).messages
    datetime.timedelta(days=90)
    >>> parse_age("12h", "age")
    datetime.timedelta(seconds=43200)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..errors import ConfigurationError
from ..storage.validation import is_count

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
