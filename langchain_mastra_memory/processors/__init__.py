"""Memory processors: Runnables that shape remembered messages before they reach the model."""

from .base import FunctionProcessor, MemoryProcessor, processor
from .message_history import MessageHistory
from .semantic_recall import SemanticRecall
from .token_limiter import TokenLimiter, TokenLimiterProcessor
from .tool_call_filter import ToolCallFilter
from .working_memory import WorkingMemory

__all__ = [
    "FunctionProcessor",
    "MemoryProcessor",
    "MessageHistory",
    "SemanticRecall",
    "TokenLimiter",
    "TokenLimiterProcessor",
    "ToolCallFilter",
    "WorkingMemory",
    "processor",
]
