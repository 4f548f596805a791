"""Deleting or giving away a thread unlearns it from the owner's resource-scoped observation
log, by each group's provenance (the messages it covers): nothing derived from that thread is
told to the old owner's model again, and what else the removed groups covered is observed anew."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import MemoryStorage

KEY = "resource:alice"


def observe(storage: MemoryStorage, text: str, ids: list[str]):
    assert storage.claim_observation(KEY, owner="test", seconds=60)
    return storage.commit_observation(
        KEY, owner="test", resource_id="alice", text=text, current_task=None,
        message_ids=ids, token_count=5.0,
    )  # fmt: skip


def reflect(storage: MemoryStorage, text: str, replaces: list[str]):
    assert storage.claim_observation(KEY, owner="test", seconds=60)
    return storage.commit_reflection(
        KEY, owner="test", resource_id="alice", text=text, current_task=None,
        replaces=replaces, token_count=5.0,
    )  # fmt: skip


def two_threads(storage: MemoryStorage) -> dict[str, str]:
    """alice's thread "a" (a secret) and thread "b"; returns message ids by text."""
    for thread in ("a", "b"):
        storage.create_thread(thread_id=thread, resource_id="alice")
    saved = storage.save_messages(
        [HumanMessage("a1: my PIN is 4417"), AIMessage("a2: noted")], thread_id="a",
        resource_id="alice",
    )  # fmt: skip
    saved += storage.save_messages([HumanMessage("b1: I like tea"), AIMessage("b2: green?")],
                                   thread_id="b", resource_id="alice")  # fmt: skip
    return {s.message.content[:2]: s.message.id or "" for s in saved}


def unobserved(storage: MemoryStorage) -> list[str]:
    return [s.message.content[:2]
            for s in storage.unobserved_messages(KEY, resource_id="alice", thread_id=None)]  # fmt: skip


@pytest.mark.parametrize("how", ["delete", "transfer"])
def test_a_mixed_group_goes_and_its_other_messages_are_observed_again(
    storage: MemoryStorage, how: str
) -> None:
    ids = two_threads(storage)
    clean = observe(storage, "* likes tea", [ids["b1"]])
    observe(storage, "* PIN 4417; green tea", [ids["a1"], ids["a2"], ids["b2"]])
    assert unobserved(storage) == []
    if how == "delete":
        assert storage.delete_thread("a", resource_id="alice")
    else:
        storage.transfer_thread("a", to_resource_id="bob", resource_id="alice")
    log = storage.observation_log(KEY, buffered=True)
    assert [g.id for g in log] == [clean.id]  # the clean group before it stays
    assert "4417" not in repr(storage.observation_history(KEY))
    assert unobserved(storage) == ["b2"]  # re-derived by the next Observer run


def test_a_reflection_of_a_tainted_group_goes_with_what_it_condensed(
    storage: MemoryStorage,
) -> None:
    ids = two_threads(storage)
    first = observe(storage, "* likes tea", [ids["b1"]])
    second = observe(storage, "* PIN 4417", [ids["a1"], ids["a2"]])
    reflect(storage, "* tea; PIN 4417", [first.id, second.id])
    later = observe(storage, "* green tea", [ids["b2"]])
    storage.delete_thread("a", resource_id="alice")
    assert storage.observation_history(KEY) == []  # the reflection, what it replaced, and after
    assert later is not None and unobserved(storage) == ["b1", "b2"]


def test_an_untouched_log_stays_as_it_is(storage: MemoryStorage) -> None:
    ids = two_threads(storage)
    group = observe(storage, "* likes tea", [ids["b1"], ids["b2"]])
    storage.create_thread(thread_id="c", resource_id="alice")
    storage.save_messages([HumanMessage("c1")], thread_id="c", resource_id="alice")
    storage.delete_thread("c", resource_id="alice")
    assert [g.id for g in storage.observation_log(KEY)] == [group.id]
    assert unobserved(storage) == []  # the cursor stays where it was
