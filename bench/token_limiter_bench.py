"""Benchmark: TokenLimiter against langchain_core's trim_messages on stored histories.

Stored threads of 1k, 10k and 100k messages (SQLite) are limited to 8,000 tokens. Timed, on the
same loaded messages, in one run:

- ``TokenLimiter`` with the counts stored beside each message (the normal path: loading a
  thread seeds the count cache);
- ``TokenLimiter`` with no cached count at all (every walked message tokenized);
- one tiktoken pass: every message's token string encoded once (the floor for any counter that
  looks at every message);
- ``trim_messages(strategy="last", max_tokens=8000)`` with a tiktoken counter (per message:
  tokens of role + text), as a LangChain user would write it.

    python bench/token_limiter_bench.py [--sizes 1000 10000 100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)

from langchain_mastra_memory import SQLiteStorage, TokenCounter, TokenLimiter
from langchain_mastra_memory.token_counting import clear_token_cache, message_token_string

LIMIT = 8_000
WORDS = [
    "memory",
    "agent",
    "thread",
    "recall",
    "token",
    "limit",
    "context",
    "window",
    "model",
    "tool",
    "result",
    "user",
    "assistant",
]


def make_messages(n: int, rng: random.Random, mix: str = "chat") -> list[BaseMessage]:
    """`n` messages: user/assistant turns ("chat"), or with a system message first and a tool
    call + result in every third exchange ("tools")."""
    out: list[BaseMessage] = (
        [SystemMessage("You are a helpful assistant.")] if mix == "tools" else []
    )
    i = 0
    while len(out) < n:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 60)))
        if mix == "tools" and i % 6 == 1:
            call = {"name": "lookup", "args": {"query": text[:40]}, "id": f"c{i}"}
            out += [AIMessage("", tool_calls=[call]), ToolMessage(text, tool_call_id=f"c{i}")]
        else:
            out.append(HumanMessage(f"{i}: {text}") if i % 2 == 0 else AIMessage(f"{i}: {text}"))
        i += 1
    return out[:n]


def best_of(func: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(n: int, messages: list[BaseMessage], load: float) -> dict[str, float]:
    """Time the four contenders on the same loaded messages."""
    encoding = TokenCounter().encoding
    limiter = TokenLimiter(LIMIT)
    repeat = 5 if n <= 10_000 else 3
    cached = best_of(lambda: limiter.invoke(messages), repeat)

    def uncached() -> None:
        clear_token_cache()
        limiter.invoke(messages)

    def one_pass() -> None:
        for m in messages:
            encoding.encode_ordinary(message_token_string(m)[0])

    def counter(msgs: list[BaseMessage]) -> int:
        return sum(len(encoding.encode_ordinary(m.type + str(m.content))) for m in msgs)

    def trim() -> None:
        trim_messages(messages, max_tokens=LIMIT, token_counter=counter, strategy="last")

    cold = best_of(uncached, repeat)
    full_pass = best_of(one_pass, 1 if n > 10_000 else 3)
    trimmed = best_of(trim, 1 if n > 10_000 else 2)
    return {
        "messages": n,
        "kept": len(limiter.invoke(messages)),
        "load_s": load,
        "limiter_cached_s": cached,
        "limiter_uncached_s": cold,
        "tiktoken_pass_s": full_pass,
        "trim_messages_s": trimmed,
        "speedup_cached": trimmed / cached,
        "speedup_uncached": trimmed / cold,
        "uncached_vs_pass": cold / full_pass,
    }


def run(sizes: list[int], mix: str) -> list[dict[str, float]]:
    rng = random.Random(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        storage = SQLiteStorage(Path(tmp) / "bench.db")
        for n in sizes:
            thread = f"t{n}"
            storage.create_thread(thread_id=thread, resource_id="bench")
            batch = make_messages(n, rng, mix)
            for start in range(0, n, 5_000):
                chunk = batch[start : start + 5_000]
                storage.save_messages(chunk, thread_id=thread, resource_id="bench")
            clear_token_cache()
            t0 = time.perf_counter()
            messages = [s.message for s in storage.list_messages(thread)]  # seeds stored counts
            rows.append(measure(n, messages, time.perf_counter() - t0))
            print_row(rows[-1])
    return rows


def print_row(r: dict[str, float]) -> None:
    print(
        f"| {r['messages']:>7,} | {r['kept']:>4} | {r['limiter_cached_s'] * 1e3:9.2f} ms "
        f"| {r['limiter_uncached_s'] * 1e3:9.2f} ms | {r['tiktoken_pass_s'] * 1e3:9.1f} ms "
        f"| {r['trim_messages_s'] * 1e3:10.1f} ms | {r['speedup_cached']:8.0f}x "
        f"| {r['speedup_uncached']:6.0f}x |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--mix", choices=["chat", "tools"], default="chat")
    args = parser.parse_args()
    print(f"limit {LIMIT} tokens, o200k_base, {args.mix}; times are the best of several runs")
    print(
        "| stored messages | kept | TokenLimiter (cached) | TokenLimiter (uncached) "
        "| one tiktoken pass | trim_messages | cached vs trim | uncached vs trim |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = run(args.sizes, args.mix)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
