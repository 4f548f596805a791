"""The package's own exceptions: every error raised on purpose derives from `MastraMemoryError`."""

from __future__ import annotations

from typing import Any


class MastraMemoryError(Exception):
    """Base class of every error langchain-mastra-memory raises on purpose."""


class ConfigurationError(MastraMemoryError, ValueError):
    """An option or argument given by the developer is invalid."""


class EncodingNotAvailableError(ConfigurationError):
    """A tiktoken encoding is unknown, or its BPE file is not on this machine."""


class InvalidMessageError(MastraMemoryError, TypeError):
    """Something that is not a well-formed LangChain message was given where one was expected."""


class ThreadNotFoundError(MastraMemoryError, LookupError):
    """No thread has the given id."""


class ThreadExistsError(MastraMemoryError):
    """A thread with the given id already exists."""


class MessageNotFoundError(MastraMemoryError, LookupError):
    """No stored message has the given id."""


class MessageConflictError(MastraMemoryError):
    """A message id is already stored in another thread."""


class ResourceMismatchError(MastraMemoryError, PermissionError):
    """A thread or message belongs to another resource than the one given."""

    @classmethod
    def for_thread(cls, thread_id: str, resource_id: str) -> ResourceMismatchError:
        """The refusal of `thread_id` to `resource_id`, saying how the owner was found when it
        is the thread id itself (a config naming no ``resource_id``/``user_id``).

        Examples:
            >>> str(ResourceMismatchError.for_thread("t1", "bob"))
            "thread 't1' belongs to another resource than 'bob'"
        """
        msg = f"thread {thread_id!r} belongs to another resource than {resource_id!r}"
        if resource_id == thread_id:
            msg += (
                ": no resource_id or user_id was given, so the thread id stood for the owner "
                '(the rule: config["configurable"]["resource_id"], else "user_id", else the '
                "runtime context's, else Memory(default_resource_id=...), else the thread id); "
                "name the thread's owner in the config"
            )
        return cls(msg)


class ReadOnlyError(MastraMemoryError, PermissionError):
    """A write that a read-only run (``memory_options={"read_only": True}``, or a read-only
    memory) may not make."""


class StorageError(MastraMemoryError):
    """The storage backend cannot be used (not a database, unreadable, or the wrong schema)."""


class SchemaVersionError(StorageError):
    """The database was written by a newer version of this package."""


class WorkingMemoryError(MastraMemoryError, ValueError):
    """A working-memory update was refused (invalid, too large, or would erase data)."""


class VectorStoreError(MastraMemoryError):
    """The vector store cannot be used (unreachable, or a collection of another dimension)."""


class EmbedderChangedError(ConfigurationError):
    """Recall refused: the vector index this memory's embedder names holds none of what storage
    says was embedded (another model or precision built it, or the store was emptied); a search
    would miss everything the other index holds. `Memory.backfill_embeddings()` or the CLI's
    ``reindex`` embeds them into this one."""


class TripWire(MastraMemoryError):
    """A processor refused to go on (Mastra's TripWire); `metadata` says why, in numbers.

    Examples:
        >>> err = TripWire("system messages alone exceed the limit", {"limit": 10})
        >>> err.metadata["limit"]
        10
    """

    def __init__(self, message: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.metadata: dict[str, Any] = dict(metadata or {})


class OrphanToolResultWarning(UserWarning):
    """A `ToolMessage` was saved whose `tool_call_id` matches no earlier tool call in its thread."""


class UnsavedTurnWarning(UserWarning):
    """Memory builds the model's input, but nothing saves the conversation back into memory."""


class VolatileCheckpointsWarning(UserWarning):
    """A persistent memory paired with checkpoints kept in RAM (`InMemorySaver`): the graph's
    state is lost at a restart and unseen by other processes while memory keeps the thread."""


class ReadOnlyHistoryWarning(UserWarning):
    """A chat history of a read-only memory (or run) was asked to add messages: it adds none."""


class BlockingCallError(MastraMemoryError, RuntimeError):
    """A blocking storage call ran on an event loop's thread (seen in the blocking-call test
    mode, `storage.base.forbid_blocking_calls`); use the ``a``-prefixed twin."""
