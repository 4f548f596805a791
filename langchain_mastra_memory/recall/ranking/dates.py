"""Dates a recall query names: "on October 13, 2023", "in June", "in 2022".

A question that names a calendar date is about what was said then: the recall pool's messages
created on that date (within `DAY_SPAN` days of a named day, in a named month, in a named year)
are moved ahead of the others, each side keeping its order. A month named without a year
matches that month of any year; relative words ("last week") are not read (a query does not
know when it is asked). A month needs a day or a year beside it, or a word such as "in" before
it, so "May I ask..." names no date.

Examples:
    >>> named_date("When did Melanie go camping in June?")
    NamedDate(year=None, month=6, day=None)
    >>> named_date("What painting did she show on October 13, 2023?")
    NamedDate(year=2023, month=10, day=13)
    >>> named_date("May I ask what you cooked?") is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from ...storage.records import StoredMessage
from .fusion import RecallHit

CreatedAt = dict[str, datetime]  # message id -> when it was created
DAY_SPAN = 15  # a named day matches messages this many days either side
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_DATE = re.compile(
    r"(?:\b(?P<lead>in|on|of|during|since|by|until|before|after|early|mid|late|last|this)\s+)?"
    r"(?:\b(?P<day_before>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?)?"
    rf"\b(?P<month>{'|'.join(MONTHS)})\b"
    r"(?:\s+(?P<day_after>\d{1,2})(?:st|nd|rd|th)?\b)?"
    r"(?:,?\s+(?P<year>(?:19|20)\d\d)\b)?",
    re.IGNORECASE,
)
_YEAR = re.compile(
    r"\b(?:in|of|during|since|by|until|before|after)\s+(?P<year>(?:19|20)\d\d)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class NamedDate:
    """A calendar date a query names, as precise as it was named."""

    year: int | None
    month: int | None
    day: int | None

    def holds(self, moment: datetime) -> bool:
        """Whether a message created at `moment` was said on this date."""
        if self.year is not None and self.month is None:
            return moment.year == self.year
        year = self.year if self.year is not None else moment.year
        if self.day is None:
            return moment.month == self.month and moment.year == year
        try:
            named = date(year, self.month or 1, self.day)
        except ValueError:  # "February 30": no such day
            return False
        return abs((moment.date() - named).days) <= DAY_SPAN


def named_date(query: str) -> NamedDate | None:
    """The first calendar date `query` names (see the module docstring), or None."""
    for found in _MONTH_DATE.finditer(query):
        day = found.group("day_before") or found.group("day_after")
        year = found.group("year")
        if not (day or year or found.group("lead")):
            continue  # a bare month name: "May I ...", "march on"
        day_number = int(day) if day and 1 <= int(day) <= 31 else None
        month = MONTHS.index(found.group("month").lower()) + 1
        return NamedDate(int(year) if year else None, month, day_number)
    if found_year := _YEAR.search(query):
        return NamedDate(int(found_year.group("year")), None, None)
    return None


def dated_first(
    hits: Sequence[RecallHit], created: Mapping[str, datetime], when: NamedDate
) -> list[RecallHit]:
    """`hits` with those created on `when` first; each side keeps its order."""
    on = [h for h in hits if h.message_id in created and when.holds(created[h.message_id])]
    if not on:
        return list(hits)
    chosen = {h.message_id for h in on}
    return on + [h for h in hits if h.message_id not in chosen]


def created_dates(stored: Iterable[StoredMessage]) -> CreatedAt:
    """When each of these stored messages was created, by id."""
    return {s.message.id or "": s.created_at for s in stored}
