"""`Memory`'s public API against a plain model of what it should hold (issue 83).

A Hypothesis state machine creates, saves, updates, deletes, clones, branches and transfers
threads of two owners, keeps their working memory, prunes, deletes a whole resource, and
recalls; each step runs sync or through its async twin, on one of several `Memory` objects
over one store when the world has more than one, and some steps run several at once from
threads and tasks. After every step:

- storage equals the model (each thread's messages in order, each owner's threads, working
  memory), and a thread read by the wrong owner is a `ResourceMismatchError`;
- after ``flush()``, every stored message is found by vector search of its own text, no
  deleted one is, and an owner's search and recall tool return only that owner's messages;
- no exception but the documented ones (each rule names the one it expects).

A failure prints the shrunk sequence of steps, a test to paste. The examples are bounded for
CI; ``LMM_STATEFUL_EXAMPLES=500`` runs many more.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_mastra_memory import (
    ChromaVectorStore,
    ConfigurationError,
    Memory,
    PostgresStorage,
    ResourceMismatchError,
    SQLiteStorage,
    ThreadExistsError,
    ThreadNotFoundError,
)

OWNERS = ("alice", "bob")
OLD = datetime.now(timezone.utc) - timedelta(days=400)  # past the machine's retention (365d)
OPTIONS: dict[str, Any] = {
    "semantic_recall": {"mode": "vector", "top_k": 3, "message_range": 0},
    "working_memory": {"enabled": True},
    "retention": {"messages": "365d"},
}
WORDS = st.sampled_from(["boat", "violin", "Lisbon", "tea", "garden", "flight", "soup", "Kyoto"])
TOKEN = re.compile(r"\bm\d+x\b")  # each message's unique mark, so a leak is seen at once


@dataclass
class Stored:
    """The model's message: where it is and what it says."""

    id: str
    thread: str
    text: str
    kind: str  # "human" | "ai"
    old: bool = False


@dataclass
class World:
    """The plain model: threads by owner, messages in order, working memory, and the
    messages deleted (which nothing may find again)."""

    owner_of: dict[str, str] = field(default_factory=dict)
    order: dict[str, list[str]] = field(default_factory=dict)
    messages: dict[str, Stored] = field(default_factory=dict)
    working: dict[str, str | None] = field(default_factory=lambda: dict.fromkeys(OWNERS))
    gone: dict[str, str] = field(default_factory=dict)  # deleted id -> its text
    stale: list[str] = field(default_factory=list)  # texts that updates replaced
    branch_of: dict[str, str] = field(default_factory=dict)  # branch thread -> its thread

    def threads_of(self, owner: str) -> set[str]:
        return {t for t, o in self.owner_of.items() if o == owner}

    def owner_of_message(self, message_id: str) -> str:
        return self.owner_of[self.messages[message_id].thread]

    def forget(self, message_ids: list[str]) -> None:
        for message_id in message_ids:
            stored = self.messages.pop(message_id)
            self.order[stored.thread].remove(message_id)
            self.gone[message_id] = stored.text

    def drop_thread(self, thread: str) -> None:
        """Forget `thread`, and its owner's branches of it with it (`Memory.delete_thread`'s
        rule; a branch left with the owner a thread was transferred from stays theirs)."""
        owner = self.owner_of[thread]
        for branch in [b for b, of in self.branch_of.items() if of == thread]:
            if self.owner_of.get(branch) == owner:
                self.drop_thread(branch)
        self.forget(list(self.order[thread]))
        del self.order[thread], self.owner_of[thread]
        self.branch_of.pop(thread, None)


@contextmanager
def expect(error: type[BaseException] | None) -> Iterator[None]:
    """The step raises exactly `error` (None: nothing); anything else fails the machine."""
    if error is None:
        yield
        return
    try:
        yield
    except error:
        return
    raise AssertionError(f"expected {error.__name__}")


BAD_CALL_OPTIONS = ({"read_only": "yes"}, {"last_messages": True}, {"colour": "red"}, "read_only")


class MemoryMachine(RuleBasedStateMachine):
    """Drives `memories` (one or more `Memory` objects over one store) against `World`."""

    make_memories: Callable[[], list[Memory]]  # set by each test
    close: Callable[[list[Memory]], None] = staticmethod(lambda memories: None)

    def __init__(self) -> None:
        super().__init__()
        self.memories = type(self).make_memories()
        self.world = World()
        self.numbers = itertools.count()

    def teardown(self) -> None:
        for memory in self.memories:
            assert memory.close(30)  # (every example's files and threads released)
        type(self).close(self.memories)

    # -- how a step is run -----------------------------------------------------------------
    def run(self, which: int, asynchronous: bool, name: str, *args: Any, **kwargs: Any) -> Any:
        memory = self.memories[which % len(self.memories)]
        if asynchronous:
            return asyncio.run(getattr(memory, f"a{name}")(*args, **kwargs))
        return getattr(memory, name)(*args, **kwargs)

    def text(self, words: list[str]) -> str:
        return f"m{next(self.numbers)}x {' '.join(words)}"

    def some_thread(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(list(self.world.owner_of)))

    def has_messages(self) -> bool:
        return bool(self.world.messages)

    def has_threads(self) -> bool:
        return bool(self.world.owner_of)

    @initialize()
    def start(self) -> None:
        for owner in OWNERS:
            thread = f"{owner}-first"
            self.memories[0].create_thread(thread_id=thread, resource_id=owner)
            self.world.owner_of[thread], self.world.order[thread] = owner, []

    # -- threads ---------------------------------------------------------------------------
    @rule(owner=st.sampled_from(OWNERS), which=st.integers(0, 3), asynchronous=st.booleans())
    def create_thread(self, owner: str, which: int, asynchronous: bool) -> None:
        thread = f"t{next(self.numbers)}"
        self.run(which, asynchronous, "create_thread", thread_id=thread, resource_id=owner)
        self.world.owner_of[thread], self.world.order[thread] = owner, []

    @precondition(has_threads)
    @rule(data=st.data(), owner=st.sampled_from(OWNERS), which=st.integers(0, 3))
    def create_a_thread_that_exists(self, data: st.DataObject, owner: str, which: int) -> None:
        thread = self.some_thread(data)
        with expect(ThreadExistsError):
            self.run(which, False, "create_thread", thread_id=thread, resource_id=owner)

    @precondition(has_threads)
    @rule(data=st.data(), owner=st.sampled_from(OWNERS), which=st.integers(0, 3),
          asynchronous=st.booleans())  # fmt: skip
    def delete_thread(
        self, data: st.DataObject, owner: str, which: int, asynchronous: bool
    ) -> None:
        thread = self.some_thread(data)
        mine = self.world.owner_of[thread] == owner
        with expect(None if mine else ResourceMismatchError):
            deleted = self.run(which, asynchronous, "delete_thread", thread, resource_id=owner)
            assert deleted is True
            self.world.drop_thread(thread)

    @rule(which=st.integers(0, 3))
    def delete_an_unknown_thread(self, which: int) -> None:
        assert (
            self.run(which, False, "delete_thread", "no-such-thread", resource_id="alice") is False
        )

    @precondition(has_threads)
    @rule(data=st.data(), owner=st.sampled_from(OWNERS), which=st.integers(0, 3),
          asynchronous=st.booleans())  # fmt: skip
    def clone_thread(self, data: st.DataObject, owner: str, which: int, asynchronous: bool) -> None:
        source = self.some_thread(data)
        mine = self.world.owner_of[source] == owner
        with expect(None if mine else ResourceMismatchError):
            clone = self.run(which, asynchronous, "clone_thread", source, resource_id=owner)
            copies = self.memories[0].get_messages(thread_id=clone.id, resource_id=owner)
            originals = [self.world.messages[m] for m in self.world.order[source]]
            assert [m.text for m in copies] == [m.text for m in originals]
            assert not {m.id for m in copies} & set(self.world.order[source])  # new ids
            self.world.owner_of[clone.id], self.world.order[clone.id] = owner, []
            for copy, original in zip(copies, originals, strict=True):
                assert copy.id is not None
                self.world.messages[copy.id] = Stored(copy.id, clone.id, original.text,
                                                      original.kind, original.old)  # fmt: skip
                self.world.order[clone.id].append(copy.id)

    @precondition(has_messages)
    @rule(data=st.data(), which=st.integers(0, 3), asynchronous=st.booleans())
    def branch_thread(self, data: st.DataObject, which: int, asynchronous: bool) -> None:
        thread = data.draw(st.sampled_from([t for t, o in self.world.order.items() if o]))
        owner, order = self.world.owner_of[thread], self.world.order[thread]
        cut = data.draw(st.integers(0, len(order) - 1))
        branch = self.run(which, asynchronous, "branch_thread", thread,
                          after_message_id=order[cut], resource_id=owner)  # fmt: skip
        moved = order[cut + 1 :]
        self.world.order[thread] = order[: cut + 1]
        self.world.owner_of[branch.id], self.world.order[branch.id] = owner, moved
        self.world.branch_of[branch.id] = thread
        for message_id in moved:
            self.world.messages[message_id].thread = branch.id

    @precondition(has_threads)
    @rule(data=st.data(), owner=st.sampled_from(OWNERS), which=st.integers(0, 3),
          asynchronous=st.booleans())  # fmt: skip
    def transfer_thread(
        self, data: st.DataObject, owner: str, which: int, asynchronous: bool
    ) -> None:
        thread = self.some_thread(data)
        to = "bob" if owner == "alice" else "alice"
        mine = self.world.owner_of[thread] == owner
        with expect(None if mine else ResourceMismatchError):
            self.run(which, asynchronous, "transfer_thread", thread, to_resource_id=to,
                     resource_id=owner)  # fmt: skip
            self.world.owner_of[thread] = to

    @rule(owner=st.sampled_from(OWNERS), which=st.integers(0, 3), asynchronous=st.booleans())
    def delete_resource(self, owner: str, which: int, asynchronous: bool) -> None:
        held = bool(self.world.threads_of(owner)) or self.world.working[owner] is not None
        erased = self.run(which, asynchronous, "delete_resource", owner)
        assert erased or not held  # (True too when only an emptied vector partition was left)
        for thread in self.world.threads_of(owner):
            if thread in self.world.owner_of:  # (not gone with the thread it branched from)
                self.world.drop_thread(thread)
        self.world.working[owner] = None

    # -- messages --------------------------------------------------------------------------
    @precondition(has_threads)
    @rule(data=st.data(), owner=st.sampled_from(OWNERS),
          kinds=st.lists(st.sampled_from(["human", "ai"]), min_size=1, max_size=3),
          words=st.lists(WORDS, min_size=1, max_size=3), which=st.integers(0, 3),
          asynchronous=st.booleans())  # fmt: skip
    def save_messages(self, data: st.DataObject, owner: str, kinds: list[str], words: list[str],
                      which: int, asynchronous: bool) -> None:  # fmt: skip
        thread = self.some_thread(data)
        mine = self.world.owner_of[thread] == owner
        old = mine and not self.world.order[thread] and data.draw(st.booleans(), label="old")
        batch = [self.message(kind, words) for kind in kinds]
        with expect(None if mine else ResourceMismatchError):
            saved = self.run(which, asynchronous, "save_messages", batch, thread_id=thread,
                             resource_id=owner, created_at=[OLD] * len(batch) if old else None)  # fmt: skip
            self.keep(thread, saved, old)

    def message(self, kind: str, words: list[str]) -> BaseMessage:
        text = self.text(words)
        return HumanMessage(text) if kind == "human" else AIMessage(text)

    def keep(self, thread: str, saved: list[BaseMessage], old: bool = False) -> None:
        for message in saved:
            assert message.id is not None and isinstance(message.content, str)
            self.world.messages[message.id] = Stored(message.id, thread, message.content,
                                                     message.type, old)  # fmt: skip
            self.world.order[thread].append(message.id)

    @precondition(has_threads)
    @rule(data=st.data(), owner=st.sampled_from(OWNERS), words=st.lists(WORDS, min_size=1,
          max_size=2), options=st.one_of(st.none(), st.fixed_dictionaries(
              {"read_only": st.booleans()}), st.sampled_from(BAD_CALL_OPTIONS)),
          which=st.integers(0, 3), asynchronous=st.booleans())  # fmt: skip
    def save_turn(self, data: st.DataObject, owner: str, words: list[str], options: Any,
                  which: int, asynchronous: bool) -> None:  # fmt: skip
        """A turn saved with this call's own options: read-only saves nothing; options of the
        wrong type are refused by name, nothing saved; another owner's thread is refused."""
        thread = self.some_thread(data)
        mine = self.world.owner_of[thread] == owner
        bad = options in BAD_CALL_OPTIONS
        reads_only = bool(options) and not bad and options["read_only"]  # (nothing to refuse)
        turn = [HumanMessage(self.text(words)), AIMessage(self.text(words))]
        error = ConfigurationError if bad else None if mine or reads_only else ResourceMismatchError
        with expect(error):
            saved = self.run(which, asynchronous, "save_turn", turn, thread_id=thread,
                             resource_id=owner, memory_options=options)  # fmt: skip
            if reads_only:
                assert saved == []
            self.keep(thread, saved)

    @rule(owner=st.sampled_from(OWNERS), which=st.integers(0, 3))
    def save_to_an_unknown_thread(self, owner: str, which: int) -> None:
        with expect(ThreadNotFoundError):
            self.run(which, False, "save_messages", [HumanMessage("lost?")],
                     thread_id="no-such-thread", resource_id=owner)  # fmt: skip

    @precondition(has_messages)
    @rule(data=st.data(), owner=st.sampled_from(OWNERS), words=st.lists(WORDS, min_size=1,
          max_size=2), which=st.integers(0, 3), asynchronous=st.booleans())  # fmt: skip
    def update_message(self, data: st.DataObject, owner: str, words: list[str], which: int,
                       asynchronous: bool) -> None:  # fmt: skip
        message_id = data.draw(st.sampled_from(list(self.world.messages)))
        stored = self.world.messages[message_id]
        mine = self.world.owner_of_message(message_id) == owner
        text = self.text(words)
        new = HumanMessage(text, id=message_id) if stored.kind == "human" else AIMessage(
            text, id=message_id)  # fmt: skip
        with expect(None if mine else ResourceMismatchError):
            self.run(which, asynchronous, "update_messages", [new], resource_id=owner)
            self.world.stale.append(stored.text)  # (searched for: it must show the new text)
            stored.text = text

    @precondition(has_messages)
    @rule(data=st.data(), owner=st.sampled_from(OWNERS), which=st.integers(0, 3),
          asynchronous=st.booleans())  # fmt: skip
    def delete_messages(
        self, data: st.DataObject, owner: str, which: int, asynchronous: bool
    ) -> None:
        ids = data.draw(st.lists(st.sampled_from(list(self.world.messages)), min_size=1,
                                 max_size=3, unique=True))  # fmt: skip
        mine = all(self.world.owner_of_message(m) == owner for m in ids)
        with expect(None if mine else ResourceMismatchError):  # (all or nothing)
            deleted = self.run(which, asynchronous, "delete_messages", ids, resource_id=owner)
            assert deleted == len(ids)
            self.world.forget(ids)

    @rule(which=st.integers(0, 3), asynchronous=st.booleans())
    def prune(self, which: int, asynchronous: bool) -> None:
        report = self.run(which, asynchronous, "prune")
        old = [m.id for m in self.world.messages.values() if m.old]
        assert report.done and report.messages == len(old)
        self.world.forget(old)

    # -- working memory --------------------------------------------------------------------
    @rule(owner=st.sampled_from(OWNERS), words=st.lists(WORDS, min_size=1, max_size=3),
          which=st.integers(0, 3), asynchronous=st.booleans())  # fmt: skip
    def update_working_memory(
        self, owner: str, words: list[str], which: int, asynchronous: bool
    ) -> None:
        document = f"# About {owner}\n- {' '.join(words)}"
        self.run(which, asynchronous, "update_working_memory", document, resource_id=owner)
        self.world.working[owner] = document

    # -- at once ---------------------------------------------------------------------------
    @precondition(lambda self: len(self.world.owner_of) >= 2)
    @rule(data=st.data(), words=st.lists(WORDS, min_size=1, max_size=2),
          asynchronous=st.booleans())  # fmt: skip
    def save_at_once(self, data: st.DataObject, words: list[str], asynchronous: bool) -> None:
        """Saves to several threads at once, each by its owner, through every `Memory` of the
        world: from threads of a pool, or as tasks of one event loop."""
        threads = data.draw(st.lists(st.sampled_from(list(self.world.owner_of)), min_size=2,
                                     max_size=4, unique=True))  # fmt: skip
        jobs = [(i, t, [self.message(kind, words) for kind in ("human", "ai")])
                for i, t in enumerate(threads)]  # fmt: skip

        def save(i: int, thread: str, batch: list[BaseMessage]) -> list[BaseMessage]:
            memory = self.memories[i % len(self.memories)]
            return memory.save_messages(batch, thread_id=thread,
                                        resource_id=self.world.owner_of[thread])  # fmt: skip

        async def asave_all() -> list[list[BaseMessage]]:
            return await asyncio.gather(*(
                self.memories[i % len(self.memories)].asave_messages(
                    batch, thread_id=thread, resource_id=self.world.owner_of[thread])
                for i, thread, batch in jobs))  # fmt: skip

        if asynchronous:
            results = asyncio.run(asave_all())
        else:
            with ThreadPoolExecutor(len(jobs)) as pool:
                results = list(pool.map(lambda job: save(*job), jobs))
        for (_, thread, _), saved in zip(jobs, results, strict=True):
            self.keep(thread, saved)

    # -- processes -------------------------------------------------------------------------
    @rule(which=st.integers(0, 3))
    def the_process_ends_and_another_opens_the_store(self, which: int) -> None:
        """A process ends with no flush and no close: its vector writer stops where it is, as
        at exit with nothing drained (``exit_drain: 0``), and its stores are let go; the next
        process opens the same store (`reopen`, set by each test) and, after its ``flush()``
        alone (`flush_and_recall`), finds everything the first one saved."""
        i = which % len(self.memories)
        ended = self.memories[i]
        assert ended.recall_index is not None
        writer = ended.recall_index.upkeep.writer
        writer.exit_drain = 0.0
        writer.stop_at_exit()
        if callable(close := getattr(ended.vector, "close", None)):
            close()
        ended.storage.close()
        self.memories[i] = ended.reopen()  # type: ignore[attr-defined]

    # -- what may be read ------------------------------------------------------------------
    @rule(which=st.integers(0, 3))
    def flush_and_recall(self, which: int) -> None:
        """After ``flush()``, vector search finds every stored message by its own text, never
        a deleted one, and never another owner's."""
        for memory in self.memories:
            assert memory.flush(60)
        memory = self.memories[which % len(self.memories)]
        for owner in OWNERS:
            mine = {m.id for m in self.world.messages.values()
                    if self.world.owner_of[m.thread] == owner}  # fmt: skip
            for message_id in mine:
                text = self.world.messages[message_id].text
                found = self.search(memory, text, owner, mine)
                assert message_id in found, f"{owner}'s {text!r} is not found after flush()"
            for text in [*self.world.gone.values(), *self.world.stale]:
                self.search(memory, text, owner, mine)  # (deleted and replaced: never shown)

    def search(self, memory: Memory, text: str, owner: str, mine: set[str]) -> set[str]:
        """The ids vector search finds for `text` in `owner`'s memory, each checked: one of
        `mine` (never deleted, never another's), shown as it stands now (never stale)."""
        twins = sum(m.text == text for m in self.world.messages.values())
        page = memory.search_messages(text, resource_id=owner, mode="vector", per_page=twins + 3)
        found = {hit.message.id: hit.message.content for hit in page.items}
        assert set(found) <= mine, f"{owner}'s search found {set(found) - mine}"
        assert all(self.world.messages[m].text == c for m, c in found.items() if m), found
        return {m for m in found if m is not None}

    @precondition(has_messages)
    @rule(data=st.data(), owner=st.sampled_from(OWNERS), which=st.integers(0, 3))
    def recall_tool(self, data: st.DataObject, owner: str, which: int) -> None:
        """The recall tool shows an owner only that owner's messages, whatever is asked."""
        memory = self.memories[which % len(self.memories)]
        memory.flush(60)
        query = self.world.messages[data.draw(st.sampled_from(list(self.world.messages)))].text
        answer = memory.recall_tool(resource_id=owner).invoke({"query": query})
        shown = set(TOKEN.findall(answer.replace(repr(query), "")))  # (its header echoes the query)
        theirs = {TOKEN.findall(m.text)[0] for m in self.world.messages.values()
                  if self.world.owner_of[m.thread] == owner}  # fmt: skip
        assert shown <= theirs, f"{owner} was shown {shown - theirs}"

    @invariant()
    def storage_equals_the_model(self) -> None:
        memory = self.memories[-1]  # (the last: with two, the one that wrote least)
        for owner in OWNERS:
            listed = {t.id for t in memory.list_threads(resource_id=owner)}
            assert listed == self.world.threads_of(owner)
            assert memory.get_working_memory(resource_id=owner) == self.world.working[owner]
        for thread, order in self.world.order.items():
            owner = self.world.owner_of[thread]
            stored = memory.get_messages(thread_id=thread, resource_id=owner)
            assert [m.id for m in stored] == order
            assert [m.content for m in stored] == [self.world.messages[m].text for m in order]
            other = "bob" if owner == "alice" else "alice"
            with expect(ResourceMismatchError):
                memory.get_messages(thread_id=thread, resource_id=other)


# bounded for CI; LMM_STATEFUL_EXAMPLES=500 (say) searches much further, on demand
BOUNDED = settings(max_examples=int(os.environ.get("LMM_STATEFUL_EXAMPLES", "15")),
                   stateful_step_count=25, deadline=None,
                   suppress_health_check=list(HealthCheck))  # fmt: skip


def machine(make: Callable[[], list[Memory]],
            close: Callable[[list[Memory]], None] | None = None) -> type[MemoryMachine]:  # fmt: skip
    attributes: dict[str, Any] = {"make_memories": staticmethod(make)}
    if close is not None:
        attributes["close"] = staticmethod(close)
    return type("Machine", (MemoryMachine,), attributes)


def on_sqlite(root: Path, count: int) -> Callable[[], list[Memory]]:
    """`count` `Memory` objects over one SQLite file and one Chroma folder (each with its own
    `SQLiteStorage` and `ChromaVectorStore`), a fresh pair of them per example."""
    examples = itertools.count()

    def make() -> list[Memory]:
        folder = root / f"example-{next(examples)}"
        folder.mkdir()

        def opened() -> Memory:
            memory = Memory(
                storage=SQLiteStorage(folder / "memory.db"),
                vector=ChromaVectorStore(path=folder / "vectors"),
                embedder=DeterministicFakeEmbedding(size=16),
                options=OPTIONS,
            )
            memory.reopen = opened  # type: ignore[attr-defined]  (the next process's)
            return memory

        return [opened() for _ in range(count)]

    return make


def test_one_memory_equals_the_model(tmp_path: Path) -> None:
    run_state_machine_as_test(machine(on_sqlite(tmp_path, 1)), settings=BOUNDED)


def test_two_memories_over_one_file_equal_the_model(tmp_path: Path) -> None:
    """Two `Memory` objects, each with its own storage and vector store over one file and one
    folder, in one process: the races of issue 83.1 (a partition emptied by one, written by
    the other) are reachable."""
    run_state_machine_as_test(machine(on_sqlite(tmp_path, 2)), settings=BOUNDED)


@pytest.mark.postgres
def test_two_memories_over_one_postgres_equal_the_model() -> None:
    import uuid

    dsn = os.environ["LMM_TEST_POSTGRES_DSN"]

    def make() -> list[Memory]:
        schema = f"sm_{uuid.uuid4().hex[:12]}"

        def opened(read: str | None) -> Memory:
            memory = Memory(
                storage=PostgresStorage(dsn, schema=schema, read_dsn=read),
                embedder=DeterministicFakeEmbedding(size=16),
                options=OPTIONS,
            )
            memory.reopen = lambda: opened(read)  # type: ignore[attr-defined]
            return memory

        # the second reads through the replica route (`read_dsn`; here the same server)
        return [opened(read) for read in (None, dsn)]

    def close(memories: list[Memory]) -> None:  # (after each was closed)
        schema = memories[0].storage.schema  # type: ignore[attr-defined]
        storage = PostgresStorage(dsn, schema=schema)
        storage.drop_schema()
        storage.close()

    run_state_machine_as_test(machine(make, close), settings=BOUNDED)


@pytest.mark.postgres
def test_two_memories_behind_pgbouncer_equal_the_model(pgbouncer: Any) -> None:
    """The same, both memories through PgBouncer in transaction pooling mode (issue 93): each
    operation may land on any server connection."""
    import uuid

    dsn = pgbouncer("transaction", ignore_options=True).dsn

    def make() -> list[Memory]:
        schema = f"sb_{uuid.uuid4().hex[:12]}"

        def opened() -> Memory:
            storage = PostgresStorage(dsn, schema=schema)
            assert storage.pooled
            memory = Memory(storage=storage, embedder=DeterministicFakeEmbedding(size=16),
                            options=OPTIONS)  # fmt: skip
            memory.reopen = opened  # type: ignore[attr-defined]
            return memory

        return [opened(), opened()]

    def close(memories: list[Memory]) -> None:
        storage = PostgresStorage(dsn, schema=memories[0].storage.schema)  # type: ignore[attr-defined]
        storage.drop_schema()
        storage.close()

    run_state_machine_as_test(machine(make, close), settings=BOUNDED)
