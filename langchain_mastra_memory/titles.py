"""Thread titles written by a chat model after a thread's first user message (Mastra's
``generateTitle``), off the turn's critical path.

With ``options={"generate_title": True}`` (the model of a `Memory.wrap`, else none) or
``{"model": chat_model, "instructions": "..."}``, saving a thread's first user message starts
a background job: it asks the model for a short title (at most 80 characters, no quotes or
colons, as Mastra's prompt says), cleans the reply (reasoning ``<think>`` blocks, quotes,
extra lines) and sets it, unless the thread has a title by then: a title the user set is never
overwritten. A failing model is logged (a warning), never raised into the turn; the next
user message of an untitled thread tries again. `Memory.flush()` waits for pending titles.

Examples:
    >>> clean_title('<think>hmm</think> "Planning a trip: Oslo in May"\\n')
    'Planning a trip Oslo in May'
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from concurrent.futures import Future, wait
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from .config.options import EXIT_DRAIN
from .errors import ConfigurationError
from .pools import DaemonWorker, await_futures
from .storage.base import MemoryStorage
from .storage.records import StoredMessage
from .tracing import detached_context
from .twins import Steps, call, run_sync

logger = logging.getLogger(__name__)

INSTRUCTIONS = """\
- you will generate a short title based on the first message a user begins a conversation with
- ensure it is not more than 80 characters long
- the title should be a summary of the user's message
- do not use quotes or colons
- the entire text you return will be used as the title"""
MAX_CHARS = 80


TITLE_RUN: RunnableConfig = {"run_name": "generate_title", "tags": ["langchain-mastra-memory"]}


def clean_title(text: Any) -> str | None:
    """The title in a model's reply: no reasoning block, quotes or colons, one line, at most
    80 characters (cut at a word); None when nothing is left."""
    if isinstance(text, list):  # content blocks
        text = " ".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in text)
    text = re.sub(r"<think>.*?</think>", " ", str(text), flags=re.S)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    title = re.sub(r"[\"'“”‘’`:]", "", lines[0] if lines else "")
    title = re.sub(r"\s+", " ", title).strip(" .")
    if len(title) > MAX_CHARS:
        title = title[:MAX_CHARS].rsplit(" ", 1)[0]
    return title or None


def title_prompt(message: BaseMessage, instructions: str = INSTRUCTIONS) -> list[BaseMessage]:
    """What the model is asked: the instructions, then the user's first message."""
    return [SystemMessage(instructions), HumanMessage(message.text)]


class TitleWriter:
    """Writes thread titles in the background (see the module docstring)."""

    def __init__(
        self,
        storage: MemoryStorage,
        option: bool | dict[str, Any],
        *,
        exit_drain: float = EXIT_DRAIN,
    ) -> None:
        settings = option if isinstance(option, dict) else {}
        unknown = set(settings) - {"model", "instructions"}
        if unknown:
            raise ConfigurationError(
                f"generate_title takes 'model' and 'instructions', got {sorted(unknown)}"
            )
        model = settings.get("model")
        if model is not None and not isinstance(model, BaseChatModel):
            raise ConfigurationError(
                f"generate_title's model must be a LangChain chat model, got {type(model).__name__}"
            )
        instructions = settings.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise ConfigurationError(
                f"generate_title's instructions must be a string, got {instructions!r}"
            )
        self.storage = storage
        self.enabled = bool(option)
        self.model: BaseChatModel | None = model
        self.instructions: str = settings.get("instructions") or INSTRUCTIONS
        self._attempted: set[str] = set()
        self._lock = threading.Lock()
        self.exit_drain = exit_drain  # a title under way at exit gets this long, then is left
        self._pool: DaemonWorker | None = None
        self._futures: set[Future[None]] = set()
        self._warned = False

    def offer_model(self, model: Any) -> None:
        """The wrapped model, used when the option names none."""
        if self.model is None and isinstance(model, BaseChatModel):
            self.model = model

    def _first_user_message(self, stored: Sequence[StoredMessage]) -> StoredMessage | None:
        if not self.enabled:
            return None
        first = next((s for s in stored if isinstance(s.message, HumanMessage)), None)
        if first is None:
            return None
        if self.model is None:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "generate_title is on but no model is known: pass "
                    "generate_title={'model': chat_model} or use memory.wrap(model)"
                )
            return None
        with self._lock:
            if first.thread_id in self._attempted:
                return None
            self._attempted.add(first.thread_id)
        return first

    def close(self, timeout: float | None = None) -> None:
        """Wait for the titles under way (`timeout`), then stop the worker thread."""
        self.flush(timeout)
        if self._pool is not None:
            self._pool.stop(0.0)  # (a title still running is left: the next save titles)
            self._pool = None

    def after_save(self, stored: Sequence[StoredMessage]) -> None:
        """Start titling the thread of a first user message (returns at once)."""
        if (first := self._first_user_message(stored)) is None:
            return
        if self._pool is None:
            self._pool = DaemonWorker("memory-titles", exit_wait=self.exit_drain)
        # with the turn's tracers: the title is traced as a run of its own
        future = self._pool.submit(detached_context().run, run_sync, self._title(first))
        self._futures.add(future)
        future.add_done_callback(self._futures.discard)

    async def aafter_save(self, stored: Sequence[StoredMessage]) -> None:
        """Async `after_save`: the job runs on the same worker thread, not on this loop, so a
        loop that ends right after the turn (``asyncio.run`` per request) does not cancel it."""
        self.after_save(stored)

    def _title(self, first: StoredMessage) -> Steps[None]:
        thread_id, model = first.thread_id, self.model
        if model is None:  # (scheduled only with one: `_first_user_message`)
            return
        try:
            thread = yield from call(self.storage.get_thread, thread_id)
            if thread is None or thread.title is not None:
                return  # gone, or titled already (by the user, or an earlier run)
            prompt = title_prompt(first.message, self.instructions)
            reply = yield from call(model.invoke, prompt, config=TITLE_RUN)
            title = clean_title(getattr(reply, "content", reply))
            if title is None:
                raise ValueError(f"the model's reply holds no title: {reply!r}")
            thread = yield from call(self.storage.get_thread, thread_id)
            if thread is not None and thread.title is None:  # the user may have set one meanwhile
                yield from call(self.storage.update_thread, thread_id, title=title)
        except Exception as exc:  # a title is never worth a failed turn: retry on the next one
            with self._lock:
                self._attempted.discard(thread_id)
            logger.warning("could not title thread %r: %s", thread_id, exc)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for titles being written by worker threads; False on timeout."""
        pending = list(self._futures)
        return not wait(pending, timeout=timeout).not_done if pending else True

    async def aflush(self, timeout: float | None = None) -> bool:
        """Async `flush` (awaited: no thread is held meanwhile)."""
        return await await_futures(list(self._futures), timeout)
