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
import gc
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

from langchain_mastra_memory import MessageList, SQLiteStorage, TokenCounter, TokenLimiter
from langchain_mastra_memory.tokens.counting import clear_token_cache, message_token_string

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


def timed(func: Callable[[], object]) -> float:
    """One call's time, after a collection: neither side pays for the other's garbage (at
    100k messages a full collection takes ~100 ms and lands in whichever call allocates)."""
    gc.collect()
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def interleaved(sides: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """Run the sides in turn, `repeat` rounds, alternating which goes first."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for round_ in range(repeat):
        for name in names if round_ % 2 == 0 else reversed(names):
            times[name].append(timed(sides[name]))
    return times


def p50_p95(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def measure(n: int, messages: list[BaseMessage], load: float) -> dict[str, float]:
    """Time the contenders on the same loaded messages, interleaved.

    The stored-count pair (our limiter, `trim_messages`) runs first; the uncached pair (our
    limiter after clearing the process-wide count cache, one tiktoken pass) after it, since
    clearing the cache would turn the first pair's runs into uncached ones.
    """
    encoding = TokenCounter().encoding
    limiter = TokenLimiter(LIMIT)
    repeat = 21 if n <= 10_000 else 11

    def counter(msgs: list[BaseMessage]) -> int:
        return sum(len(encoding.encode_ordinary(m.type + str(m.content))) for m in msgs)

    def trim() -> None:
        trim_messages(messages, max_tokens=LIMIT, token_counter=counter, strategy="last")

    def uncached() -> None:
        clear_token_cache()
        limiter.invoke(messages)

    def one_pass() -> None:
        for m in messages:
            encoding.encode_ordinary(message_token_string(m)[0])

    warm = interleaved({"limiter": lambda: limiter.invoke(messages), "trim": trim}, repeat)
    cold = interleaved({"uncached": uncached, "pass": one_pass}, max(3, repeat // 3))
    cached_p50, cached_p95 = p50_p95(warm["limiter"])
    trim_p50, trim_p95 = p50_p95(warm["trim"])
    cold_p50, cold_p95 = p50_p95(cold["uncached"])
    pass_p50, _ = p50_p95(cold["pass"])
    return {
        "messages": n,
        "kept": len(limiter.invoke(messages)),
        "load_s": load,
        "limiter_cached_p50_s": cached_p50,
        "limiter_cached_p95_s": cached_p95,
        "limiter_uncached_p50_s": cold_p50,
        "limiter_uncached_p95_s": cold_p95,
        "tiktoken_pass_p50_s": pass_p50,
        "trim_messages_p50_s": trim_p50,
        "trim_messages_p95_s": trim_p95,
        "speedup_cached": trim_p50 / cached_p50,
        "speedup_uncached": trim_p50 / cold_p50,
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
            # a stored history (as Memory.get_messages gives it): seeds the stored counts
            messages = MessageList(s.message for s in storage.list_messages(thread))
            rows.append(measure(n, messages, time.perf_counter() - t0))
            print_row(rows[-1])
    return rows


def print_row(r: dict[str, float]) -> None:
    def ms(key: str) -> str:
        return f"{r[key] * 1e3:.2f}"

    print(
        f"| {r['messages']:>7,} | {r['kept']:>4} "
        f"| {ms('limiter_cached_p50_s')} / {ms('limiter_cached_p95_s')} ms "
        f"| {ms('limiter_uncached_p50_s')} / {ms('limiter_uncached_p95_s')} ms "
        f"| {ms('tiktoken_pass_p50_s')} ms "
        f"| {ms('trim_messages_p50_s')} / {ms('trim_messages_p95_s')} ms "
        f"| {r['speedup_cached']:.0f}x | {r['speedup_uncached']:.0f}x |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--mix", choices=["chat", "tools"], default="chat")
    args = parser.parse_args()
    print(f"limit {LIMIT} tokens, o200k_base, {args.mix}; p50 / p95, sides interleaved")
    print(
        "| stored messages | kept | TokenLimiter (stored counts) | TokenLimiter (uncached) "
        "| one tiktoken pass | trim_messages | stored vs trim | uncached vs trim |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = run(args.sizes, args.mix)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
