"""Observational memory's log, leases and archives (`observational`; `sql.observations`).

A backend without them raises `NotImplementedError` naming what needs them.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..blocking import off_loop
from ..records import (
    ObservationArchive,
    ObservationGroup,
    StoredMessage,
)

_NO_LOG = (
    "{} does not keep an observational-memory log; observational memory needs SQLiteStorage "
    "or PostgresStorage"
)


class ObservationRecords(ABC):  # noqa: B024 - every method has a default
    """Observational memory's log, leases and archives (part of `MemoryStorage`)."""

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
