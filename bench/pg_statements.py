"""Benchmark: the statements and transactions memory adds to an agent turn on PostgreSQL,
counted from the server's own statement log (``log_statement = all``).

`create_agent` with a scripted model, `memory.middleware()` and `memory.checkpointer()`
(LangGraph's `PostgresSaver` in memory's database), semantic recall on (pgvector), against the
same turns on the bare `PostgresSaver` alone. Each side runs `--warmup` turns, then `--turns`
counted turns on a thread of its own; memory's embedding backlog is drained after each turn, so
what it writes behind a turn is counted with that turn. A ``SELECT`` naming each phase marks
the log; statements (simple and extended protocol) and ``BEGIN`` blocks are counted between
the marks, per turn.

    python bench/pg_statements.py [--turns 20] [--warmup 4] [--show 15]
"""

from __future__ import annotations

import argparse
import collections
import re

from langchain_mastra_memory.testing import (
    agent_turn_statements,
    throwaway_postgres,
    transaction_blocks,
)


def shape(statement: str) -> str:
    """A statement's first words, for the table of what is sent."""
    words = re.sub(r"\s+", " ", statement).split(" ")
    return " ".join(words[:9])[:100]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--show", type=int, default=15, help="the most frequent statements")
    parser.add_argument("--trace", action="store_true", help="print one turn's statements")
    args = parser.parse_args()
    dsn = throwaway_postgres(log_statements=True)
    counted = {
        side: agent_turn_statements(dsn, side, warmup=args.warmup, turns=args.turns)
        for side in ("bare", "memory")
    }
    per_turn = {
        side: (len(lines) / args.turns, transaction_blocks(lines) / args.turns)
        for side, lines in counted.items()
    }
    (bare_n, bare_b), (mem_n, mem_b) = per_turn["bare"], per_turn["memory"]
    print("| side | statements a turn | BEGIN a turn |\n|---|---:|---:|")
    print(f"| bare PostgresSaver | {bare_n:.1f} | {bare_b:.1f} |")
    print(f"| memory (middleware + checkpointer + recall) | {mem_n:.1f} | {mem_b:.1f} |")
    print(f"| **memory adds** | **{mem_n - bare_n:.1f}** | **{mem_b - bare_b:.1f}** |\n")
    common = collections.Counter(shape(s) for s in counted["memory"]).most_common(args.show)
    print("memory's most frequent statements (a turn):")
    for text, count in common:
        print(f"  {count / args.turns:5.1f}  {text}")
    if args.trace:
        last = len(counted["memory"]) // args.turns
        print("\none turn (the last), in order:")
        for statement in counted["memory"][-last:]:
            print("   ", shape(statement))


if __name__ == "__main__":
    main()
