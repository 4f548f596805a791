"""PostgreSQL keyword search: BM25 over the GIN index, a resource's own messages only.

``ts_rank`` has no idea how rare a word is, and ranking every match of a common word costs time
proportional to the history. So, as SQLite's FTS5 search does:

- the words are weighed by BM25 (idf from the table's statistics: ``pg_stats`` keeps the
  frequency of the most common lexemes of ``tsv``; a lexeme not among them — names, places,
  the words that tell messages apart — has its messages counted through the GIN index, capped
  and cached, as FTS5 knows each word's count; each message's length normalises, a word counts
  once per message);
- the rarest words are kept while the messages they match stay within a budget (the rarest
  always): a very common word adds little to the ranking and much to the cost;
- the resource's owner lexeme (``o`` + md5 of its id, in ``tsv`` of its user and assistant
  messages) is ANDed into the index search, so another resource's matches are never read — except
  for a resource holding most of the messages, where the lexeme would select nearly everything
  and the ``resource_id`` filter is cheaper.

Statistics are read once a minute per storage (a cached ``pg_stats`` row; no statistics yet, as
in a table too young to be analysed, means no word is known to be common).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..keywords import query_words

STATS_TTL = 60.0  # seconds the table's statistics are trusted
MATCH_BUDGET = 1_000  # messages of the resource the kept words may match (estimated; as SQLite)
K1, B = 1.2, 0.75  # BM25
LEXEME_BYTES = 14.0  # a tsvector entry: its header, a short lexeme, a position
DOMINANT_SHARE = 0.5  # a resource holding this share of the messages searches without its token
RARE_COUNT_CAP = 5_000  # a rare lexeme's messages are counted up to this many
RARE_COUNTS_KEPT = 50_000  # cached counts (cleared when full)


def owner_lexeme(resource_id: str) -> str:
    """The lexeme standing for `resource_id` in ``tsv`` (see the schema's migration 7)."""
    return "o" + hashlib.md5(resource_id.encode("utf-8", "surrogatepass")).hexdigest()


def tsquery_literal(lexemes: list[str], operator: str = "|") -> str:
    """A tsquery OR-ing (or joining by `operator`) `lexemes`, each quoted (no tsquery syntax
    in them is interpreted)."""
    return f" {operator} ".join(
        "'" + x.replace("\\", "\\\\").replace("'", "''") + "'" for x in lexemes
    )


@dataclass
class TextStats:
    """What ``pg_stats`` says of ``memory_messages``: rows, the common lexemes' frequencies,
    the common resources' shares and the mean message length in lexemes."""

    rows: float = 0.0
    lexemes: dict[str, float] = field(default_factory=dict)
    rare: float = 0.0  # frequency below which a lexeme is not listed
    resources: dict[str, float] = field(default_factory=dict)
    other: float = 1.0  # the share of a resource not listed (1: no statistics yet)
    mean_length: float = 12.0
    read_at: float = -math.inf


class PostgresText:
    """Keyword search for one `PostgresStorage`: statistics cached, stems cached, SQL built."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self.stats = TextStats()
        self._stems: dict[str, list[str]] = {}
        self._counts: dict[tuple[str, str | None], tuple[float, int]] = {}  # (read at, count)
        self._lock = threading.Lock()

    def _refresh(self, conn: Any) -> TextStats:
        if time.monotonic() - self.stats.read_at < STATS_TTL:
            return self.stats
        with self._lock:
            if time.monotonic() - self.stats.read_at < STATS_TTL:
                return self.stats
            stats = TextStats(read_at=time.monotonic())
            (rows,) = conn.execute(
                "SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = %s::regclass",
                (f'"{self.schema}".memory_messages',),
            ).fetchone()
            stats.rows = float(rows)
            for name, elems, elem_freqs, vals, val_freqs, width, distinct in conn.execute(
                "SELECT attname, most_common_elems::text::text[], most_common_elem_freqs, "
                "most_common_vals::text::text[], most_common_freqs, avg_width, n_distinct "
                "FROM pg_stats "
                "WHERE schemaname = %s AND tablename = 'memory_messages' "
                "AND attname IN ('tsv', 'resource_id')",
                (self.schema,),
            ).fetchall():
                if name == "tsv" and elems:
                    # the array ends with min, max and null frequency (PostgreSQL's layout)
                    stats.lexemes = dict(zip(elems, elem_freqs, strict=False))
                    stats.rare = (
                        float(elem_freqs[len(elems)]) if len(elem_freqs) > len(elems) else 0.0
                    )
                    stats.mean_length = max(1.0, ((width or 100) - 8) / LEXEME_BYTES)
                elif name == "resource_id":
                    stats.resources = dict(zip(vals or [], val_freqs or [], strict=False))
                    # n_distinct < 0 is a share of the rows; a resource not listed is rarer
                    # than the listed ones and no bigger than an even split
                    count = -distinct * rows if distinct is not None and distinct < 0 else distinct
                    even = 1.0 / count if count else 1.0
                    stats.other = min([even, *stats.resources.values()])
            self.stats = stats
            return stats

    def _lexemes(self, conn: Any, words: list[str]) -> list[str]:
        """The english stems of `words` (cached: the configuration does not change)."""
        todo = [w for w in words if w not in self._stems]
        if todo:
            for word, lexemes in conn.execute(
                "SELECT w, tsvector_to_array(to_tsvector('english', w)) "
                "FROM unnest(%s::text[]) AS w",
                (todo,),
            ).fetchall():
                if len(self._stems) > 50_000:
                    self._stems.clear()
                self._stems[word] = list(lexemes or [])
        return list(dict.fromkeys(x for w in words for x in self._stems.get(w, [])))

    def _rare_counts(
        self, conn: Any, lexemes: list[str], owner: str | None, cap: int
    ) -> dict[str, int]:
        """How many messages each of `lexemes` (not among ``pg_stats``' common ones) is in —
        of `owner`'s messages when given (its lexeme ANDed: the index intersects two short
        lists, no other resource's rows are read) — counted up to `cap`, cached `STATS_TTL`."""
        now = time.monotonic()
        known: dict[str, int] = {}
        for lexeme in lexemes:
            cached = self._counts.get((lexeme, owner))
            if cached is not None and now - cached[0] < STATS_TTL:
                known[lexeme] = cached[1]
        todo = [x for x in lexemes if x not in known]
        if todo:
            queries = [tsquery_literal([x] if owner is None else [x, owner], "&") for x in todo]
            counted = conn.execute(
                "SELECT (SELECT count(*) FROM (SELECT 1 FROM memory_messages "
                f"WHERE tsv @@ q LIMIT {int(cap)}) AS s) FROM unnest(%s::tsquery[]) AS q",
                (queries,),
            ).fetchall()
            if len(self._counts) > RARE_COUNTS_KEPT:
                self._counts.clear()
            for lexeme, (count,) in zip(todo, counted, strict=True):
                self._counts[(lexeme, owner)] = (now, int(count))
                known[lexeme] = int(count)
        return known

    def match(self, query: str, conn: Any, resource_id: str) -> tuple[str, tuple[Any, ...]] | None:
        """``SELECT m.id, m.thread_id, <bm25> AS score FROM memory_messages m WHERE ...`` for
        the query's kept words in `resource_id`'s messages, with its parameters; None when
        the query has no words."""
        words = query_words(query)
        if not words:
            return None
        lexemes = self._lexemes(conn, words)
        if not lexemes:
            return None
        stats = self._refresh(conn)
        rows = max(stats.rows, 1.0)
        share = stats.resources.get(resource_id, stats.other)
        # a listed lexeme's frequency, else its messages counted (rarer than every listed one;
        # with no statistics yet, every word)
        frequency = {x: f for x in lexemes if (f := stats.lexemes.get(x)) is not None}
        rare = [x for x in lexemes if x not in frequency]
        own = share < DOMINANT_SHARE  # the owner's lexeme narrows the index search
        if rare:  # counted among the resource's own messages (or all, for a dominant one)
            counts = self._rare_counts(
                conn, rare, owner_lexeme(resource_id) if own else None, RARE_COUNT_CAP
            )
            rows = max(rows, *counts.values())  # statistics older than the table's growth
            part = max(rows * share, *counts.values(), 1.0) if own else rows
            frequency.update({x: count / part for x, count in counts.items()})
        kept: list[str] = []
        spent = 0.0
        for lexeme in sorted(lexemes, key=frequency.__getitem__):
            cost = frequency[lexeme] * rows * max(share, 1.0 / rows)
            if kept and spent + cost > MATCH_BUDGET:
                break
            kept.append(lexeme)
            spent += cost
        weights = []
        params: list[Any] = []
        for lexeme in kept:
            matched = max(frequency[lexeme] * rows, 0.5)
            idf = math.log(1.0 + (rows - matched + 0.5) / (matched + 0.5))
            weights.append(
                f"CASE WHEN m.tsv @@ %s::tsquery THEN {idf:.6f}::float8 ELSE 0::float8 END"
            )
            params.append(tsquery_literal([lexeme]))
        norm = (
            f"{K1 + 1:.3f}::float8 / (1 + {K1:.3f}::float8 * ({1 - B:.3f}::float8 + "
            f"{B:.3f}::float8 * length(m.tsv) / {stats.mean_length:.3f}::float8))"
        )
        words_query = tsquery_literal(kept)
        if own:
            words_query = f"({words_query}) & {tsquery_literal([owner_lexeme(resource_id)])}"
        statement = (
            f"SELECT m.id, m.thread_id, ({' + '.join(weights)}) * {norm} AS score "
            "FROM memory_messages m WHERE m.tsv @@ %s::tsquery"
        )
        return statement, (*params, words_query)
