"""A keyword query's words, as every backend searches them (SQLite's FTS5, PostgreSQL's
full-text index, the keyword side of hybrid recall).

Examples:
    >>> query_words("Where did I park the car?")
    ['park', 'car']
    >>> fts_query(["park", "car"])
    '"park" OR "car"'
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)


STOPWORDS = frozenset(
    """a about above after again all am an and any are as at be been before being below between
    both but by can could did do does doing don down during each few for from further had has
    have having he her here hers him his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours out over own same she should so
    some such than that the their theirs them then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would
    you your yours yourself s t d ll m re ve""".split()
)


def query_words(text: str, *, max_terms: int = 64) -> list[str]:
    """The distinct words of a keyword query, lower-cased, English stopwords dropped (a query of
    stopwords alone has none, on every backend: PostgreSQL's english index holds none)."""
    kept = [w for w in (w.lower() for w in _WORD.findall(text)) if w not in STOPWORDS]
    return list(dict.fromkeys(kept))[:max_terms]


def fts_query(words: list[str]) -> str:
    """A safe FTS5 query OR-ing `words` (from `query_words`), each quoted, so no FTS5 syntax is
    ever interpreted."""
    return " OR ".join(f'"{w}"' for w in words)
