"""Question answering on LoCoMo with an LLM judge, per memory configuration.

What recall_eval.py measures (is the evidence among the recalled messages?) is a proxy; this
measures the end: does a model answer the question right from the context memory gives it?
For each conversation of ``../shared/eval/locomo-dev/`` (one resource; one thread per session,
saved in order with the session's time; the first speaker is the user), each configuration
builds the context for every question of categories 1-4 as the next turn of the latest
session (`memory.context`, nothing saved), a model answers from it, and a judge model grades
the answer against LoCoMo's gold answer. Configurations:

- ``last-N``: the latest session's last 40 messages;
- ``recall: vector`` / ``recall: keyword`` / ``recall: hybrid``: last-N plus semantic recall
  over the whole resource in that mode (top 4 hits, one neighbour each side);
- ``working memory``: last-N plus a working memory the memory model updated after each
  session (it reads the session and rewrites the document; `update_working_memory` validates
  it);
- ``observational``: resource-scoped observational memory with the memory model as Observer
  and Reflector. A LoCoMo conversation is 16k-26k tokens, under Mastra's 30,000-token
  threshold, so the thresholds are scaled down (``--om-tokens``, default 3,000 / 4,000) for the
  log to replace history at all;
- ``all``: hybrid recall, working memory and observational memory together.

Printed: accuracy per category (multi-hop, temporal, open-domain, single-hop) and overall, the
context tokens sent per question (p50 / p95, our `TokenCounter`), and the memory model's calls.
It needs a model: it runs only when ``OPENAI_API_KEY`` is set (``OPENAI_BASE_URL`` is honoured
for a compatible server) and otherwise says so and exits 0.

    OPENAI_API_KEY=... python bench/qa_eval.py [--conversations 5] [--questions 0]
        [--configs last-N "recall: hybrid" ...] [--model gpt-4o-mini] [--judge-model gpt-4o-mini]
        [--memory-model gpt-4o-mini] [--om-tokens 3000 4000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import DEFAULT_DATA, conversation_turns, turn_message

from langchain_mastra_memory import Memory, SQLiteStorage, TokenCounter

CONFIGS = (
    "last-N",
    "recall: vector",
    "recall: keyword",
    "recall: hybrid",
    "working memory",
    "observational",
    "all",
)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
LAST_MESSAGES = 40

ANSWER_INSTRUCTIONS = (
    "You are answering a question about a long conversation between {a} and {b}, using only "
    "what your memory shows you below (earlier messages, recalled messages, notes, "
    "observations). Answer in a short phrase; give dates as dates. If your memory does not "
    "hold the answer, give your best guess from it."
)
JUDGE_INSTRUCTIONS = (
    "You grade answers to questions about a conversation. You get the question, the gold "
    "answer and a response. Reply CORRECT when the response gives what the gold answer says "
    "(a date in another format, a paraphrase, or more detail that includes it all count), "
    "otherwise WRONG. Reply with the one word."
)
WORKING_MEMORY_INSTRUCTIONS = (
    "You keep the working memory of an assistant that talks with {a} and {b}: a short "
    "Markdown document of what matters about each of them (facts about themselves, people, "
    "plans, events with their dates, preferences). You get the current document and a new "
    "session of their conversation with its date. Reply with the whole updated document only, "
    "under 1,500 words; keep what still holds, add what is new, resolve relative dates."
)
TEMPLATE = "# {a}\n- \n\n# {b}\n- \n"


@dataclass
class Score:
    """One configuration's results."""

    correct: dict[int, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    asked: dict[int, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    tokens: list[int] = field(default_factory=list)
    memory_calls: int = 0

    def accuracy(self, category: int | None = None) -> float:
        if category is None:
            return sum(self.correct.values()) / max(1, sum(self.asked.values()))
        return self.correct[category] / max(1, self.asked[category])


class CallCounter(BaseCallbackHandler):
    """Counts the memory model's calls (Observer, Reflector, working-memory updates)."""

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1


def memory_options(
    name: str, memory_model: BaseChatModel, om_tokens: Sequence[int], speakers: tuple[str, str]
) -> dict:
    """The `Memory` options of a configuration, for a conversation between `speakers`."""
    a, b = speakers
    options: dict[str, Any] = {"last_messages": LAST_MESSAGES, "semantic_recall": False}
    if name.startswith("recall: ") or name == "all":
        mode = name.removeprefix("recall: ") if name != "all" else "hybrid"
        options["semantic_recall"] = {"mode": mode, "scope": "resource"}
    if name in ("working memory", "all"):
        options["working_memory"] = {"enabled": True, "template": TEMPLATE.format(a=a, b=b)}
    if name in ("observational", "all"):
        options["observational_memory"] = {
            "model": memory_model,
            "scope": "resource",
            "message_tokens": om_tokens[0],
            "observation_tokens": om_tokens[1],
        }
    return options


def transcript(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(f"{m.name}: {m.content}" for m in messages)


def ingest(
    memory: Memory, data: dict, resource: str, memory_model: BaseChatModel, *, working: bool
) -> str:
    """Save the conversation (one thread per session, in order); the latest thread's id."""
    a, b = data["speaker_a"], data["speaker_b"]
    thread = ""
    for number, when, turns in conversation_turns(data):
        thread = f"session-{number}"
        messages = [turn_message(t, a) for t in turns]
        memory.create_thread(resource_id=resource, thread_id=thread)
        memory.save_messages(
            messages,
            thread_id=thread,
            resource_id=resource,
            created_at=[when] * len(messages) if when else None,
        )
        memory.flush()  # observations land in session order: repeatable
        if working:
            current = memory.get_working_memory(resource_id=resource) or TEMPLATE.format(a=a, b=b)
            reply = memory_model.invoke(
                [
                    SystemMessage(WORKING_MEMORY_INSTRUCTIONS.format(a=a, b=b)),
                    HumanMessage(
                        f"Current document:\n{current}\n\nSession {number}"
                        f"{f' ({when:%d %B %Y})' if when else ''}:\n{transcript(messages)}"
                    ),
                ]
            )
            try:
                memory.update_working_memory(str(reply.content), resource_id=resource)
            except Exception as exc:  # refused (too long, say): the old document stays
                print(f"  working memory update refused: {exc}", file=sys.stderr)
    return thread


def question_messages(
    memory: Memory, data: dict, question: str, *, thread: str, resource: str
) -> list[BaseMessage]:
    """What the answering model gets: the instructions and memory's context for the
    question as the next turn of the latest session (one leading system message)."""
    context = memory.context([HumanMessage(question)], thread_id=thread, resource_id=resource)
    instructions = ANSWER_INSTRUCTIONS.format(a=data["speaker_a"], b=data["speaker_b"])
    if context and isinstance(context[0], SystemMessage):
        merged = SystemMessage(f"{instructions}\n\n{context[0].content}")
        return [merged, *context[1:]]
    return [SystemMessage(instructions), *context]


def judged_correct(reply: BaseMessage) -> bool:
    words = str(reply.content).strip().upper().split()
    return bool(words) and words[0].strip(".:*") == "CORRECT"


def evaluate(
    files: Sequence[Path],
    configs: Sequence[str],
    *,
    answer_model: BaseChatModel,
    judge_model: BaseChatModel,
    memory_model: Callable[[], BaseChatModel],  # a fresh one per run: its calls are counted
    om_tokens: Sequence[int] = (3_000, 4_000),
    questions: int = 0,
    concurrency: int = 8,
) -> dict[str, Score]:
    """Scores per configuration (`memory_model()` makes the memory model for one run)."""
    counter = TokenCounter()
    scores = {name: Score() for name in configs}
    run = {"max_concurrency": concurrency}
    for file in files:
        data = json.loads(file.read_text())
        qas = [q for q in data["qa"] if q.get("category") in CATEGORIES and "answer" in q]
        qas = qas[:questions] if questions else qas
        for name in configs:
            started = time.perf_counter()
            calls = CallCounter()
            model = memory_model()
            model.callbacks = [calls]
            speakers = (data["speaker_a"], data["speaker_b"])
            options = memory_options(name, model, om_tokens, speakers)
            memory = Memory(storage=SQLiteStorage(":memory:"), options=options)
            thread = ingest(memory, data, file.stem, model, working="working_memory" in options)
            prompts = [
                question_messages(memory, data, q["question"], thread=thread, resource=file.stem)
                for q in qas
            ]
            replies = answer_model.batch(prompts, config=run)
            verdicts = judge_model.batch(
                [
                    [
                        SystemMessage(JUDGE_INSTRUCTIONS),
                        HumanMessage(
                            f"Question: {q['question']}\nGold answer: {q['answer']}\n"
                            f"Response: {reply.content}"
                        ),
                    ]
                    for q, reply in zip(qas, replies, strict=True)
                ],
                config=run,
            )
            score = scores[name]
            for q, prompt, verdict in zip(qas, prompts, verdicts, strict=True):
                score.asked[q["category"]] += 1
                score.correct[q["category"]] += judged_correct(verdict)
                score.tokens.append(counter.count_all(prompt))
            score.memory_calls += calls.calls
            print(
                f"  {file.name} {name}: {len(qas)} questions, "
                f"{time.perf_counter() - started:.0f} s",
                file=sys.stderr,
            )
    return scores


def table(scores: dict[str, Score]) -> str:
    head = " | ".join(CATEGORIES.values())
    lines = [
        f"| configuration | {head} | all | context tokens p50 / p95 | memory model calls |",
        "|---|" + "---:|" * (len(CATEGORIES) + 3),
    ]
    for name, s in scores.items():
        cells = " | ".join(f"{s.accuracy(c):.3f}" for c in CATEGORIES)
        tokens = (
            f"{np.percentile(s.tokens, 50):,.0f} / {np.percentile(s.tokens, 95):,.0f}"
            if s.tokens
            else "-"
        )
        lines.append(f"| {name} | {cells} | {s.accuracy():.3f} | {tokens} | {s.memory_calls} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", type=int, default=0, help="0: all")
    parser.add_argument("--questions", type=int, default=0, help="per conversation; 0: all")
    parser.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(CONFIGS))
    parser.add_argument("--model", default="gpt-4o-mini", help="answers")
    parser.add_argument("--judge-model", default="gpt-4o-mini")
    parser.add_argument("--memory-model", default="gpt-4o-mini", help="Observer, Reflector, WM")
    parser.add_argument("--om-tokens", type=int, nargs=2, default=[3_000, 4_000])
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    if not os.environ.get("OPENAI_API_KEY"):
        print(
            "qa_eval: OPENAI_API_KEY is not set, so there is no model to answer and judge; "
            "nothing measured (set it, and OPENAI_BASE_URL for a compatible server, to run)."
        )
        return 0
    files = sorted(args.data.glob("*.json"))
    if not files:
        print(f"qa_eval: no conversations in {args.data} (see ../shared/eval/README.md)")
        return 0
    files = files[: args.conversations] if args.conversations else files
    from langchain_openai import ChatOpenAI

    def chat(model: str) -> BaseChatModel:
        return ChatOpenAI(model=model, temperature=0, max_retries=6)

    scores = evaluate(
        files, args.configs, answer_model=chat(args.model), judge_model=chat(args.judge_model),
        memory_model=lambda: chat(args.memory_model), om_tokens=args.om_tokens,
        questions=args.questions, concurrency=args.concurrency,
    )  # fmt: skip
    asked = sum(next(iter(scores.values())).asked.values())
    print(
        f"LoCoMo QA ({args.data.name}, {len(files)} conversations, {asked} questions), "
        f"{time.strftime('%F')}; answers {args.model}, judge {args.judge_model}, memory "
        f"model {args.memory_model}, observational {args.om_tokens[0]:,} / "
        f"{args.om_tokens[1]:,} tokens"
    )
    print(table(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
