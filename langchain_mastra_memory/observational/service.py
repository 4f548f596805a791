"""`ObservationalMemory`: the log kept behind the turn, and the history a turn sees with it.

Buffering (on by default, as in Mastra): each time ``buffer_tokens`` of new messages have
gathered, a worker thread runs the Observer on them (under the scope's lease, so concurrent
turns never observe the same messages twice) and commits its group *buffered*: written, not yet
in the log. When the unobserved messages pass ``message_tokens``, the oldest buffered groups
are activated (a storage transaction, no model call) so that about ``1 - buffer_activation``
of the threshold stays as raw messages; when the active log then passes
``observation_tokens``, the Reflector condenses it. Without buffering the Observer runs once
the threshold is passed and its group goes straight into the log. A turn over ``block_after``
times the threshold waits: for the buffering run under way, then, if still over, for an
Observer run in the turn itself. A failing or slow model loses nothing: the lease lapses, the
messages stay unobserved, a warning says so, and the next save tries again. A turn's history
is the log (a leading system block) and the messages not yet observed; all stay stored.
"""

from __future__ import annotations

import contextvars
import json
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Future, wait
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from ..errors import ConfigurationError, MastraMemoryError, ResourceMismatchError
from ..injected import tag
from ..messages import ids_of
from ..pools import await_futures, in_io_pool
from ..storage.base import MemoryStorage
from ..storage.records import ObservationGroup, StoredMessage, stored_ids
from ..storage.sql.observations import scope_key
from ..tokens.counting import TokenCounter
from ..tracing import traced
from ..tracing.runs import detached_context
from ..twins import Steps, call, run_sync
from . import archives
from .checks import (
    UnusableReply,
    observation_problem,
    reflection_problem,
    usable_entries,
    usable_task,
)
from .config import EVENT, SOURCE, EventKind, ObservationalConfig, ObservationEvent, turn_ended
from .extracting import check_working_extractor, keep_extracted, pass_inputs
from .extractors import ExtractorContext
from .hooks import messages_hook, text_hook
from .parse import log_tail, parse_log
from .prompts import (
    OBSERVER_INSTRUCTIONS,
    REFLECTOR_INSTRUCTIONS,
    context_block,
    format_entries,
    with_instruction,
)
from .runnables import Observer, Reflector
from .worker import DaemonWorker

if TYPE_CHECKING:
    from ..working_memory.service import WorkingMemoryStore

logger = logging.getLogger(__name__)


class ObservationalMemory:
    """Observes behind the turn and shapes its history (see the module docstring)."""

    def __init__(
        self,
        storage: MemoryStorage,
        config: ObservationalConfig,
        working: WorkingMemoryStore | None = None,
    ) -> None:
        self.storage = storage
        self.config = config
        self.observer = Observer(
            config.observer_model or config.model,
            instructions=with_instruction(
                OBSERVER_INSTRUCTIONS, config.observer_instruction or config.instruction
            ),
            temporal_markers=config.temporal_markers,
        )
        self.reflector = Reflector(
            config.reflector_model or config.model,
            instructions=with_instruction(
                REFLECTOR_INSTRUCTIONS, config.reflector_instruction or config.instruction
            ),
        )
        if config.manage_working_memory and (working is None or not working.config.enabled):
            raise ConfigurationError(
                "observational_memory.manage_working_memory needs working memory: "
                'options={"working_memory": {"enabled": True}, ...}'
            )
        self.working_store = working if working is not None and working.config.enabled else None
        self.working = self.working_store if config.manage_working_memory else None
        check_working_extractor(config, self.working_store)
        self.counter = TokenCounter()
        self.worker: DaemonWorker | None = None  # (made at the first run; `Memory.close` stops it)
        self._running: dict[str, Future[Any]] = {}  # scope -> its run in the worker thread
        self._lock = threading.Lock()
        self._retry_at: dict[str, float] = {}  # scope -> log tokens before reflecting again

    @classmethod
    def from_option(
        cls,
        storage: MemoryStorage,
        option: bool | dict[str, Any],
        working: WorkingMemoryStore | None = None,
    ) -> ObservationalMemory | None:
        """The service for ``options["observational_memory"]`` (None when it is off)."""
        config = ObservationalConfig.parse(option)
        return None if config is None else cls(storage, config, working)

    def _emit(self, kind: EventKind, key: str, resource_id: str, thread_id: str | None,
              **detail: Any) -> None:  # fmt: skip
        """Tell `on_status`, and the run's callbacks when there is a run (a failing listener
        warns; memory goes on)."""
        event = ObservationEvent(kind, key, resource_id, thread_id, detail)
        if self.config.on_status is not None:
            try:
                self.config.on_status(event)
            except Exception as exc:
                logger.warning("observational memory: on_status failed on %s: %s", kind, exc)
        try:
            from langchain_core.callbacks import dispatch_custom_event

            dispatch_custom_event(EVENT, asdict(event))
        except RuntimeError:  # no run to report to (the worker thread): on_status only
            pass
        except Exception as exc:  # the run it belonged to is over (a turn that stopped waiting)
            logger.debug("observational memory: %s not reported to its run: %s", kind, exc)

    def key(self, thread_id: str, resource_id: str) -> str:
        return scope_key(self.config.scope, resource_id=resource_id, thread_id=thread_id)

    # -- the turn's history ----------------------------------------------------------------------
    def history(
        self, thread_id: str, resource_id: str, new: Sequence[BaseMessage]
    ) -> Steps[list[BaseMessage]]:
        """The log as one tagged system block, then the thread's unobserved messages; another
        resource's thread raises `ResourceMismatchError` (a thread not created yet has none of
        its own, and with resource scope shows the resource's log)."""
        thread = yield call(self.storage.get_thread, thread_id)
        if thread is not None and thread.resource_id != resource_id:
            raise ResourceMismatchError.for_thread(thread_id, resource_id)
        key = self.key(thread_id, resource_id)
        log: list[ObservationGroup] = yield call(self.storage.observation_log, key)
        pending: list[StoredMessage] = yield call(
            self.storage.unobserved_messages, key, resource_id=resource_id, thread_id=thread_id
        )
        current = ids_of(new)
        raw = [
            s.message for s in pending if s.thread_id == thread_id and s.message.id not in current
        ]
        shelf = None
        if self.config.archive is not None:
            shelf = yield from archives.catalog(
                self.storage, key, self.config.archive.max_catalog_tokens, self._tokens
            )
        if not log and not shelf:
            return raw
        task = next((g.current_task for g in reversed(log) if g.current_task), None)
        block = context_block("\n".join(g.text for g in log), task, shelf)
        return [tag(block, SOURCE), *raw]

    # -- behind the turn -------------------------------------------------------------------------
    def after_save(self, stored: Sequence[StoredMessage]) -> None:
        """Activate buffered observations at the threshold, start a buffering Observer run
        every ``buffer_tokens``, and wait in the turn only when far over the threshold."""
        if not stored:
            return
        thread_id, resource_id = stored[0].thread_id, stored[0].resource_id
        key = self.key(thread_id, resource_id)
        config, storage = self.config, self.storage
        raw = storage.unobserved_tokens(key, resource_id=resource_id, thread_id=thread_id)
        if raw >= config.message_tokens or self._idle(stored, key, resource_id, thread_id):
            raw = self._activate(key, resource_id, thread_id, raw)
        if raw >= config.block_after * config.message_tokens:  # far over: the turn waits,
            # at most `turn_wait` in all, for the run under way or one of its own
            deadline = time.monotonic() + config.turn_wait
            running = self._running.get(key)
            turn = contextvars.copy_context()  # the run's callbacks see the run's events
            if running is None:
                self._submit(key, self._observe(key, thread_id, resource_id), turn)
                running = self._running.get(key)
            elif self._waited(running, deadline, key, resource_id, thread_id):
                raw = storage.unobserved_tokens(key, resource_id=resource_id, thread_id=thread_id)
                if raw >= config.block_after * config.message_tokens:
                    self._submit(key, self._observe(key, thread_id, resource_id), turn)
                    running = self._running.get(key)
                else:
                    running = None
            if running is not None:
                self._waited(running, deadline, key, resource_id, thread_id)
            return
        fresh = storage.unobserved_tokens(key, resource_id=resource_id, thread_id=thread_id,
                                          buffered=True)  # fmt: skip
        step = config.buffer_step  # None: no buffering, the Observer waits for the threshold
        idle = config.buffer_on_idle and turn_ended(stored[-1].message)
        if fresh > 0 and (raw >= config.message_tokens or (step and fresh >= step) or idle):
            self._submit(key, self._observe(key, thread_id, resource_id))

    async def aafter_save(self, stored: Sequence[StoredMessage]) -> None:
        """Async `after_save` (its storage reads, and a blocking observation, in a worker
        thread: the event loop never waits on them)."""
        await in_io_pool(self.after_save, stored)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for Observer and Reflector runs started by this process; False on timeout."""
        pending = list(self._running.values())
        return not wait(pending, timeout=timeout).not_done if pending else True

    async def aflush(self, timeout: float | None = None) -> bool:
        """Async `flush` (awaited: no thread is held meanwhile)."""
        return await await_futures(list(self._running.values()), timeout)

    def _submit(
        self, key: str, steps: Steps[None], context: contextvars.Context | None = None
    ) -> None:
        """Run `steps` (an Observer or Reflector run) in the worker thread, unless a run for
        `key` is under way already (it activates and reflects when it ends); in `context`
        when given (a turn waiting for it: its callbacks receive the run's events), else with
        the caller's tracers, as a run of its own (`tracing.runs.detached_context`)."""
        context = context or detached_context()
        with self._lock:
            if key in self._running:
                steps.close()
                return
            if self.worker is None:
                self.worker = DaemonWorker("memory-observer")
            future = self.worker.submit(context.run, run_sync, steps)
            self._running[key] = future
        future.add_done_callback(lambda done: self._finished(key, done))

    def _waited(
        self, run: Future[Any], deadline: float, key: str, resource_id: str, thread_id: str
    ) -> bool:
        """Wait for `run` until `deadline`; False (and a ``timeout`` event) if it is not done."""
        if wait([run], timeout=max(0.0, deadline - time.monotonic())).done:
            return True
        logger.warning(
            "observational memory: the turn stopped waiting for the Observer of %s after %.0f s;"
            " it goes on with the log as it is", key, self.config.turn_wait,
        )  # fmt: skip
        self._emit("timeout", key, resource_id, thread_id, waited_seconds=self.config.turn_wait)
        return False

    def _finished(self, key: str, future: Future[Any]) -> None:
        with self._lock:
            if self._running.get(key) is future:
                del self._running[key]

    def _idle(
        self, stored: Sequence[StoredMessage], key: str, resource_id: str, thread_id: str
    ) -> bool:
        """Whether this save comes after the thread was idle ``activate_after_idle`` or longer
        (the provider's cache is cold: buffered observations may activate now)."""
        idle = self.config.activate_after_idle
        if idle is None:
            return False
        new = {s.message.id for s in stored}
        storage = self.storage
        waiting = storage.unobserved_messages(key, resource_id=resource_id, thread_id=thread_id)
        before = [s.created_at for s in waiting if s.message.id not in new]
        if not before:
            return False
        return (min(s.created_at for s in stored) - max(before)).total_seconds() >= float(idle)

    def _activate(self, key: str, resource_id: str, thread_id: str, raw: float) -> float:
        """Activate buffered groups (none waiting: nothing changes); the unobserved tokens
        left, reflecting in the background when the log grew past its threshold."""
        activated = self.storage.activate_observations(
            key, resource_id=resource_id, thread_id=thread_id,
            retain_tokens=self.config.retain_tokens,
        )  # fmt: skip
        if not activated:
            return raw
        self._activated(activated, key, resource_id, thread_id)
        self._submit(key, self._reflect(key, resource_id))
        return raw - sum(g.message_tokens for g in activated)

    def _activated(
        self, groups: Sequence[ObservationGroup], key: str, resource_id: str, thread_id: str
    ) -> None:
        if groups:
            self._emit(
                "activated", key, resource_id, thread_id, groups=len(groups),
                message_tokens=sum(g.message_tokens for g in groups),
            )  # fmt: skip

    def _working_memory(self, resource_id: str, thread_id: str) -> Steps[dict[str, Any]]:
        """The Observer's view of the working memory it manages ({} when it manages none)."""
        if self.working is None:
            return {}
        current = yield call(self.working.get, resource_id=resource_id, thread_id=thread_id)
        if self.working.config.mode == "schema":
            shape = " (as a JSON object holding only the fields that change)"
            return {"working_memory": json.dumps(current or {}), "working_memory_shape": shape}
        return {"working_memory": current or self.working.config.template or ""}

    def _update_working_memory(
        self, text: str, key: str, resource_id: str, thread_id: str
    ) -> Steps[None]:
        """Apply an Observer's rewrite of the working memory, validated as the tool's are; an
        invalid one is dropped (the observations stand)."""
        assert self.working is not None
        try:
            value: Any = json.loads(text) if self.working.config.mode == "schema" else text
            yield call(self.working.update, value, resource_id=resource_id, thread_id=thread_id)
        except (ValueError, MastraMemoryError) as exc:
            logger.warning("observational memory: the Observer's working memory refused: %s", exc)
            self._emit("failed", key, resource_id, thread_id, step="working_memory", error=str(exc))
            return
        self._emit("working_memory_updated", key, resource_id, thread_id)

    def _observe(self, key: str, thread_id: str, resource_id: str) -> Steps[None]:
        """Observe what no group covers yet, a batch at a time (``max_tokens_per_batch``),
        committing each buffered, then activate (at the threshold) and reflect (past the
        log's)."""
        for _ in range(1_000):  # a bound, never reached: each batch covers messages
            more = yield from self._observe_batch(key, thread_id, resource_id)
            if not more:
                return

    def _batch(self, pending: list[StoredMessage]) -> list[StoredMessage]:
        """The oldest messages within ``max_tokens_per_batch`` (one at least)."""
        limit = self.config.max_tokens_per_batch
        if limit is None:
            return pending
        batch: list[StoredMessage] = []
        tokens = 0.0
        for stored in pending:
            tokens += self.counter.count(stored.message)
            if batch and tokens > limit:
                break
            batch.append(stored)
        return batch

    def _observe_batch(self, key: str, thread_id: str, resource_id: str) -> Steps[bool]:
        """One Observer call; whether messages beyond its batch wait to be observed."""
        owner = f"observer-{uuid.uuid4()}"
        if not (yield call(self.storage.claim_observation, key, owner=owner,
                           seconds=self.config.lease_seconds)):  # fmt: skip
            return False  # another turn observes this scope now
        ref: dict[str, Any] = {"resource_id": resource_id, "thread_id": thread_id}
        try:
            waiting = yield call(self.storage.unobserved_messages, key, buffered=True, **ref)
            log = yield call(self.storage.observation_log, key, buffered=True)
            if not waiting:
                yield call(self.storage.release_observation, key, owner=owner)
                return False
            pending = self._batch(waiting)
            self._emit("observing", key, resource_id, thread_id, messages=len(pending))
            read = messages_hook(self.config.hooks, [s.message for s in pending], **ref)
            parsed, untitled, extra = None, False, dict[str, Any]()
            text, task = "", None  # (the hook withheld them all: observed, nothing of them kept)
            if read:
                parsed, extra, untitled = yield from self._observer_pass(key, read, pending, log,
                                                                         **ref)  # fmt: skip
                text = text_hook(self.config.hooks, "after_observation",
                                 format_entries(usable_entries(parsed.entries)), **ref)  # fmt: skip
                task = usable_task(parsed.current_task)
            raw = yield call(self.storage.unobserved_tokens, key, **ref)  # (as after the commit)
            yield call(
                self.storage.commit_observation, key, owner=owner, resource_id=resource_id,
                text=text, current_task=task, message_ids=stored_ids(pending),
                token_count=self._tokens(text), buffered=True,
            )  # fmt: skip
        except Exception as exc:  # nothing committed: the messages wait for the next run
            yield call(self.storage.release_observation, key, owner=owner)
            logger.warning("observational memory: observing %s failed, retried later: %s", key, exc)
            self._emit("failed", key, resource_id, thread_id, step="observe", error=str(exc))
            return False
        # (with buffering off, a group over the threshold is never seen waiting: it goes
        # straight into the log below, an ``activated`` event and no ``buffered`` one)
        if self.config.buffer_step is not None or raw < self.config.message_tokens:
            self._emit("buffered", key, resource_id, thread_id, messages=len(pending))
        if parsed is not None:
            yield from keep_extracted(self.storage, parsed.extraction, extra, key, self._emit)
            if untitled and parsed.title:
                yield from self._title(thread_id, resource_id, parsed.title)
            if parsed.working_memory is not None and self.working is not None:
                yield from self._update_working_memory(
                    parsed.working_memory, key, resource_id, thread_id
                )
        if raw >= self.config.message_tokens:
            activated = yield call(
                self.storage.activate_observations, key, retain_tokens=self.config.retain_tokens,
                **ref,
            )  # fmt: skip
            self._activated(activated, key, resource_id, thread_id)
        yield from self._reflect(key, resource_id)
        return len(pending) < len(waiting)

    def _observer_pass(
        self,
        key: str,
        read: list[BaseMessage],
        pending: list[StoredMessage],
        log: list[ObservationGroup],
        *,
        resource_id: str,
        thread_id: str,
    ) -> Steps[tuple[Any, dict[str, Any], bool]]:
        """The Observer's reply on `read` (with the extractors' inputs, and whether it was
        asked for a title); `UnusableReply` when it cannot be kept."""
        document = yield from self._working_memory(resource_id, thread_id)
        thread = yield call(self.storage.get_thread, thread_id)
        untitled = self.config.suggest_title and thread is not None and not thread.title
        extra = yield from pass_inputs(self.storage, self.config.extractors, key,
                                       ExtractorContext("observer", resource_id, thread_id,
                                                        self.working_store))  # fmt: skip
        at = {s.message.id: s.created_at for s in pending}
        shown = log_tail("\n".join(g.text for g in log), self.config.previous_observer_tokens,
                         self._tokens)  # fmt: skip
        parsed = yield traced(call(self.observer.invoke, {
            "messages": read,
            "times": [at.get(m.id) for m in read],
            "log": shown,
            "suggest_title": untitled,
            "observe_attachments": self.config.observe_attachments,
            **document, **extra,
        }), "observer", inputs={"thread_id": thread_id, "messages": len(read)},
            metadata={"resource_id": resource_id, "thread_id": thread_id},
            outputs=lambda reply: {"entries": len(reply.entries)})  # fmt: skip
        problem = observation_problem(parsed.entries, read)
        if problem is not None:
            raise UnusableReply(problem)
        return parsed, extra, untitled

    def _title(self, thread_id: str, resource_id: str, title: str) -> Steps[None]:
        thread = yield call(self.storage.get_thread, thread_id)  # (never replaces a title)
        if thread is not None and not thread.title:
            yield call(self.storage.update_thread, thread_id, title=title,
                       resource_id=resource_id)  # fmt: skip

    def _reflect(self, key: str, resource_id: str) -> Steps[None]:
        if self.config.archive is not None:  # rolling archives instead: no model call
            yield from archives.archive(self.storage, key, resource_id, self.config.archive,
                                        self._emit, self.config.lease_seconds)  # fmt: skip
            return
        log: list[ObservationGroup] = yield call(self.storage.observation_log, key)
        tokens = sum(g.token_count for g in log)
        if tokens < max(self.config.observation_tokens, self._retry_at.get(key, 0.0)):
            return  # under the threshold, or a refused reflection and not much grown since
        owner = f"reflector-{uuid.uuid4()}"
        if not (yield call(self.storage.claim_observation, key, owner=owner,
                           seconds=self.config.lease_seconds)):  # fmt: skip
            return
        try:
            log = yield call(self.storage.observation_log, key)
            whole = text_hook(self.config.hooks, "before_reflection",
                              "\n".join(g.text for g in log), resource_id=resource_id)  # fmt: skip
            self._emit("reflecting", key, resource_id, None, groups=len(log), tokens=tokens)
            extra = yield from pass_inputs(
                self.storage,
                self.config.reflector_extractors,
                key,
                ExtractorContext("reflector", resource_id, None),
            )
            parsed = yield traced(
                call(self.reflector.invoke, {"log": whole, **extra}), "reflector",
                inputs={"groups": len(log), "tokens": tokens},
                metadata={"resource_id": resource_id},
                outputs=lambda reply: {"entries": len(reply.entries)},
            )  # fmt: skip
            problem = reflection_problem(parsed.entries, parse_log(whole).entries)
            if problem is not None:
                raise UnusableReply(problem)
            text = text_hook(self.config.hooks, "after_reflection",
                             format_entries(usable_entries(parsed.entries)),
                             resource_id=resource_id)  # fmt: skip
            if self._tokens(text) >= self._tokens(whole):
                raise UnusableReply("the Reflector's reply is no shorter than the log")
            yield call(
                self.storage.commit_reflection, key, owner=owner, resource_id=resource_id,
                text=text, current_task=usable_task(parsed.current_task) or log[-1].current_task,
                replaces=[g.id for g in log], token_count=self._tokens(text),
            )  # fmt: skip
        except Exception as exc:  # the log stays as it was; try again once it grew a quarter
            self._retry_at[key] = tokens * 1.25
            yield call(self.storage.release_observation, key, owner=owner)
            logger.warning(
                "observational memory: reflecting %s failed, retried later: %s", key, exc
            )
            self._emit("failed", key, resource_id, None, step="reflect", error=str(exc))
            return
        self._emit("reflected", key, resource_id, None, replaced=len(log),
                   tokens=self._tokens(text))  # fmt: skip
        yield from keep_extracted(self.storage, parsed.extraction, extra, key, self._emit)

    def _tokens(self, text: str) -> float:
        return float(len(self.counter.encoding.encode_ordinary(text)))
