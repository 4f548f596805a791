"""Benchmark: memory's share of a deep agent's model calls under a model profile (issue 72).

A deep agent (deepagents' ``create_deep_agent``, its default tools and summarization) with a
scripted model whose profile says ``max_input_tokens`` (default 4,000), run for N turns with
``memory.middleware()`` and ``memory.checkpointer()`` (working memory and resource-scope
recall on, another thread to recall from), against the same agent without memory's
middleware. Each agent call is counted as deepagents counts it
(``count_tokens_approximately`` with the tool schemas); the run prints, per side, the calls
over deepagents' input budget (95% of the profile less output tokens), the max and the p50.
Deterministic (a scripted model): a second run prints the same figures.

    python bench/deep_agent_budget.py [--turns 45] [--max-input-tokens 4000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import warnings
from pathlib import Path

import deepagents
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.testing import strict_model


def run(turns: int, max_input: int, *, with_memory: bool, folder: Path) -> list[int]:
    """The token count of each agent call (not deepagents' summary calls)."""
    memory = Memory(
        storage=SQLiteStorage(folder / "memory.db"),
        options={"semantic_recall": {"scope": "resource"}, "working_memory": {"enabled": True}},
    )
    memory.update_working_memory(
        "# User\n- Name: Alice\n- City: Lisbon\n" + "- Likes: long walks by the river\n" * 20,
        resource_id="alice",
    )
    memory.create_thread(thread_id="old", resource_id="alice")
    memory.save_messages(
        [HumanMessage(f"Old topic {i}: " + "garden soil compost " * 30) for i in range(10)],
        thread_id="old", resource_id="alice",
    )  # fmt: skip
    memory.flush(60)
    model = strict_model(*[AIMessage(f"Reply {i}: " + "fine " * 30) for i in range(turns * 3)])
    model.profile = {"max_input_tokens": max_input}
    agent = deepagents.create_deep_agent(
        model, tools=[], system_prompt="Be brief.", checkpointer=memory.checkpointer(),
        middleware=[memory.middleware()] if with_memory else [],
    )  # fmt: skip
    config = {"configurable": {"thread_id": "t", "user_id": "alice"}}
    for i in range(turns):
        question = f"Tell me about garden topic {i}. " + "compost soil " * 25
        agent.invoke({"messages": [HumanMessage(question)]}, config)
    calls = [s for s in model.seen if s and "Be brief." in str(s[0].content)]
    counts = [count_tokens_approximately(s, tools=model.tool_schemas) for s in calls]
    memory.flush(60)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=45)
    parser.add_argument("--max-input-tokens", type=int, default=4_000)
    args = parser.parse_args()
    budget = int(args.max_input_tokens * 0.95)
    warnings.filterwarnings("ignore")
    print(f"{args.turns} turns, profile max_input_tokens={args.max_input_tokens}, "
          f"deepagents' input budget {budget}")  # fmt: skip
    for with_memory in (True, False):
        with tempfile.TemporaryDirectory() as folder:  # each side its own memory
            counts = run(args.turns, args.max_input_tokens, with_memory=with_memory,
                         folder=Path(folder))  # fmt: skip
            over = sum(c > budget for c in counts)
            side = "with memory" if with_memory else "without   "
            print(f"{side}: {over} of {len(counts)} calls over the budget, "
                  f"max {max(counts)}, p50 {int(statistics.median(counts))}")  # fmt: skip


if __name__ == "__main__":
    main()
