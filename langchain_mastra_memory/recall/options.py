"""`semantic_recall`'s options: how many hits, their neighbours, scope, mode, filter.

Examples:
    >>> RecallOptions.parse({"top_k": 3, "message_range": 2}).window
    MessageRange(before=2, after=2)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..storage.filters import check_filter
from ..storage.validation import validated
from .ranking import check_reranker

if TYPE_CHECKING:
    from ..storage.records import TimeWindow

Mode = Literal["vector", "keyword", "hybrid"]
# Chosen by bench/recall_eval.py on real multi-session chat (LoCoMo dev; README, "Recall
# quality"): hybrid beats keyword and vector alone.
DEFAULT_MODE: Mode = "hybrid"


class MessageRange(BaseModel):
    """How many neighbours come with each hit."""

    model_config = ConfigDict(extra="forbid", strict=True)
    before: int = Field(default=1, ge=0)
    after: int = Field(default=1, ge=0)


class RecallOptions(BaseModel):
    """``semantic_recall`` options (Mastra's ``topK``, ``messageRange``, ``scope``, ...)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    top_k: int = Field(default=4, gt=0, le=100)
    message_range: int | MessageRange = 1
    scope: Literal["thread", "resource"] = "resource"
    threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    index_name: str | None = None
    mode: Mode = DEFAULT_MODE
    # recall only from threads whose metadata matches (LangGraph's operators; Mastra's
    # ``semanticRecall.filter``)
    filter: dict[str, Any] | None = None
    # the second stage over the first stage's top `rerank_pool`: the conversation around each
    # candidate (`context`; 0 turns it off), then, if given, a LangChain BaseDocumentCompressor
    # fused with that order by reciprocal rank (`rerank`; `rerank_weight`: its share)
    context_weight: float = Field(default=2.0, ge=0.0)
    # with it, the message right after each of the top `follow_ups` candidates joins the pool
    # (the turn answering a question that matched), and a candidate in a thread where the
    # pool's ten best gather gains up to `thread_weight` (a session keeps to its topics)
    follow_ups: int = Field(default=10, ge=0, le=200)
    thread_weight: float = Field(default=0.5, ge=0.0)
    reranker: Any = None
    rerank_pool: int = Field(default=30, gt=0, le=200)
    rerank_weight: float = Field(default=1.0, ge=0.0)
    # a query naming a calendar date ("on October 13", "in June 2023") puts the pool's messages
    # of that date first (`dates`)
    date_rule: bool = True

    @field_validator("message_range")
    @classmethod
    def _no_negative_range(cls, value: int | MessageRange) -> int | MessageRange:
        if isinstance(value, int) and value < 0:
            raise ValueError(f"message_range must be >= 0, got {value}")
        return value

    @field_validator("reranker")
    @classmethod
    def _a_compressor(cls, value: Any) -> Any:
        return check_reranker(value)

    @field_validator("filter")
    @classmethod
    def _known_operators(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else check_filter(value, "semantic_recall filter")

    @property
    def window(self) -> MessageRange:
        """`message_range` as before/after counts."""
        if isinstance(self.message_range, MessageRange):
            return self.message_range
        return MessageRange(before=self.message_range, after=self.message_range)

    @classmethod
    def parse(cls, options: bool | dict[str, Any] | RecallOptions | None) -> RecallOptions:
        """Validate options given as ``True`` or a dict."""
        return validated(cls, options, "semantic_recall options")


class SearchOptions(TypedDict, total=False):
    """What one `RecallIndex.search` may change: `thread_id` (with `within_thread`: search it
    only; default: the options' scope), `limit`, `mode`, and a creation-time `window`."""

    thread_id: str | None
    limit: int | None
    mode: Mode | None
    within_thread: bool | None
    window: TimeWindow | None
