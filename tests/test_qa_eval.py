"""bench/qa_eval.py end to end with scripted models on a small conversation in LoCoMo's
format: each configuration's context decides whether the answer can be found, the judge's
verdicts are counted per category, and without an API key the script says so and exits 0."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langchain_mastra_memory.observational.prompts import REFLECTOR_INSTRUCTIONS
from langchain_mastra_memory.provider_rules import provider_violations

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
import qa_eval


class Scripted(BaseChatModel):
    """Checks its input as providers do, then replies by `reply(messages)`."""

    kind: str

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        assert not provider_violations(messages), provider_violations(messages)
        text = getattr(self, f"_{self.kind}")(messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    @staticmethod
    def _answer(messages) -> str:  # everything memory showed it: the answer if it was there
        return " ".join(str(m.content) for m in messages)

    @staticmethod
    def _judge(messages) -> str:
        prompt = str(messages[-1].content)
        gold = re.search(r"Gold answer: (.*)\n", prompt).group(1)
        response = prompt.split("Response: ", 1)[1]
        return "CORRECT" if gold in response else "WRONG"

    @staticmethod
    def _memory(messages) -> str:  # Observer, Reflector and working memory: keep Alice's facts
        if messages[0].content == REFLECTOR_INSTRUCTIONS:
            return str(messages[1].content)
        prompt = str(messages[-1].content)
        facts = re.findall(r"Alice[:\]] (My [^\n]*)", prompt)
        lines = [f"- [high] Alice said: {f}" for f in facts] or ["- [low] small talk"]
        if prompt.startswith("Current document:"):  # working memory: the document, kept
            kept = re.findall(r"- \[high\] .*", prompt.split("Session", 1)[0])
            return "# Alice\n" + "\n".join([*kept, *lines])
        return "Date: 2026-01-01\n" + "\n".join(lines)


def conversation(path: Path) -> Path:
    sessions = {
        "session_1_date_time": "10:00 am on 1 January, 2026",
        "session_1": [
            {"speaker": "Alice", "dia_id": "D1:1", "text": "My dog is called Biscuit."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "What a lovely name."},
        ],
    }
    for n in range(2, 5):  # later sessions push the first out of the last 40 messages
        sessions[f"session_{n}_date_time"] = f"10:00 am on {n} January, 2026"
        sessions[f"session_{n}"] = [
            {
                "speaker": "Alice" if i % 2 == 0 else "Bob",
                "dia_id": f"D{n}:{i}",
                "text": f"Chatting about the weather, part {n}.{i}.",
            }
            for i in range(30)
        ]
    qa = [
        {"question": "What is the name of Alice's dog?", "answer": "Biscuit",
         "evidence": ["D1:1"], "category": 4},
        {"question": "What did Bob think of the name?", "answer": "lovely",
         "evidence": ["D1:2"], "category": 1},
        {"question": "Which adversarial question?", "answer": "none", "category": 5},
    ]  # fmt: skip
    data = {"speaker_a": "Alice", "speaker_b": "Bob", **sessions, "qa": qa}
    (path / "1.json").write_text(json.dumps(data))
    return path / "1.json"


def test_each_configuration_answers_from_what_memory_gives_it(tmp_path) -> None:
    scores = qa_eval.evaluate(
        [conversation(tmp_path)],
        qa_eval.CONFIGS,
        answer_model=Scripted(kind="answer"),
        judge_model=Scripted(kind="judge"),
        memory_model=lambda: Scripted(kind="memory"),
        om_tokens=(300, 400),
        concurrency=2,
    )
    assert set(scores) == set(qa_eval.CONFIGS)
    for score in scores.values():  # category 5 left out
        assert score.asked == {1: 1, 2: 0, 3: 0, 4: 1} and len(score.tokens) == 2
    assert scores["last-N"].accuracy() == 0.0  # session 1 is out of the last 40 messages
    assert scores["last-N"].memory_calls == 0
    for name in ("recall: keyword", "recall: hybrid", "all"):
        assert scores[name].accuracy() == 1.0, name  # both facts recalled
    for name in ("working memory", "observational"):  # the memory model kept Alice's fact
        assert scores[name].accuracy(4) == 1.0 and scores[name].accuracy(1) == 0.0, name
        assert scores[name].memory_calls > 0, name
    assert min(scores["observational"].tokens) < min(scores["last-N"].tokens) + 200
    table = qa_eval.table(scores)
    assert "| last-N | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 |" in table
    assert "| recall: hybrid | 1.000 |" in table


def test_without_an_api_key_it_says_so_and_exits_0(monkeypatch, capsys) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert qa_eval.main([]) == 0
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().out


@pytest.mark.parametrize("reply", ["CORRECT", "Correct.", "**CORRECT**"])
def test_the_judges_verdict_is_read_leniently(reply) -> None:
    assert qa_eval.judged_correct(AIMessage(reply))
    assert not qa_eval.judged_correct(AIMessage("WRONG: it says Rex"))
