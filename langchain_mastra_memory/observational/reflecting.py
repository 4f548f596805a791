"""The Reflector pass: the log condensed once it passes ``observation_tokens`` (or, with
rolling archives, its oldest groups archived instead, with no model call: `archives`).

The pass runs under the scope's lease (`leases`). The Reflector reads the whole active log,
with the reflector extractors' inputs, and its reply replaces the log only when it is usable
(`checks.reflection_problem`) and shorter than the log. Otherwise the log stays as it was,
and the pass is not tried again until the log has grown by a quarter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..tracing import traced
from ..twins import Steps, call
from . import archives
from .extractors import ExtractorContext, keep_extracted, pass_inputs
from .leases import under_lease
from .prompts import REFLECTOR_INSTRUCTIONS, format_entries, with_instruction
from .replies import UnusableReply, parse_log, reflection_problem, usable_entries, usable_task
from .runnables import Reflector, text_hook

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage
    from ..storage.records import ObservationGroup
    from .config import ObservationalConfig

logger = logging.getLogger(__name__)


class ReflectorPass:
    """Reflects (or archives) one scope's log, as steps (`twins`).

    `emit` reports events (`ObservationalMemory._emit`); `tokens` counts a text's tokens.
    """

    def __init__(
        self,
        storage: MemoryStorage,
        config: ObservationalConfig,
        emit: Callable[..., None],
        tokens: Callable[[str], float],
    ) -> None:
        self.storage, self.config, self.emit, self.tokens = storage, config, emit, tokens
        self.reflector = Reflector(
            config.reflector_model or config.model,
            instructions=with_instruction(
                REFLECTOR_INSTRUCTIONS, config.reflector_instruction or config.instruction
            ),
        )
        self._retry_at: dict[str, float] = {}  # scope -> log tokens before reflecting again

    def run(self, key: str, resource_id: str) -> Steps[None]:
        """Reflect when the log is over its threshold (archive, with rolling archives)."""
        config = self.config
        if config.archive is not None:  # rolling archives instead: no model call
            yield from archives.archive(
                self.storage, key, resource_id, config.archive, self.emit, config.lease_seconds
            )
            return
        log: list[ObservationGroup] = yield from call(self.storage.observation_log, key)
        tokens = sum(g.token_count for g in log)
        if tokens < max(config.observation_tokens, self._retry_at.get(key, 0.0)):
            return  # under the threshold, or a refused reflection and not much grown since
        try:
            done = yield from under_lease(
                self.storage,
                key,
                "reflector",
                config.lease_seconds,
                lambda owner: self._reflect(key, resource_id, owner, tokens),
            )
        except Exception as exc:  # the log stays as it was; try again once it grew a quarter
            self._retry_at[key] = tokens * 1.25
            logger.warning(
                "observational memory: reflecting %s failed, retried later: %s", key, exc
            )
            self.emit("failed", key, resource_id, None, step="reflect", error=str(exc))
            return
        if done is not None:
            parsed, extra, replaced, text = done
            self.emit(
                "reflected", key, resource_id, None, replaced=replaced, tokens=self.tokens(text)
            )
            yield from keep_extracted(self.storage, parsed.extraction, extra, key, self.emit)

    def _reflect(
        self, key: str, resource_id: str, owner: str, tokens: float
    ) -> Steps[tuple[Any, dict[str, Any], int, str]]:
        """One Reflector call on the log, committed as `owner`: its reply, the extractors'
        inputs, how many groups it replaced, and its text."""
        hooks = self.config.hooks
        log = yield from call(self.storage.observation_log, key)
        whole = text_hook(
            hooks, "before_reflection", "\n".join(g.text for g in log), resource_id=resource_id
        )
        self.emit("reflecting", key, resource_id, None, groups=len(log), tokens=tokens)
        context = ExtractorContext("reflector", resource_id, None)
        extra = yield from pass_inputs(self.storage, self.config.reflector_extractors, key, context)
        parsed = yield from traced(
            call(self.reflector.invoke, {"log": whole, **extra}),
            "reflector",
            inputs={"groups": len(log), "tokens": tokens},
            metadata={"resource_id": resource_id},
            outputs=lambda reply: {"entries": len(reply.entries)},
        )
        problem = reflection_problem(parsed.entries, parse_log(whole).entries)
        if problem is not None:
            raise UnusableReply(problem)
        text = text_hook(
            hooks,
            "after_reflection",
            format_entries(usable_entries(parsed.entries)),
            resource_id=resource_id,
        )
        if self.tokens(text) >= self.tokens(whole):
            raise UnusableReply("the Reflector's reply is no shorter than the log")
        yield from call(
            self.storage.commit_reflection,
            key,
            owner=owner,
            resource_id=resource_id,
            text=text,
            current_task=usable_task(parsed.current_task) or log[-1].current_task,
            replaces=[g.id for g in log],
            token_count=self.tokens(text),
        )
        return parsed, extra, len(log), text
