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
    assert "4417" not in "".join(
        g.text + (g.current_task or "") for g in storage.observation_history(KEY)
    )
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


# -- a clone carries only what it holds ------------------------------------------------------------
THREAD_KEY = "thread:s"


def observed_thread(storage: MemoryStorage) -> dict[str, str]:
    """alice's thread "s": four messages, the first two (a secret) observed in one group, the
    last two in another, both condensed by a reflection; returns message ids by text."""
    storage.create_thread(thread_id="s", resource_id="alice")
    saved = storage.save_messages(
        [HumanMessage("s1: my PIN is 4417"), AIMessage("s2: noted"),
         HumanMessage("s3: I like tea"), AIMessage("s4: green?")],
        thread_id="s", resource_id="alice",
    )  # fmt: skip
    ids = {s.message.content[:2]: s.message.id or "" for s in saved}
    for text, covered in (("* PIN 4417", ["s1", "s2"]), ("* likes tea", ["s3", "s4"])):
        assert storage.claim_observation(THREAD_KEY, owner="test", seconds=60)
        storage.commit_observation(
            THREAD_KEY, owner="test", resource_id="alice", text=text, current_task=None,
            message_ids=[ids[c] for c in covered], token_count=5.0,
        )  # fmt: skip
    return ids


def clone_log(storage: MemoryStorage, thread: str) -> str:
    """Every text of the thread's observation history (not their ids: a random id may hold
    any four digits)."""
    return "\n".join(
        f"{group.text}\n{group.current_task or ''}"
        for group in storage.observation_history(f"thread:{thread}")
    )


@pytest.mark.parametrize(
    "clone",
    [{"message_limit": 0}, {"message_limit": 2}, {"message_filter": {"message_ids": ["s3", "s4"]}}],
    ids=["limit-0", "limit-2", "filter"],
)
def test_a_clone_carries_only_the_observations_of_the_messages_it_copies(
    storage: MemoryStorage, clone: dict
) -> None:
    ids = observed_thread(storage)
    if "message_filter" in clone:
        clone = {"message_filter": {"message_ids": [ids["s3"], ids["s4"]]}}
    _, copied = storage.clone_thread("s", new_thread_id="c", resource_id="alice", **clone)
    storage.transfer_thread("c", to_resource_id="bob", resource_id="alice")
    assert "4417" not in clone_log(storage, "c")  # bob is never told what "s" said of the PIN
    assert "4417" not in "".join(
        f"{group.text}{group.current_task or ''}" for group in storage.observation_log("thread:c")
    )
    if copied:  # the tea group covers exactly the copies: it comes along
        assert "likes tea" in clone_log(storage, "c")
        assert storage.unobserved_messages("thread:c", resource_id="bob", thread_id="c") == []
    else:
        assert clone_log(storage, "c") == ""


def test_a_reflection_comes_along_only_when_everything_it_condensed_does(
    storage: MemoryStorage,
) -> None:
    ids = observed_thread(storage)
    log = storage.observation_log(THREAD_KEY)
    assert storage.claim_observation(THREAD_KEY, owner="test", seconds=60)
    storage.commit_reflection(
        THREAD_KEY, owner="test", resource_id="alice", text="* PIN 4417, likes tea",
        current_task=None, replaces=[g.id for g in log], token_count=5.0,
    )  # fmt: skip
    storage.clone_thread("s", new_thread_id="all", resource_id="alice")
    assert [g.kind for g in storage.observation_log("thread:all")] == ["reflection"]
    storage.clone_thread("s", new_thread_id="half", resource_id="alice", message_limit=2)
    # the reflection also speaks of s1/s2: left behind; the tea group is active again there
    assert [g.text for g in storage.observation_log("thread:half")] == ["* likes tea"]
    assert ids  # (the copies' ids are new)


def test_copies_a_dropped_group_covered_are_observed_again_in_the_clone(
    storage: MemoryStorage,
) -> None:
    """A group covering a copied message and one left behind is not carried: the copy is
    unobserved in the clone, so its own Observer sees it (from its own words)."""
    ids = observed_thread(storage)
    keep = [ids["s2"], ids["s3"], ids["s4"]]
    storage.clone_thread(
        "s", new_thread_id="c", resource_id="alice", message_filter={"message_ids": keep}
    )
    pending = storage.unobserved_messages("thread:c", resource_id="alice", thread_id="c")
    assert [s.message.content[:2] for s in pending] == ["s2", "s3", "s4"]
    assert "4417" not in clone_log(storage, "c")
