"""The command line: import with progress, export round-trip, threads, messages, demo, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.cli import app

runner = CliRunner()


def write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_import_then_export_round_trips(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    rows = [
        {"role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00+00:00"},
        {"role": "assistant", "content": "hello", "created_at": "2026-01-01T10:00:05+00:00"},
        {
            "type": "ai",
            "data": {"content": "", "tool_calls": [{"name": "f", "args": {"a": 1}, "id": "c1"}]},
        },
        {"type": "tool", "data": {"content": "42", "tool_call_id": "c1"}},
    ]
    source = write_lines(tmp_path / "conv.jsonl", rows)
    result = runner.invoke(
        app, ["import", str(source), "--db", str(db), "--thread", "t1", "--resource", "alice"]
    )
    assert result.exit_code == 0, result.output
    assert "imported 4 messages" in result.output
    memory = Memory(storage=SQLiteStorage(db))
    stored = memory.storage.list_messages("t1")
    assert [s.message.content for s in stored] == ["hi", "hello", "", "42"]
    assert stored[0].created_at.isoformat() == "2026-01-01T10:00:00+00:00"

    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["export", "t1", "--db", str(db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    db2 = tmp_path / "m2.db"
    assert runner.invoke(app, ["import", str(out), "--db", str(db2)]).exit_code == 0
    again = SQLiteStorage(db2).list_messages("t1")
    assert [s.message for s in again] == [s.message for s in stored]
    assert [s.created_at for s in again] == [s.created_at for s in stored]


def test_import_reports_the_bad_line_and_keeps_earlier_data(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    source = tmp_path / "bad.jsonl"
    source.write_text('{"role": "user", "content": "ok"}\n{"role": "robot", "content": "?"}\n')
    result = runner.invoke(
        app, ["import", str(source), "--db", str(db), "--thread", "t", "--resource", "r"]
    )
    assert result.exit_code == 1
    assert "line 2" in result.output
    assert SQLiteStorage(db).get_thread("t") is None  # parsed before anything was written


def test_threads_and_messages_commands(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    memory = Memory(storage=SQLiteStorage(db))
    memory.create_thread(resource_id="alice", thread_id="t1", title="Greetings")
    from langchain_core.messages import AIMessage, HumanMessage

    memory.save_messages(
        [HumanMessage("hi there"), AIMessage("hello back")], thread_id="t1", resource_id="alice"
    )
    listed = runner.invoke(app, ["threads", "list", "--db", str(db), "--resource", "alice"])
    assert listed.exit_code == 0 and "Greetings" in listed.output and "t1" in listed.output
    shown = runner.invoke(app, ["threads", "show", "t1", "--db", str(db)])
    assert shown.exit_code == 0 and "2 messages" in shown.output
    msgs = runner.invoke(app, ["messages", "t1", "--db", str(db), "--last", "1"])
    assert msgs.exit_code == 0 and "hello back" in msgs.output and "hi there" not in msgs.output
    missing = runner.invoke(app, ["threads", "show", "nope", "--db", str(db)])
    assert missing.exit_code == 1
    deleted = runner.invoke(app, ["threads", "delete", "t1", "--db", str(db), "--yes"])
    assert deleted.exit_code == 0
    assert SQLiteStorage(db).get_thread("t1") is None
    unknown = runner.invoke(app, ["messages", "t1", "--db", str(db)])
    assert unknown.exit_code == 1 and "no thread" in unknown.output


def test_demo_imports_the_sample_conversation(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = runner.invoke(app, ["demo", "--db", str(db)])
    assert result.exit_code == 0, result.output
    storage = SQLiteStorage(db)
    threads = storage.list_threads(resource_id="alice")
    assert len(threads) >= 5
    total = sum(len(storage.list_messages(t.id)) for t in threads)
    assert total >= 300
    assert f"imported {total} messages" in result.output


def test_working_memory_show_and_set(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    mistyped = runner.invoke(app, ["working-memory", "set", "--resource", "a", "--db", db, "x"])
    assert mistyped.exit_code == 1 and "no database" in mistyped.output
    assert not Path(db).exists()  # a mistyped --db creates nothing, as every command
    SQLiteStorage(db).close()
    assert (
        runner.invoke(app, ["working-memory", "show", "--resource", "alice", "--db", db]).exit_code
        == 1
    )
    result = runner.invoke(
        app, ["working-memory", "set", "--resource", "alice", "--db", db, "# Alice\n- City: Lisbon"]
    )
    assert result.exit_code == 0, result.output
    shown = runner.invoke(app, ["working-memory", "show", "--resource", "alice", "--db", db])
    assert shown.exit_code == 0 and "City: Lisbon" in shown.output
    patch = runner.invoke(
        app, ["working-memory", "set", "--resource", "bob", "--db", db, "--json", '{"a": {"b": 1}}']
    )
    assert patch.exit_code == 0, patch.output
    runner.invoke(
        app, ["working-memory", "set", "--resource", "bob", "--db", db, "--json", '{"a": {"c": 2}}']
    )
    bob = runner.invoke(app, ["working-memory", "show", "--resource", "bob", "--db", db])
    assert json.loads(bob.output) == {"a": {"b": 1, "c": 2}}
    bad = runner.invoke(
        app, ["working-memory", "set", "--resource", "bob", "--db", db, "--json", "[1]"]
    )
    assert bad.exit_code == 1 and "object" in bad.output
    unknown_thread = runner.invoke(
        app, ["working-memory", "set", "--resource", "bob", "--thread", "nope", "--db", db, "x"]
    )
    assert unknown_thread.exit_code == 1 and "no thread" in unknown_thread.output


def test_demo_shows_working_memory(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--db", str(tmp_path / "d.db")])
    assert result.exit_code == 0, result.output
    assert "tool → success" in result.output
    assert "Lisbon (moved in March)" in result.output
    assert (
        "semantic recall across threads" in result.output
        and "remembered_from_other_conversation" in result.output
    )


def test_recall_and_reindex_commands(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    rows = [
        {
            "thread_id": "t1",
            "resource_id": "alice",
            "role": "user",
            "content": "I moved to Lisbon in March.",
        },
        {"thread_id": "t1", "resource_id": "alice", "role": "assistant", "content": "Lovely city."},
        {
            "thread_id": "b1",
            "resource_id": "bob",
            "role": "user",
            "content": "I moved to Oslo in May.",
        },
    ]
    assert (
        runner.invoke(
            app, ["import", str(write_lines(tmp_path / "c.jsonl", rows)), "--db", db]
        ).exit_code
        == 0
    )
    reindexed = runner.invoke(app, ["reindex", "--db", db])
    assert reindexed.exit_code == 0 and "embedded" in reindexed.output
    result = runner.invoke(
        app, ["recall", "Where do I live now?", "--resource", "alice", "--db", db, "--top-k", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "Lisbon" in result.output and "Oslo" not in result.output
    assert (
        "what recall adds to the context" in result.output
        and "remembered_from_other_conversation" in result.output
    )
    keyword = runner.invoke(
        app, ["recall", "Oslo", "--resource", "alice", "--db", db, "--mode", "keyword"]
    )
    assert keyword.exit_code == 0 and "Oslo" not in keyword.output  # bob's, never alice's


def test_read_only_commands_never_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    for args in (
        ["threads", "list"],
        ["threads", "show", "t1"],
        ["messages", "t1"],
        ["export", "t1"],
        ["recall", "where do I live?", "--resource", "alice"],
        ["working-memory", "show", "--resource", "alice"],
        ["reindex"],
    ):
        result = runner.invoke(app, [*args, "--db", str(missing)])
        assert result.exit_code == 1, args
        assert "no database at" in " ".join(result.output.split()), args
        assert not missing.exists(), args


def test_token_counts_print_as_integers(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    memory = Memory(storage=SQLiteStorage(db), options={"semantic_recall": False})
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages([HumanMessage("hello there, how are you?")], thread_id="t1",
                         resource_id="alice")  # fmt: skip
    shown = runner.invoke(app, ["threads", "show", "t1", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert re.search(r"1 messages, \d+ tokens", shown.output)
    listed = runner.invoke(app, ["messages", "t1", "--db", str(db)])
    assert listed.exit_code == 0 and not re.search(r"\d\.\d", listed.output.split("tokens")[-1])


def recall_rows() -> list[dict]:
    said = [
        ("user", "I moved to Lisbon in March."),
        ("assistant", "Lovely city, Lisbon."),
        ("user", "My sister Marta is getting married in June."),
        ("assistant", "Congratulations to Marta!"),
    ]
    return [{"thread_id": "t1", "resource_id": "alice", "role": r, "content": c} for r, c in said]


def test_import_embeds_for_recall_or_says_when_it_will(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    file = str(write_lines(tmp_path / "c.jsonl", recall_rows()))
    done = runner.invoke(app, ["import", file, "--db", db])
    assert done.exit_code == 0, done.output
    assert "embedded 4 messages for semantic recall" in done.output
    assert "embedded 0 messages" in runner.invoke(app, ["reindex", "--db", db]).output
    later = str(tmp_path / "later.db")
    skipped = runner.invoke(app, ["import", file, "--db", later, "--no-embed"])
    said = " ".join(skipped.output.split())
    assert "not embedded yet" in said and f"reindex --db {later}" in said
    assert "embedded 4 messages" in runner.invoke(app, ["reindex", "--db", later]).output


def test_hybrid_recall_shows_rank_and_each_modes_score(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    runner.invoke(
        app, ["import", str(write_lines(tmp_path / "c.jsonl", recall_rows())), "--db", db]
    )
    result = runner.invoke(
        app,
        ["recall", "When is Marta's wedding?", "--resource", "alice", "--db", db],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "rank" in line)
    assert all(word in header for word in ("score", "vector (cosine)", "keyword (BM25)"))
    first = next(line for line in result.output.splitlines() if line.strip("│ ").startswith("1"))
    assert "Marta" in first
    numbers = [float(x) for x in re.findall(r"\b\d\.\d{3}\b", first)]
    assert len(numbers) == 3 and len(set(numbers)) > 1  # the score, cosine and BM25 differ


def test_errors_name_cli_commands_not_python_methods(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    runner.invoke(
        app, ["import", str(write_lines(tmp_path / "c.jsonl", recall_rows())), "--db", db]
    )
    result = runner.invoke(
        app,
        ["working-memory", "set", "--resource", "alice", "--thread", "nope", "--db", db, "# x"],
    )
    assert result.exit_code == 1
    assert "threads list" in result.output and "create_thread()" not in result.output


def test_the_int8_embedder_indexes_apart(tmp_path: Path) -> None:
    """`--precision int8` is another model for the index: reindex embeds every message into its
    own collection, and recall through it finds them."""
    db = str(tmp_path / "m.db")
    rows = [
        {
            "thread_id": "t1",
            "resource_id": "alice",
            "role": "user",
            "content": "I moved to Lisbon.",
        },
        {"thread_id": "t2", "resource_id": "alice", "role": "user", "content": "I play the oboe."},
    ]
    source = str(write_lines(tmp_path / "c.jsonl", rows))
    assert runner.invoke(app, ["import", source, "--db", db]).exit_code == 0
    reindexed = runner.invoke(app, ["--precision", "int8", "reindex", "--db", db])
    assert reindexed.exit_code == 0, reindexed.output
    assert "2" in reindexed.output  # both messages, missing from the int8 collection
    again = runner.invoke(app, ["--precision", "int8", "reindex", "--db", db])
    assert again.exit_code == 0 and "0" in again.output and "2" not in again.output
    found = runner.invoke(
        app,
        ["--precision", "int8", "recall", "Which city do I live in?", "--resource", "alice",
         "--db", db, "--mode", "vector", "--top-k", "1"],
    )  # fmt: skip
    assert found.exit_code == 0 and "Lisbon" in found.output and "oboe" not in found.output
    refused = runner.invoke(app, ["--precision", "int4", "reindex", "--db", db])
    assert refused.exit_code == 2  # click's usage error names the choices
