"""The Observer pass: what no group covers yet, observed a batch at a time and committed.

Each batch (the oldest messages within ``max_tokens_per_batch``) is one Observer call under
the scope's lease (`leases`), given the log so far (its tail), the working memory it manages,
and the extractors' inputs. Its reply is kept only when usable (`replies`); it is committed as
a *buffered* group (the turn's history does not show it yet). Then the pass keeps what the
extractors read, titles an untitled thread, applies the working memory the Observer rewrote,
activates buffered groups once the messages passed ``message_tokens``, and reflects
(`reflecting`). A failure commits nothing: the messages wait for the next run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from ..errors import MastraMemoryError
from ..storage.records import ObservationGroup, StoredMessage, stored_ids
from ..tokens.counting import TokenCounter
from ..tracing import traced
from ..twins import Steps, call
from .extractors import ExtractorContext, keep_extracted, pass_inputs
from .leases import under_lease
from .prompts import OBSERVER_INSTRUCTIONS, format_entries, with_instruction
from .reflecting import ReflectorPass
from .replies import UnusableReply, log_tail, observation_problem, usable_entries, usable_task
from .runnables import Observer, messages_hook, text_hook

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage
    from ..working_memory.service import WorkingMemoryStore
    from .config import ObservationalConfig

logger = logging.getLogger(__name__)
BATCHES = 1_000  # a bound on one run's batches, never reached: each batch covers messages


class ObserverPass:
    """Observes one scope's waiting messages, as steps (`twins`).

    `working` is the working memory the Observer manages (None: it manages none);
    `working_store` the user's, which extractors read; `emit` reports events
    (`ObservationalMemory._emit`); `tokens` counts a text's tokens.
    """

    def __init__(
        self,
        storage: MemoryStorage,
        config: ObservationalConfig,
        reflect: ReflectorPass,
        emit: Callable[..., None],
        tokens: Callable[[str], float],
        *,
        working: WorkingMemoryStore | None,
        working_store: WorkingMemoryStore | None,
    ) -> None:
        self.storage, self.config, self.reflect = storage, config, reflect
        self.emit, self.tokens = emit, tokens
        self.working, self.working_store = working, working_store
        self.counter = TokenCounter()
        self.observer = Observer(
            config.observer_model or config.model,
            instructions=with_instruction(
                OBSERVER_INSTRUCTIONS, config.observer_instruction or config.instruction
            ),
            temporal_markers=config.temporal_markers,
        )

    def run(self, key: str, thread_id: str, resource_id: str) -> Steps[None]:
        """Observe what no group covers yet, a batch at a time, each committed buffered,
        then activate (at the threshold) and reflect (past the log's)."""
        for _ in range(BATCHES):
            if not (yield from self._batch_run(key, thread_id, resource_id)):
                return

    def activated(
        self, groups: list[ObservationGroup], key: str, resource_id: str, thread_id: str
    ) -> None:
        """Report groups that activation moved into the log (none: nothing to say)."""
        if groups:
            self.emit(
                "activated",
                key,
                resource_id,
                thread_id,
                groups=len(groups),
                message_tokens=sum(g.message_tokens for g in groups),
            )

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

    def _batch_run(self, key: str, thread_id: str, resource_id: str) -> Steps[bool]:
        """One Observer call and what follows it; whether more messages wait."""
        config, ref = self.config, {"resource_id": resource_id, "thread_id": thread_id}
        try:
            done = yield from under_lease(
                self.storage,
                key,
                "observer",
                config.lease_seconds,
                lambda owner: self._observe(
                    key, owner, resource_id=resource_id, thread_id=thread_id
                ),
            )
        except Exception as exc:  # nothing committed: the messages wait for the next run
            logger.warning("observational memory: observing %s failed, retried later: %s", key, exc)
            self.emit("failed", key, resource_id, thread_id, step="observe", error=str(exc))
            return False
        if done is None:  # another run observes this scope now, or nothing waits
            return False
        pending, waiting, raw, parsed, extra, untitled = done
        # (with buffering off, a group over the threshold is never seen waiting: it goes
        # straight into the log below, an ``activated`` event and no ``buffered`` one)
        if config.buffer_step is not None or raw < config.message_tokens:
            self.emit("buffered", key, resource_id, thread_id, messages=len(pending))
        if parsed is not None:
            yield from keep_extracted(self.storage, parsed.extraction, extra, key, self.emit)
            if untitled and parsed.title:
                yield from self._title(thread_id, resource_id, parsed.title)
            if parsed.working_memory is not None and self.working is not None:
                yield from self._update_working_memory(parsed.working_memory, key, **ref)
        if raw >= config.message_tokens:
            activated = yield from call(
                self.storage.activate_observations, key, retain_tokens=config.retain_tokens, **ref
            )
            self.activated(activated, key, resource_id, thread_id)
        yield from self.reflect.run(key, resource_id)
        return len(pending) < len(waiting)

    def _observe(
        self, key: str, owner: str, *, resource_id: str, thread_id: str
    ) -> Steps[tuple[Any, ...] | None]:
        """Under the lease: the batch observed and committed as `owner` (None: nothing
        waits). Its messages, all that waited, the unobserved tokens, the Observer's reply
        (None when the hook withheld every message), the extractors' inputs, and whether
        the Observer was asked for a title."""
        storage = self.storage
        ref: dict[str, Any] = {"resource_id": resource_id, "thread_id": thread_id}
        waiting = yield from call(storage.unobserved_messages, key, buffered=True, **ref)
        log = yield from call(storage.observation_log, key, buffered=True)
        if not waiting:
            return None
        pending = self._batch(waiting)
        self.emit("observing", key, resource_id, thread_id, messages=len(pending))
        read = messages_hook(self.config.hooks, [s.message for s in pending], **ref)
        parsed, untitled, extra = None, False, dict[str, Any]()
        text, task = "", None  # (the hook withheld them all: observed, nothing of them kept)
        if read:
            parsed, extra, untitled = yield from self._observer_call(key, read, pending, log, **ref)
            text = text_hook(
                self.config.hooks,
                "after_observation",
                format_entries(usable_entries(parsed.entries)),
                **ref,
            )
            task = usable_task(parsed.current_task)
        raw = yield from call(storage.unobserved_tokens, key, **ref)  # (as after the commit)
        yield from call(
            storage.commit_observation,
            key,
            owner=owner,
            resource_id=resource_id,
            text=text,
            current_task=task,
            message_ids=stored_ids(pending),
            token_count=self.tokens(text),
            buffered=True,
        )
        return pending, waiting, raw, parsed, extra, untitled

    def _observer_call(
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
        thread = yield from call(self.storage.get_thread, thread_id)
        untitled = self.config.suggest_title and thread is not None and not thread.title
        extra = yield from pass_inputs(
            self.storage,
            self.config.extractors,
            key,
            ExtractorContext("observer", resource_id, thread_id, self.working_store),
        )
        at = {s.message.id: s.created_at for s in pending}
        shown = log_tail(
            "\n".join(g.text for g in log), self.config.previous_observer_tokens, self.tokens
        )
        parsed = yield from traced(
            call(
                self.observer.invoke,
                {
                    "messages": read,
                    "times": [at.get(m.id) for m in read],
                    "log": shown,
                    "suggest_title": untitled,
                    "observe_attachments": self.config.observe_attachments,
                    **document,
                    **extra,
                },
            ),
            "observer",
            inputs={"thread_id": thread_id, "messages": len(read)},
            metadata={"resource_id": resource_id, "thread_id": thread_id},
            outputs=lambda reply: {"entries": len(reply.entries)},
        )
        problem = observation_problem(parsed.entries, read)
        if problem is not None:
            raise UnusableReply(problem)
        return parsed, extra, untitled

    def _working_memory(self, resource_id: str, thread_id: str) -> Steps[dict[str, Any]]:
        """The Observer's view of the working memory it manages ({} when it manages none)."""
        if self.working is None:
            return {}
        current = yield from call(self.working.get, resource_id=resource_id, thread_id=thread_id)
        if self.working.config.mode == "schema":
            shape = " (as a JSON object holding only the fields that change)"
            return {"working_memory": json.dumps(current or {}), "working_memory_shape": shape}
        return {"working_memory": current or self.working.config.template or ""}

    def _update_working_memory(
        self, text: str, key: str, *, resource_id: str, thread_id: str
    ) -> Steps[None]:
        """Apply an Observer's rewrite of the working memory, validated as the tool's are; an
        invalid one is dropped (the observations stand)."""
        assert self.working is not None
        try:
            value: Any = json.loads(text) if self.working.config.mode == "schema" else text
            yield from call(
                self.working.update, value, resource_id=resource_id, thread_id=thread_id
            )
        except (ValueError, MastraMemoryError) as exc:
            logger.warning("observational memory: the Observer's working memory refused: %s", exc)
            self.emit("failed", key, resource_id, thread_id, step="working_memory", error=str(exc))
            return
        self.emit("working_memory_updated", key, resource_id, thread_id)

    def _title(self, thread_id: str, resource_id: str, title: str) -> Steps[None]:
        thread = yield from call(self.storage.get_thread, thread_id)  # (never replaces a title)
        if thread is not None and not thread.title:
            yield from call(
                self.storage.update_thread, thread_id, title=title, resource_id=resource_id
            )
