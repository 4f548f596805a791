"""LoCoMo (``../shared/eval/locomo-dev/``) as the benches read it: its sessions and turns,
a conversation saved into memory as the metric says, and the questions it asks. Shared by the
recall, QA and prompt-cache benches; it imports none of them.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_mastra_memory import Memory, MemoryStorage
from langchain_mastra_memory.recall.embedders import CachedEmbeddings

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo-dev"


def conversation_turns(data: dict) -> list[tuple[int, datetime | None, list[dict]]]:
    """(session number, time, turns) for every session that has turns."""
    sessions = []
    n = 1
    while f"session_{n}" in data or f"session_{n}_date_time" in data:
        turns = data.get(f"session_{n}") or []
        when = data.get(f"session_{n}_date_time")
        stamp = datetime.strptime(when, "%I:%M %p on %d %B, %Y") if when else None
        if turns:
            sessions.append((n, stamp, turns))
        n += 1
    return sessions


def turn_message(turn: dict, speaker_a: str) -> BaseMessage:
    text = turn["text"]
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    kind = HumanMessage if turn["speaker"] == speaker_a else AIMessage
    return kind(text, name=turn["speaker"])


def load_conversation(
    data: dict, resource: str, storage: MemoryStorage, embedder: CachedEmbeddings, top_k: int
) -> tuple[Memory, dict[str, str], list[str]]:
    """A conversation saved as the metric says (a resource, a thread per session, each turn a
    message at its session's time), its vectors written: the memory, each message id's
    dia_id, and the texts in order."""
    memory = Memory(storage=storage, embedder=embedder,
                    options={"semantic_recall": {"top_k": top_k, "message_range": 0}})  # fmt: skip
    dia_of: dict[str, str] = {}
    texts: list[str] = []
    for number, when, turns in conversation_turns(data):
        thread = f"session-{number}"
        memory.create_thread(resource_id=resource, thread_id=thread)
        messages = [turn_message(t, data["speaker_a"]) for t in turns]
        saved = memory.save_messages(
            messages, thread_id=thread, resource_id=resource,
            created_at=[when] * len(messages) if when else None,
        )  # fmt: skip
        for turn, message in zip(turns, saved, strict=True):
            dia_of[message.id or ""] = turn["dia_id"]
            texts.append(str(message.content))
    memory.flush()  # every vector written before the questions
    return memory, dia_of, texts


def questions_of(data: dict) -> list[dict]:
    """The questions the metric asks: categories 1-4, with evidence."""
    return [q for q in data["qa"] if q.get("category") in (1, 2, 3, 4) and q.get("evidence")]


def turns_and_questions(folder: Path = DEFAULT_DATA) -> tuple[list[tuple[str, bool]], list[str]]:
    """(text, is_user) of every turn of every conversation, and every question the metric
    asks (categories 1-4)."""
    turns: list[tuple[str, bool]] = []
    questions: list[str] = []
    for file in sorted(folder.glob("*.json")):
        data = json.loads(file.read_text())
        for _number, _when, session in conversation_turns(data):
            turns += [(t["text"], t["speaker"] == data["speaker_a"]) for t in session]
        questions += [q["question"] for q in data["qa"] if q.get("category") in (1, 2, 3, 4)]
    return turns, questions
