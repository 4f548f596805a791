"""Benchmark: how much of each turn's model input a provider's prompt cache can serve.

Anthropic, OpenAI and Gemini cache by exact prefix: the part of a turn's input that starts
exactly as the previous turn's input did is read from cache (10% of the input price at
Anthropic, 25% at OpenAI); the rest is read anew. This replays real conversations (the LoCoMo
dev split, ``../shared/eval/locomo-dev/``) into one thread each, turn by turn: the context
memory assembles for each new message (`Memory.context`, what every integration shape sends),
then the turn saved. Per turn: the input's tokens (o200k) and the share of them equal to the
previous turn's input from its start (the longest common prefix). Steady state: the turns
after the thread holds twice the history window, when the window has had to move. Reported per
option set: input tokens p50, share p50 and p10, and a cost line per 100 turns at public list
prices (cached tokens at the cache-read price, the rest at the full one; nothing is cached
under the providers' 1,024-token minimum, OpenAI caches in 128-token steps). Two runs:
``--runs 2`` (the replay is deterministic; the second run checks it).

    python bench/prompt_cache.py [--messages 200] [--runs 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_data import DEFAULT_DATA, conversation_turns, turn_message
from results import save

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.messages import message_text
from langchain_mastra_memory.tokens.counting import TokenCounter

OPTION_SETS: dict[str, dict[str, Any]] = {
    "default (recall + working memory)": {
        "semantic_recall": True, "working_memory": {"enabled": True}},
    "Mastra's layout (recall in system, sliding window)": {
        "semantic_recall": True, "working_memory": {"enabled": True},
        "recall_placement": "system", "history_window": "sliding"},
    "last_messages: 20": {"last_messages": 20},
    "last_messages: 20 + recall": {"last_messages": 20, "semantic_recall": True},
    # Mastra's token budget, sized as the 20 to 29 messages above are (~38 tokens a message)
    "message_tokens: 1,100 (Mastra's budget)": {"message_tokens": {"max_tokens": 1100}},
    "message_tokens: 1,300, removing 650 (the block window's input size)": {
        "message_tokens": {"max_tokens": 1300, "at_max_remove_tokens": 650}
    },
    "message_tokens: 1,100, removing 550": {
        "message_tokens": {"max_tokens": 1100, "at_max_remove_tokens": 550}},
    "TokenLimiter-like sliding, last_messages: 20": {"last_messages": 20,
                                                      "history_window": "sliding"},
}  # fmt: skip
STEADY_AFTER = {  # messages, as last_messages
    "message_tokens: 1,100 (Mastra's budget)": 20,
    "message_tokens: 1,100, removing 550": 20,
    "message_tokens: 1,300, removing 650 (the block window's input size)": 20,
}
PRICES = (  # (provider and model, $ per million input tokens, $ per million cached tokens, step)
    ("Anthropic Claude Sonnet 4.5", 3.00, 0.30, 1),
    ("OpenAI GPT-4.1", 2.00, 0.50, 128),
)
MINIMUM_CACHED = 1024
ENCODING = TokenCounter("o200k_base").encoding  # offline: the BPE file from its package


def tokens(messages: Sequence[BaseMessage]) -> list[int]:
    """The input as a provider reads it, in order: each message's role, text and tool calls."""
    out: list[int] = []
    for message in messages:
        calls = getattr(message, "tool_calls", None)
        text = f"<{message.type}>{message_text(message)}{json.dumps(calls) if calls else ''}"
        out += ENCODING.encode(text)
    return out


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def conversation(path: Path, limit: int) -> list[list[BaseMessage]]:
    """The first `limit` messages of a conversation as turns: a run of the first speaker's
    messages (the new input), then the other's (the reply)."""
    data = json.loads(path.read_text())
    messages = [
        turn_message(t, data["speaker_a"]) for _n, _w, turns in conversation_turns(data)
        for t in turns
    ][:limit]  # fmt: skip
    turns: list[list[BaseMessage]] = []
    for message in messages:
        starts = isinstance(message, HumanMessage) and (
            not turns or isinstance(turns[-1][-1], AIMessage)
        )
        if starts or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def replay(turns: list[list[BaseMessage]], options: dict[str, Any], name: str) -> list[dict]:
    """Each turn's input tokens, shared prefix with the previous turn's, and stored count."""
    memory = Memory(storage=SQLiteStorage(":memory:"), options=options)
    memory.create_thread(thread_id=name, resource_id="user")
    previous: list[int] = []
    rows = []
    stored = 0
    for turn in turns:
        new = [m for m in turn if isinstance(m, HumanMessage)]
        sent = memory.context(new, thread_id=name, resource_id="user")
        now = tokens(sent)
        rows.append(
            {
                "tokens": len(now),
                "shared": common_prefix(previous, now),
                "stored": stored,
                "whole": bool(previous) and common_prefix(previous, now) == len(previous),
            }
        )
        previous = now
        memory.save_messages(turn, thread_id=name, resource_id="user")
        memory.flush()
        stored += len(turn)
    return rows


def cost_per_100(rows: list[dict], price: float, cached: float, step: int) -> tuple[float, float]:
    """Dollars per 100 turns: with the prompt cache, and without one."""
    with_cache = without = 0.0
    for row in rows:
        hit = row["shared"] if row["shared"] >= MINIMUM_CACHED else 0
        hit -= hit % step
        with_cache += (hit * cached + (row["tokens"] - hit) * price) / 1e6
        without += row["tokens"] * price / 1e6
    scale = 100 / max(len(rows), 1)
    return with_cache * scale, without * scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--only", help="run only the option sets whose label contains this")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the figures here (bench/results/prompt_cache.json: "
                        "the docs' plot, `plot_figures.py`)")  # fmt: skip
    args = parser.parse_args()
    files = sorted(args.data.glob("*.json"))
    if not files:
        sys.exit(f"no conversations in {args.data} (see ../shared/eval/README.md)")
    runs: list[dict[str, Any]] = []
    for run in range(1, args.runs + 1):
        runs.append({})
        print(f"run {run}: {len(files)} conversations, first {args.messages} messages each, "
              "one thread each")  # fmt: skip
        for label, options in OPTION_SETS.items():
            if args.only and args.only not in label:
                continue
            window = STEADY_AFTER.get(label, options.get("last_messages", 40))
            steady: list[dict] = []
            for file in files:
                rows = replay(conversation(file, args.messages), options, file.stem)
                steady += [r for r in rows if r["stored"] >= 2 * window]
            shares = sorted(r["shared"] / r["tokens"] for r in steady)
            p10 = shares[int(0.1 * (len(shares) - 1))]
            print(f"  {label}: {len(steady)} steady turns, input "
                  f"{statistics.median(r['tokens'] for r in steady):.0f} tokens p50, "
                  f"shared with the previous turn p50 {statistics.median(shares):.2f} "
                  f"p10 {p10:.2f}, the previous input kept whole in "
                  f"{sum(r['whole'] for r in steady) / len(steady):.0%} of turns")  # fmt: skip
            figures: dict[str, Any] = {
                "steady_turns": len(steady),
                "tokens_p50": statistics.median(r["tokens"] for r in steady),
                "shared_p50": statistics.median(shares),
                "shared_p10": p10,
                "kept_whole": sum(r["whole"] for r in steady) / len(steady),
                "dollars_per_100_turns": {},
            }
            for provider, price, cached, step in PRICES:
                with_cache, without = cost_per_100(steady, price, cached, step)
                print(f"    {provider}: ${with_cache:.3f} per 100 turns with the cache "
                      f"(${without:.3f} without)")  # fmt: skip
                figures["dollars_per_100_turns"][provider] = [with_cache, without]
            runs[-1][label] = figures
    if args.json is not None:
        setting = (f"{len(files)} LoCoMo dev conversations replayed, the first {args.messages} "
                   "messages each, steady state")  # fmt: skip
        save("prompt_cache", {"setting": setting, "runs": runs}, path=args.json)


if __name__ == "__main__":
    main()
