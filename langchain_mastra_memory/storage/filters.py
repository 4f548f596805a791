"""LangGraph's filter semantics over JSON values (a store item's value, a thread's metadata).

Examples:
    >>> matches({"project": "x", "n": 3}, {"project": "x", "n": {"$gte": 2}})
    True
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: nested equality, and ``$eq $ne $gt $gte $lt $lte``."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_compare(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(matches(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {op!r} (use $eq $ne $gt $gte $lt $lte)")
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right}.get(op, left <= right)


def check_filter(wanted: Any, what: str = "filter") -> dict[str, Any]:
    """`wanted` if it is a filter `matches` understands; `ConfigurationError` if not."""
    if not isinstance(wanted, dict):
        raise ConfigurationError(f"{what} must be a dict, got {type(wanted).__name__}")

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key.startswith("$") and key not in OPERATORS:
                    msg = f"{what}: unsupported operator {key!r} (use {' '.join(OPERATORS)})"
                    raise ConfigurationError(msg)
                walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value)

    walk(wanted)
    return wanted
