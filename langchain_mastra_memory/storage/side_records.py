"""What the SQL backends keep beside the conversation, by subject (as `sql` keeps them, one
room each): LangGraph store items, the ids read-only turns withheld (never to be stored), a
graph's message lists, retention's reads, and observational memory's log, each with its async
twins. `MemoryStorage` is `ConversationStorage` and these; a backend without a subject raises
`NotImplementedError` naming what needs it.

Example:
    >>> from langchain_mastra_memory import SQLiteStorage
    >>> SQLiteStorage(":memory:").withheld_ids(["m1"], thread_id="t1")
    set()
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from .blocking import off_loop
from .records import (
    CheckpointList,
    CheckpointValue,
    ItemWrite,
    ObservationArchive,
    ObservationGroup,
    StoredItem,
    StoredMessage,
    Thread,
)

_NO_ITEMS = (
    "{} does not keep LangGraph store items; memory.store() needs SQLiteStorage or "
    "PostgresStorage (or a storage implementing put_items/get_items/search_items)"
)

_NO_WITHHELD = (
    "{} cannot remember the messages of read-only turns (read_only needs SQLiteStorage or "
    "PostgresStorage, or a storage implementing withhold_messages/withheld_ids)"
)

_NO_LISTS = (
    "{} does not keep checkpoint message lists (MemoryCheckpointer stores each message once in "
    "SQLiteStorage or PostgresStorage; elsewhere the saver keeps whole lists)"
)

_NO_RETENTION = (
    "{} does not support retention (memory.prune() needs SQLiteStorage or PostgresStorage)"
)

_NO_LOG = (
    "{} does not keep an observational-memory log; observational memory needs SQLiteStorage "
    "or PostgresStorage"
)


class SideRecords(ABC):  # noqa: B024 - every method has a default
    """Every subject's records, with their async twins (part of `MemoryStorage`)."""

    # -- LangGraph store items (`memory.store()`, `store.MemoryStore`) -------------------------
    def put_items(self, writes: Sequence[ItemWrite]) -> None:
        """Apply item puts and deletes in one transaction."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def get_items(
        self, refs: Sequence[tuple[tuple[str, ...], str]], *, refresh_ttl: bool = True
    ) -> list[StoredItem | None]:
        """The live item at each (namespace, key), or None."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def search_items(
        self,
        prefix: tuple[str, ...],
        *,
        limit: int | None = None,
        offset: int = 0,
        refresh_ttl: bool = False,
    ) -> list[StoredItem]:
        """Live items under a namespace prefix, most recently updated first."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def delete_items_labelled(self, label: str) -> int:
        """Delete every item whose namespace has `label` as a label; how many went."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def item_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace holding a live item."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def nearest_items(
        self, prefix: tuple[str, ...], vector: Sequence[float], *, limit: int
    ) -> list[tuple[tuple[str, ...], str, float]]:
        """The live items under `prefix` nearest `vector`: (namespace, key, cosine), best
        first."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def working_memories(
        self, resource_id: str | None = None
    ) -> list[tuple[str, str | None, str, datetime]]:
        """``(resource_id, thread_id or None, text, updated_at)`` of stored working memories."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    async def aput_items(self, writes: Sequence[ItemWrite]) -> None:
        """Async `put_items`."""
        await off_loop(self.put_items, writes)

    async def aget_items(
        self, refs: Sequence[tuple[tuple[str, ...], str]], *, refresh_ttl: bool = True
    ) -> list[StoredItem | None]:
        """Async `get_items`."""
        return await off_loop(self.get_items, refs, refresh_ttl=refresh_ttl)

    async def asearch_items(
        self,
        prefix: tuple[str, ...],
        *,
        limit: int | None = None,
        offset: int = 0,
        refresh_ttl: bool = False,
    ) -> list[StoredItem]:
        """Async `search_items`."""
        return await off_loop(
            self.search_items, prefix, limit=limit, offset=offset, refresh_ttl=refresh_ttl
        )

    async def anearest_items(
        self, prefix: tuple[str, ...], vector: Sequence[float], *, limit: int
    ) -> list[tuple[tuple[str, ...], str, float]]:
        """Async `nearest_items`."""
        return await off_loop(self.nearest_items, prefix, vector, limit=limit)

    async def aitem_namespaces(self) -> list[tuple[str, ...]]:
        """Async `item_namespaces`."""
        return await off_loop(self.item_namespaces)

    async def aworking_memories(
        self, resource_id: str | None = None
    ) -> list[tuple[str, str | None, str, datetime]]:
        """Async `working_memories`."""
        return await off_loop(self.working_memories, resource_id)

    # -- the ids of messages read-only turns left in a graph's state (never to be stored) -----
    def withhold_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> None:
        """Remember that these messages of `thread_id` are never to be stored (a read-only
        turn's, left in a graph's state)."""
        raise NotImplementedError(_NO_WITHHELD.format(type(self).__name__))

    def withheld_ids(self, message_ids: Sequence[str], *, thread_id: str) -> set[str]:
        """Those of `message_ids` withheld from `thread_id` (`withhold_messages`)."""
        raise NotImplementedError(_NO_WITHHELD.format(type(self).__name__))

    async def awithhold_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> None:
        """Async `withhold_messages`."""
        await off_loop(
            self.withhold_messages, message_ids, thread_id=thread_id, resource_id=resource_id
        )

    async def awithheld_ids(self, message_ids: Sequence[str], *, thread_id: str) -> set[str]:
        """Async `withheld_ids`."""
        return await off_loop(self.withheld_ids, message_ids, thread_id=thread_id)

    # -- a graph's message lists, each value once (`integrations.checkpointer.channel`) --------
    def save_checkpoint_list(
        self,
        entry: CheckpointList,
        values: Sequence[CheckpointValue] = (),
        *,
        resource_id: str | None = None,
    ) -> None:
        """Store a checkpoint's message list and the values it adds (in a thread of
        `resource_id`, when given)."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def read_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] | None = None,
    ) -> tuple[list[str], int, dict[str, CheckpointValue]] | None:
        """A checkpoint's stored list: its keys, depth and the values not `known`."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def read_thread_and_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] = (),
    ) -> tuple[Thread | None, tuple[list[str], int, dict[str, CheckpointValue]] | None]:
        """The thread now and a checkpoint's stored list (`read_checkpoint_list`), together."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def copy_checkpoint_lists(self, source_thread_id: str, target_thread_id: str) -> None:
        """Give a thread copy the source thread's lists and values."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def blank_checkpoint_values(self, thread_id: str, message_ids: Sequence[str]) -> int:
        """Blank these messages' values in the thread's lists (retention)."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def sweep_checkpoint_lists(
        self,
        thread_id: str,
        keep: Collection[tuple[str, str]],
        doomed: Collection[tuple[str, str]] | None = None,
    ) -> int:
        """Delete the list rows no kept checkpoint reaches, and unused values."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    async def asave_checkpoint_list(
        self,
        entry: CheckpointList,
        values: Sequence[CheckpointValue] = (),
        *,
        resource_id: str | None = None,
    ) -> None:
        """Async `save_checkpoint_list`."""
        await off_loop(self.save_checkpoint_list, entry, values, resource_id=resource_id)

    async def aread_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] | None = None,
    ) -> tuple[list[str], int, dict[str, CheckpointValue]] | None:
        """Async `read_checkpoint_list`."""
        return await off_loop(
            self.read_checkpoint_list, thread_id, checkpoint_ns, checkpoint_id, known=known
        )

    async def aread_thread_and_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] = (),
    ) -> tuple[Thread | None, tuple[list[str], int, dict[str, CheckpointValue]] | None]:
        """Async `read_thread_and_checkpoint_list`."""
        return await off_loop(
            self.read_thread_and_checkpoint_list,
            thread_id,
            checkpoint_ns,
            checkpoint_id,
            known=known,
        )

    async def acopy_checkpoint_lists(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async `copy_checkpoint_lists`."""
        await off_loop(self.copy_checkpoint_lists, source_thread_id, target_thread_id)

    async def ablank_checkpoint_values(self, thread_id: str, message_ids: Sequence[str]) -> int:
        """Async `blank_checkpoint_values`."""
        return await off_loop(self.blank_checkpoint_values, thread_id, message_ids)

    async def asweep_checkpoint_lists(
        self,
        thread_id: str,
        keep: Collection[tuple[str, str]],
        doomed: Collection[tuple[str, str]] | None = None,
    ) -> int:
        """Async `sweep_checkpoint_lists`."""
        return await off_loop(self.sweep_checkpoint_lists, thread_id, keep, doomed)

    # -- retention's reads ---------------------------------------------------------------------
    def aged_messages(self, before: datetime, limit: int) -> list[tuple[str, str, str]]:
        """Messages created before `before`, oldest first: (id, thread, owner)."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    def idle_threads(self, before: datetime, limit: int) -> list[tuple[str, str]]:
        """Threads last active before `before`: (id, owner)."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    def delete_aged_observations(self, before: datetime, limit: int) -> int:
        """Delete observation groups written before `before`; how many went."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    def aged_items(self, before: datetime, limit: int) -> list[tuple[tuple[str, ...], str]]:
        """Store items with no time to live, last written before `before`."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    def drop_observation_sources(
        self, message_ids: list[str], *, thread_id: str, resource_id: str
    ) -> int:
        """Take pruned messages out of their logs' provenance."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    async def adrop_observation_sources(
        self, message_ids: list[str], *, thread_id: str, resource_id: str
    ) -> int:
        """Async `drop_observation_sources`."""
        return await off_loop(
            self.drop_observation_sources,
            message_ids,
            thread_id=thread_id,
            resource_id=resource_id,
        )

    async def aaged_messages(self, before: datetime, limit: int) -> list[tuple[str, str, str]]:
        """Async `aged_messages`."""
        return await off_loop(self.aged_messages, before, limit)

    async def aidle_threads(self, before: datetime, limit: int) -> list[tuple[str, str]]:
        """Async `idle_threads`."""
        return await off_loop(self.idle_threads, before, limit)

    async def adelete_aged_observations(self, before: datetime, limit: int) -> int:
        """Async `delete_aged_observations`."""
        return await off_loop(self.delete_aged_observations, before, limit)

    async def aaged_items(self, before: datetime, limit: int) -> list[tuple[tuple[str, ...], str]]:
        """Async `aged_items`."""
        return await off_loop(self.aged_items, before, limit)

    # -- observational memory's log ------------------------------------------------------------
    def observation_log(self, key: str, *, buffered: bool = False) -> list[ObservationGroup]:
        """The active groups of an observation scope, oldest first (then, with `buffered`,
        the groups waiting for activation)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def observations_as_of(self, key: str, at: datetime) -> list[ObservationGroup]:
        """The log of an observation scope as it stood at `at`, oldest first: the groups that
        had joined it by then (an observation when it was activated, a reflection when it
        was committed), minus those a reflection committed by then had replaced."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def extracted_values(self, key: str) -> dict[str, Any]:
        """The values extractors keep for an observation scope, by slug (JSON values)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def save_extracted_values(
        self, key: str, values: Mapping[str, Any], *, resource_id: str, source: str
    ) -> None:
        """Keep `values` (by slug) for the scope, each replacing the one kept before;
        `source` says which pass found them (``"observer"`` or ``"reflector"``)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def unobserved_messages(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> list[StoredMessage]:
        """The scope's messages after its cursor (`buffered`: after its buffer frontier)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def unobserved_tokens(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> float:
        """The stored token count of `unobserved_messages`."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def claim_observation(self, key: str, *, owner: str, seconds: float) -> bool:
        """Take the scope's lease unless another owner holds a live one."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def release_observation(self, key: str, *, owner: str) -> None:
        """Give the scope's lease back."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def commit_observation(
        self,
        key: str,
        *,
        owner: str,
        resource_id: str,
        text: str,
        current_task: str | None,
        message_ids: Sequence[str],
        token_count: float,
        buffered: bool = False,
    ) -> ObservationGroup | None:
        """Store an Observer's group, move the cursor (`buffered`: only the buffer frontier)
        and release the lease (one transaction)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def activate_observations(
        self, key: str, *, resource_id: str, thread_id: str | None, retain_tokens: float
    ) -> list[ObservationGroup]:
        """Turn the oldest buffered groups active, leaving about `retain_tokens` unobserved."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def commit_reflection(
        self,
        key: str,
        *,
        owner: str,
        resource_id: str,
        text: str,
        current_task: str | None,
        replaces: Sequence[str],
        token_count: float,
    ) -> ObservationGroup | None:
        """Store a Reflector's group in place of the groups it condensed, release the lease."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def commit_archive(
        self, key: str, *, owner: str, resource_id: str, retires: Sequence[str]
    ) -> ObservationArchive | None:
        """Move the `retires` groups out of the log into a new archive (rolling archives) and
        release the lease; None if the lease is lost or one of them left the log."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def observation_archives(
        self, keys: Sequence[str], *, limit: int, offset: int = 0
    ) -> list[ObservationArchive]:
        """The archives of the scopes `keys`, newest first (`limit` after the first
        `offset`)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def observation_archive(self, archive_id: str) -> ObservationArchive | None:
        """One archive by id, whichever scope holds it (the caller checks whose it is)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    async def acommit_archive(
        self, key: str, *, owner: str, resource_id: str, retires: Sequence[str]
    ) -> ObservationArchive | None:
        """Async `commit_archive`."""
        return await off_loop(
            self.commit_archive, key, owner=owner, resource_id=resource_id, retires=retires
        )

    async def aobservation_archives(
        self, keys: Sequence[str], *, limit: int, offset: int = 0
    ) -> list[ObservationArchive]:
        """Async `observation_archives`."""
        return await off_loop(self.observation_archives, keys, limit=limit, offset=offset)

    async def aobservation_archive(self, archive_id: str) -> ObservationArchive | None:
        """Async `observation_archive`."""
        return await off_loop(self.observation_archive, archive_id)

    async def aobservation_log(self, key: str, *, buffered: bool = False) -> list[ObservationGroup]:
        """Async `observation_log`."""
        return await off_loop(self.observation_log, key, buffered=buffered)

    async def aobservations_as_of(self, key: str, at: datetime) -> list[ObservationGroup]:
        """Async `observations_as_of`."""
        return await off_loop(self.observations_as_of, key, at)

    async def aextracted_values(self, key: str) -> dict[str, Any]:
        """Async `extracted_values`."""
        return await off_loop(self.extracted_values, key)

    async def asave_extracted_values(
        self, key: str, values: Mapping[str, Any], *, resource_id: str, source: str
    ) -> None:
        """Async `save_extracted_values`."""
        await off_loop(
            self.save_extracted_values, key, values, resource_id=resource_id, source=source
        )

    async def aunobserved_messages(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> list[StoredMessage]:
        """Async `unobserved_messages`."""
        return await off_loop(
            self.unobserved_messages,
            key,
            resource_id=resource_id,
            thread_id=thread_id,
            buffered=buffered,
        )

    async def aunobserved_tokens(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> float:
        """Async `unobserved_tokens`."""
        return await off_loop(
            self.unobserved_tokens,
            key,
            resource_id=resource_id,
            thread_id=thread_id,
            buffered=buffered,
        )

    async def aactivate_observations(
        self, key: str, *, resource_id: str, thread_id: str | None, retain_tokens: float
    ) -> list[ObservationGroup]:
        """Async `activate_observations`."""
        return await off_loop(
            self.activate_observations,
            key,
            resource_id=resource_id,
            thread_id=thread_id,
            retain_tokens=retain_tokens,
        )

    async def aclaim_observation(self, key: str, *, owner: str, seconds: float) -> bool:
        """Async `claim_observation`."""
        return await off_loop(self.claim_observation, key, owner=owner, seconds=seconds)

    async def arelease_observation(self, key: str, *, owner: str) -> None:
        """Async `release_observation`."""
        await off_loop(self.release_observation, key, owner=owner)

    async def acommit_observation(
        self,
        key: str,
        *,
        owner: str,
        resource_id: str,
        text: str,
        current_task: str | None,
        message_ids: Sequence[str],
        token_count: float,
        buffered: bool = False,
    ) -> ObservationGroup | None:
        """Async `commit_observation`."""
        return await off_loop(
            self.commit_observation,
            key,
            owner=owner,
            resource_id=resource_id,
            text=text,
            current_task=current_task,
            message_ids=message_ids,
            token_count=token_count,
            buffered=buffered,
        )

    async def acommit_reflection(
        self,
        key: str,
        *,
        owner: str,
        resource_id: str,
        text: str,
        current_task: str | None,
        replaces: Sequence[str],
        token_count: float,
    ) -> ObservationGroup | None:
        """Async `commit_reflection`."""
        return await off_loop(
            self.commit_reflection,
            key,
            owner=owner,
            resource_id=resource_id,
            text=text,
            current_task=current_task,
            replaces=replaces,
            token_count=token_count,
        )
