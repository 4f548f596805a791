"""`ObservationalMemory`: the log kept behind the turn, and the history a turn sees with it.

This module is the service's setup, the turn's history and the scheduling behind the turn;
the passes it schedules are `observing` (the Observer) and `reflecting` (the Reflector, or
rolling archives), each under the scope's lease (`leases`).

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
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, wait
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from ..config.options import EXIT_DRAIN
from ..errors import ConfigurationError, ResourceMismatchError
from ..messages import ids_of, tag
from ..pools import DaemonWorker, await_futures, in_io_pool
from ..storage.base import MemoryStorage
from ..storage.records import ObservationGroup, StoredMessage, scope_key
from ..tokens.counting import TokenCounter
from ..tracing import detached_context
from ..twins import Steps, call, run_sync
from . import archives
from .config import EVENT, SOURCE, EventKind, ObservationalConfig, ObservationEvent, turn_ended
from .extractors import check_working_extractor
from .observing import ObserverPass
from .prompts import context_block
from .reflecting import ReflectorPass

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
        *,
        exit_drain: float = EXIT_DRAIN,
    ) -> None:
        self.storage = storage
        self.config = config
        self.exit_drain = exit_drain  # what a pass under way at exit gets, then it is left
        if config.manage_working_memory and (working is None or not working.config.enabled):
            raise ConfigurationError(
                "observational_memory.manage_working_memory needs working memory: "
                'options={"working_memory": {"enabled": True}, ...}'
            )
        working_store = working if working is not None and working.config.enabled else None
        check_working_extractor(config, working_store)
        self.counter = TokenCounter()
        self.reflecting = ReflectorPass(storage, config, self._emit, self._tokens)
        self.observing = ObserverPass(
            storage,
            config,
            self.reflecting,
            self._emit,
            self._tokens,
            working=working_store if config.manage_working_memory else None,
            working_store=working_store,
        )
        self.worker: DaemonWorker | None = None  # (made at the first run; `close` stops it)
        self._running: dict[str, Future[Any]] = {}  # scope -> its run in the worker thread
        self._lock = threading.Lock()

    @classmethod
    def from_option(
        cls,
        storage: MemoryStorage,
        option: bool | dict[str, Any],
        working: WorkingMemoryStore | None = None,
        *,
        exit_drain: float = EXIT_DRAIN,
    ) -> ObservationalMemory | None:
        """The service for ``options["observational_memory"]`` (None when it is off)."""
        config = ObservationalConfig.parse(option)
        return None if config is None else cls(storage, config, working, exit_drain=exit_drain)

    def _emit(
        self, kind: EventKind, key: str, resource_id: str, thread_id: str | None, **detail: Any
    ) -> None:
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
        thread = yield from call(self.storage.get_thread, thread_id)
        if thread is not None and thread.resource_id != resource_id:
            raise ResourceMismatchError.for_thread(thread_id, resource_id)
        key = self.key(thread_id, resource_id)
        log: list[ObservationGroup] = yield from call(self.storage.observation_log, key)
        pending: list[StoredMessage] = yield from call(
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
                self._submit(key, self.observing.run(key, thread_id, resource_id), turn)
                running = self._running.get(key)
            elif self._waited(running, deadline, key, resource_id, thread_id):
                raw = storage.unobserved_tokens(key, resource_id=resource_id, thread_id=thread_id)
                if raw >= config.block_after * config.message_tokens:
                    self._submit(key, self.observing.run(key, thread_id, resource_id), turn)
                    running = self._running.get(key)
                else:
                    running = None
            if running is not None:
                self._waited(running, deadline, key, resource_id, thread_id)
            return
        fresh = storage.unobserved_tokens(
            key, resource_id=resource_id, thread_id=thread_id, buffered=True
        )
        step = config.buffer_step  # None: no buffering, the Observer waits for the threshold
        idle = config.buffer_on_idle and turn_ended(stored[-1].message)
        if fresh > 0 and (raw >= config.message_tokens or (step and fresh >= step) or idle):
            self._submit(key, self.observing.run(key, thread_id, resource_id))

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

    def close(self) -> None:
        """Stop the worker thread (after `flush`: a run still under way is abandoned, its
        lease lapses and its messages wait for the next process)."""
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.stop()

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
                self.worker = DaemonWorker("memory-observer", exit_wait=self.exit_drain)
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
            " it goes on with the log as it is",
            key,
            self.config.turn_wait,
        )
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
            key,
            resource_id=resource_id,
            thread_id=thread_id,
            retain_tokens=self.config.retain_tokens,
        )
        if not activated:
            return raw
        self.observing.activated(activated, key, resource_id, thread_id)
        self._submit(key, self.reflecting.run(key, resource_id))
        return raw - sum(g.message_tokens for g in activated)

    def _tokens(self, text: str) -> float:
        return float(len(self.counter.encoding.encode_ordinary(text)))
