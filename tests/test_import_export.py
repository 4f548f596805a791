"""Import and export as an adversarial user would drive them, on every backend.

Import is all-or-nothing (a bad line anywhere leaves the database as it was, no thread made),
reports every bad line with its number, is idempotent (lines without ids get derived ids), and
refuses lines of another resource; export → import → export is byte-identical, and an export
that fails leaves an existing file untouched.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from typer.testing import CliRunner

from langchain_mastra_memory import (
    ConfigurationError,
    InvalidMessageError,
    Memory,
    MemoryStorage,
    ResourceMismatchError,
    SQLiteStorage,
    ThreadNotFoundError,
)
from langchain_mastra_memory.cli import app
from langchain_mastra_memory.threads.transfer import (
    aimport_lines,
    export_thread,
    export_to_file,
    import_lines,
)

LINES = [
    json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"})
    for i in range(12)
]


@pytest.fixture
def memory(storage: MemoryStorage) -> Memory:
    return Memory(storage=storage, options={"semantic_recall": False})


def canary(memory: Memory) -> list:
    """A thread that must never change, whatever an import does."""
    memory.create_thread(thread_id="canary", resource_id="keeper", metadata={"k": 1})
    memory.save_messages(
        [json_message("keep me")], thread_id="canary", resource_id="keeper"
    )  # fmt: skip
    return snapshot(memory, "canary")


def json_message(text: str):
    from langchain_core.messages import HumanMessage

    return HumanMessage(text)


def snapshot(memory: Memory, thread_id: str) -> list:
    thread = memory.storage.get_thread(thread_id)
    stored = memory.storage.list_messages(thread_id) if thread else []
    return [thread, [(s.message, s.created_at) for s in stored]]


def exported(memory: Memory, thread_id: str) -> str:
    out = io.StringIO()
    export_thread(memory, thread_id, out)
    return out.getvalue()


def test_export_import_export_is_byte_identical(memory: Memory, tmp_path: Path) -> None:
    memory.create_thread(
        thread_id="trip", resource_id="alice", title="Travel plans",
        metadata={"topic": "travel", "tags": ["lisbon", "spring"], "score": 0.5},
    )  # fmt: skip
    import_lines(memory, LINES[:6], thread_id="trip", resource_id="alice")
    first = exported(memory, "trip")
    other = Memory(storage=SQLiteStorage(tmp_path / "copy.db"), options={"semantic_recall": False})
    assert import_lines(other, first.splitlines()) == 6
    assert exported(other, "trip") == first
    thread = other.storage.get_thread("trip")
    assert thread is not None
    assert thread.title == "Travel plans"
    assert thread.metadata == {"topic": "travel", "tags": ["lisbon", "spring"], "score": 0.5}


@pytest.mark.parametrize("position", [0, 5, 11])
def test_a_bad_line_anywhere_imports_nothing(memory: Memory, position: int) -> None:
    kept = canary(memory)
    lines = list(LINES)
    lines[position] = '{"role": "robot", "content": "?"}'
    with pytest.raises(InvalidMessageError, match=f"line {position + 1}"):
        import_lines(memory, lines, thread_id="t", resource_id="alice")
    assert memory.storage.get_thread("t") is None  # no empty thread left behind
    assert snapshot(memory, "canary") == kept


def test_every_bad_line_is_reported_with_its_field(memory: Memory) -> None:
    lines = [
        LINES[0],
        '{"role": "user", "content": "x", "created_at": 12345}',
        '{"role": "user", "content": "x", "created_at": "9999-01-01T00:00:00+00:00"}',
        '{"role": "user", "content": "x", "title": {"not": "a string"}}',
        "not json at all",
        '{"role": "user", "content": "x", "thread_metadata": {"n": NaN}}',
        LINES[1][:-7],  # truncated mid-line
    ]
    with pytest.raises(InvalidMessageError) as info:
        import_lines(memory, lines, thread_id="t", resource_id="alice")
    report = str(info.value)
    for number, field in [
        (2, "created_at"),
        (3, "created_at"),
        (4, "title"),
        (6, "thread_metadata"),
    ]:
        assert f"line {number}: " in report and field in report
    assert "line 5: " in report and "line 7: " in report
    assert "line 1:" not in report
    assert memory.storage.get_thread("t") is None


def test_importing_the_same_file_twice_changes_nothing(memory: Memory) -> None:
    assert import_lines(memory, LINES, thread_id="t", resource_id="alice") == 12
    before = snapshot(memory, "t")
    assert import_lines(memory, LINES, thread_id="t", resource_id="alice") == 12
    after = snapshot(memory, "t")
    assert [m for m, _ in after[1]] == [m for m, _ in before[1]]
    assert len(after[1]) == 12
    # the same text at another position is another message, not a duplicate
    assert import_lines(memory, LINES[:1], thread_id="t2", resource_id="alice") == 1
    first_id = memory.get_messages(thread_id="t2")[0].id
    assert first_id != before[1][0][0].id  # ids are derived from the thread too
    assert len(memory.get_messages(thread_id="t")) == 12


def test_a_line_of_another_resource_is_refused(memory: Memory) -> None:
    kept = canary(memory)
    lines = [*LINES[:3], json.dumps({"role": "user", "content": "x", "resource_id": "mallory"})]
    with pytest.raises(InvalidMessageError, match="line 4: resource_id"):
        import_lines(memory, lines, thread_id="t", resource_id="alice")
    assert memory.storage.get_thread("t") is None
    assert snapshot(memory, "canary") == kept


def test_an_import_into_another_resources_thread_writes_nothing(memory: Memory) -> None:
    kept = canary(memory)
    with pytest.raises(ResourceMismatchError):
        import_lines(memory, LINES, thread_id="canary", resource_id="intruder")
    assert snapshot(memory, "canary") == kept


def test_a_failing_thread_rolls_back_the_threads_before_it(memory: Memory) -> None:
    canary(memory)
    lines = [
        *(json.dumps({**json.loads(line), "thread_id": "fresh"}) for line in LINES[:4]),
        json.dumps({"role": "user", "content": "sneak", "thread_id": "canary"}),
    ]
    with pytest.raises(ResourceMismatchError):
        import_lines(memory, lines, resource_id="alice")
    assert memory.storage.get_thread("fresh") is None  # one transaction for the whole file


def test_export_of_an_unknown_thread_leaves_the_file_untouched(
    memory: Memory, tmp_path: Path
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    target = folder / "out.jsonl"
    target.write_text("precious\n")
    with pytest.raises(ThreadNotFoundError):
        export_to_file(memory, "no-such-thread", target)
    assert target.read_text() == "precious\n"
    assert [p.name for p in folder.iterdir()] == ["out.jsonl"]  # no temporary left


def test_async_import_is_all_or_nothing_too(memory: Memory) -> None:
    bad = [*LINES[:3], '{"role": "robot"}']
    with pytest.raises(InvalidMessageError, match="line 4"):
        asyncio.run(aimport_lines(memory, bad, thread_id="t", resource_id="alice"))
    assert memory.storage.get_thread("t") is None
    assert asyncio.run(aimport_lines(memory, LINES, thread_id="t", resource_id="alice")) == 12
    assert len(memory.get_messages(thread_id="t")) == 12


def test_cli_reports_invalid_utf8_and_unknown_threads(tmp_path: Path) -> None:
    runner = CliRunner()
    db = tmp_path / "m.db"
    source = tmp_path / "bad.jsonl"
    source.write_bytes(LINES[0].encode() + b"\n" + b'{"role": "user", "content": "\xff"}\n')
    result = runner.invoke(app, ["import", str(source), "--db", str(db), "--thread", "t",
                                 "--resource", "r"])  # fmt: skip
    assert result.exit_code == 1
    assert "not UTF-8 (line 2" in " ".join(result.output.split())  # rich wraps lines
    out = tmp_path / "keep.jsonl"
    out.write_text("keep\n")
    result = runner.invoke(app, ["export", "nope", "--db", str(db), "--out", str(out)])
    assert result.exit_code == 1
    assert out.read_text() == "keep\n"


SEPARATORS = "line\u2028separator, paragraph\u2029separator, next\x85line"


def test_line_and_paragraph_separators_survive_a_backup(
    memory: Memory, tmp_path: Path, call
) -> None:
    """U+2028, U+2029 and U+0085 are exported escaped, and import splits lines at \\n only:
    the backup restores, through the library (sync and async) and the CLI."""
    memory.create_thread(thread_id="t", resource_id="alice", title=f"title {SEPARATORS}")
    memory.save_messages(
        [HumanMessage(SEPARATORS), AIMessage(f"echo: {SEPARATORS}")],
        thread_id="t", resource_id="alice",
    )  # fmt: skip
    backup = tmp_path / "backup.jsonl"
    export_to_file(memory, "t", backup)
    text = backup.read_text(encoding="utf-8")
    assert not {"\u2028", "\u2029", "\x85"} & set(text) and len(text.splitlines()) == 2
    other = Memory(storage=SQLiteStorage(tmp_path / "copy.db"), options={"semantic_recall": False})
    if call.mode == "sync":
        assert import_lines(other, text.splitlines()) == 2
    else:
        assert asyncio.run(aimport_lines(other, text.splitlines())) == 2
    assert [m.content for m in other.get_messages(thread_id="t")] == [
        SEPARATORS,
        f"echo: {SEPARATORS}",
    ]
    assert exported(other, "t") == text
    raw = tmp_path / "raw.jsonl"  # a file written by another tool, separators raw
    raw.write_text(
        json.dumps({"role": "user", "content": SEPARATORS}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    db = tmp_path / "cli.db"
    result = CliRunner().invoke(app, ["import", str(raw), "--db", str(db), "--thread", "t",
                                      "--resource", "r", "--no-embed"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert Memory(storage=SQLiteStorage(db)).get_messages(thread_id="t")[0].content == SEPARATORS


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"role": "tool", "content": "x"}', "tool_call_id"),
        ('{"type": "ai", "data": {"content": "x", "tool_calls": "notalist"}}', "tool_calls"),
        ('{"type": "ai", "data": {"content": "x", "tool_calls": [1]}}', "tool_calls"),
        ('{"role": "assistant", "content": "x", "invalid_tool_calls": {}}', "invalid_tool_calls"),
        ('{"type": "tool", "data": {"content": "x"}}', "tool_call_id"),
        ('{"type": "human", "data": "x"}', "data"),
    ],
)
def test_malformed_message_fields_are_reported_by_line_and_field(
    memory: Memory, tmp_path: Path, line: str, field: str
) -> None:
    with pytest.raises(InvalidMessageError, match=f"line 2: {field}: "):
        import_lines(memory, [LINES[0], line], thread_id="t", resource_id="alice")
    assert memory.storage.get_thread("t") is None
    source = tmp_path / "bad.jsonl"
    source.write_text(LINES[0] + "\n" + line + "\n")
    result = CliRunner().invoke(app, ["import", str(source), "--db", str(tmp_path / "m.db"),
                                      "--thread", "t", "--resource", "r"])  # fmt: skip
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert f"line 2: {field}:" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_export_to_a_directory_or_a_missing_folder_is_a_clear_error(
    memory: Memory, tmp_path: Path
) -> None:
    memory.create_thread(thread_id="t", resource_id="alice")
    memory.save_messages([HumanMessage("hi")], thread_id="t", resource_id="alice")
    with pytest.raises(ConfigurationError, match="is a directory"):
        export_to_file(memory, "t", tmp_path)
    with pytest.raises(ConfigurationError, match="does not exist"):
        export_to_file(memory, "t", tmp_path / "missing" / "t.jsonl")
    db = tmp_path / "m.db"
    Memory(storage=SQLiteStorage(db)).save_turn(
        [HumanMessage("hi")], thread_id="t", resource_id="a"
    )
    for out in (tmp_path, tmp_path / "missing" / "t.jsonl"):
        result = CliRunner().invoke(app, ["export", "t", "--db", str(db), "--out", str(out)])
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert "error:" in result.output and "Traceback" not in result.output
    assert list((tmp_path).glob(".*.tmp")) == []
