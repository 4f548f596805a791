"""Benchmark (offline, deterministic): context tokens per turn over a long conversation.

A 2,000-turn conversation (each turn a user message naming a new fact and an assistant reply,
~30 tokens each) goes through `memory.wrap(model)` with a scripted main model, under:

- **last-N**: the newest 40 messages (Mastra's default history);
- **TokenLimiter**: the whole history limited to 8,000 tokens;
- **observational memory**: a scripted Observer that compresses what it reads to one short
  line per user fact (about 1/4 of the tokens) and a Reflector that keeps every fact in a
  terser form (ten to a line), at Mastra's thresholds (30,000 / 40,000) and at small ones
  (3,000 / 4,000), each with buffering (Mastra's default: a run every fifth of the threshold,
  four fifths activated at it) and without.

Printed per configuration: context tokens sent to the main model (p50, p95, max, counted by our
`TokenCounter`), and the share of the conversation's facts present in the last turn's context
(as raw messages or as observations) — what each configuration still knows at the end — and
the Observer and Reflector calls made.
Observation runs are waited for after each turn (`memory.flush()`), so runs are repeatable.

    python bench/context_bench.py [--turns 2000]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage

from langchain_mastra_memory import Memory, SQLiteStorage, TokenCounter, TokenLimiter
from langchain_mastra_memory.observational.prompts import REFLECTOR_INSTRUCTIONS
from langchain_mastra_memory.testing import strict_model


class Compressing(FakeListChatModel):
    """Observer: one line per fact it reads. Reflector: every fact kept, ten to a line in a
    terser form (so a second reflection of the same log cannot shorten it, and is refused)."""

    responses: list = ["unused"]  # noqa: RUF012
    calls: int = 0

    def _call(self, messages, *args, **kwargs) -> str:
        self.calls += 1
        prompt = messages[1].content
        if messages[0].content == REFLECTOR_INSTRUCTIONS:
            facts = re.findall(r"\bf(\d+)=(\w+)", prompt)
            terse = [f"f{n}={value}" for n, value in facts]
            lines = [", ".join(terse[i : i + 10]) for i in range(0, len(terse), 10)]
            return "Date: 2026-11-22\n" + "\n".join(f"- [high] {line}" for line in lines)
        new = prompt.split("<new-messages>", 1)[1]
        said = "\n".join(line for line in new.splitlines() if "user] " in line)
        facts = re.findall(r"fact (\d+) is (\w+)", said)
        lines = [f"- [high] f{n}={value}" for n, value in facts]
        return "Date: 2026-11-22\n" + "\n".join(lines or ["- [low] small talk"])


def user_text(i: int) -> str:
    return f"Turn {i}: please remember that fact {i} is v{i * 7919 % 100000}, thanks a lot."


def run(name: str, options: dict, processors: list, turns: int, tmp: Path) -> dict:
    om = options.get("observational_memory", {}).get("model")
    memory = Memory(
        storage=SQLiteStorage(tmp / f"{re.sub(r'[^a-z0-9]+', '_', name.lower())}.db"),
        options=options,
        processors=processors,
    )
    model = strict_model(*[AIMessage(f"Noted, fact {i} is stored.") for i in range(turns)])
    chat = memory.wrap(model)
    counter = TokenCounter()
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    sizes = []
    start = time.perf_counter()
    for i in range(turns):
        chat.invoke(user_text(i), config)
        memory.flush()
        sizes.append(counter.count_all(model.seen[-1]))
    elapsed = time.perf_counter() - start
    last = " ".join(str(m.content) for m in model.seen[-1])
    known = sum(
        1 for i in range(turns - 1) if f"fact {i} is " in last or re.search(rf"\bf{i}=v", last)
    )
    return {
        "name": name,
        "p50": np.percentile(sizes, 50),
        "p95": np.percentile(sizes, 95),
        "max": max(sizes),
        "known": known / max(1, turns - 1),
        "seconds": elapsed,
        "calls": om.calls if om is not None else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    args = parser.parse_args()
    configs: list[tuple[str, dict, list]] = [
        ("last-N (40)", {"last_messages": 40}, []),
        ("TokenLimiter (8,000)", {"last_messages": 100_000}, [TokenLimiter(8_000)]),
    ]
    for thresholds in ((30_000, 40_000), (3_000, 4_000)):
        for buffering in (0.2, None):
            label = "buffered" if buffering else "no buffering"
            option = {
                "model": Compressing(),
                "message_tokens": thresholds[0],
                "observation_tokens": thresholds[1],
                "buffer_tokens": buffering,
            }
            name = f"observational ({thresholds[0]:,} / {thresholds[1]:,}, {label})"
            configs.append((name, {"observational_memory": option}, []))
    print(f"context tokens per turn over {args.turns:,} turns (offline, scripted models)")
    print(
        "| configuration | p50 | p95 | max | facts in the last context | model calls | run time |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, options, processors in configs:
            r = run(name, options, processors, args.turns, Path(tmp))
            print(
                f"| {r['name']} | {r['p50']:,.0f} | {r['p95']:,.0f} | {r['max']:,.0f} | "
                f"{r['known']:.1%} | {r['calls']} | {r['seconds']:.0f} s |",
                flush=True,
            )


if __name__ == "__main__":
    main()
