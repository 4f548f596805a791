"""Observational memory's side of extractors: the values a pass reads, then what becomes of
them (``on_extracted``, the scope's kept values, an ``extracted`` event each)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ConfigurationError, MastraMemoryError
from ..storage.base import MemoryStorage
from ..twins import Steps, call
from .as_of import owned_key
from .extractors import Extraction, Extractor, ExtractorContext, ResolvedExtractor

logger = logging.getLogger(__name__)


def check_working_extractor(config: Any, working: Any) -> None:
    """`WorkingMemoryExtractor` among the Observer's extractors only, with working memory on
    and not managed by ``manage_working_memory`` as well (`ConfigurationError`)."""
    from .working_extractor import NEEDS_WORKING_MEMORY, WorkingMemoryExtractor

    if any(isinstance(e, WorkingMemoryExtractor) for e in config.reflector_extractors):
        raise ConfigurationError("WorkingMemoryExtractor rides the Observer: put it in extractors")
    if not any(isinstance(e, WorkingMemoryExtractor) for e in config.extractors):
        return
    if working is None:
        raise ConfigurationError(NEEDS_WORKING_MEMORY)
    if config.manage_working_memory:
        raise ConfigurationError("give manage_working_memory or a WorkingMemoryExtractor, not both")


def keeps_working_memory(config: Any) -> bool:
    """Whether the Observer keeps working memory up to date (``manage_working_memory`` or a
    `WorkingMemoryExtractor`): the model is then shown it, not told to call the tool."""
    from .working_extractor import WorkingMemoryExtractor

    return config.manage_working_memory or any(
        isinstance(e, WorkingMemoryExtractor) for e in config.extractors
    )


def pass_inputs(
    storage: MemoryStorage, extractors: Sequence[Extractor], key: str, context: ExtractorContext
) -> Steps[dict[str, Any]]:
    """What an Observer or Reflector call is given for `extractors` ({} when there are none):
    them, settled for this run, and the values kept so far."""
    if not extractors:
        return {}
    resolved = [extractor.resolve(context) for extractor in extractors]
    previous = yield from call(storage.extracted_values, key)
    return {"extractors": resolved, "extracted": previous, "extractor_context": context}


def keep_extracted(
    storage: MemoryStorage,
    extraction: Extraction | None,
    inputs: dict[str, Any],
    key: str,
    emit: Callable[..., None],
) -> Steps[None]:
    """Hand each value to its ``on_extracted``, keep those to persist (one transaction), and
    report each as an ``extracted`` event (a failure as ``failed``, step ``extract``: the
    observations stand, and the value is asked again at the next pass)."""
    if extraction is None:
        return
    context: ExtractorContext = inputs["extractor_context"]
    previous = inputs["extracted"]
    where = (key, context.resource_id, context.thread_id)
    resolved: list[ResolvedExtractor] = inputs["extractors"]
    failures = dict(extraction.failures)
    kept: dict[str, Any] = {}
    reports: list[dict[str, Any]] = []
    for slug, value in extraction.values.items():
        extractor = next(e.extractor for e in resolved if e.slug == slug)
        try:
            final = extractor.extracted(value, previous.get(slug), context)
        except (ValueError, MastraMemoryError) as exc:
            failures[slug] = str(exc)
            continue
        except Exception as exc:  # the application's handler failed: its value is not kept
            failures[slug] = f"on_extracted failed: {exc}"
            continue
        if extractor.persist:
            kept[slug] = final
        reports.append({"slug": slug, "value": final, "previous": previous.get(slug)})
    if kept:
        try:
            yield from call(
                storage.save_extracted_values,
                key,
                kept,
                resource_id=context.resource_id,
                source=context.source,
            )
        except Exception as exc:  # the pass's log stands; the values are asked again next pass
            failures.update({slug: f"not kept: {exc}" for slug in kept})
            reports = [r for r in reports if r["slug"] not in kept]
    for report in reports:
        emit("extracted", *where, source=context.source, **report)
    for slug, error in failures.items():
        logger.warning("observational memory: extractor %r of %s: %s", slug, key, error)
        emit("failed", *where, step="extract", slug=slug, error=error)


def extracted_values(
    storage: MemoryStorage,
    default_scope: Any,
    *,
    resource_id: str,
    thread_id: str | None = None,
    scope: Any = None,
) -> Steps[dict[str, Any]]:
    """Steps of the values the extractors keep for `resource_id`'s scope (`as_of.owned_key`:
    owner-checked), by slug."""
    key = yield from owned_key(storage, default_scope, resource_id, thread_id, scope)
    values: dict[str, Any] = yield from call(storage.extracted_values, key)
    return values
