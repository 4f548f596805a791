"""`memory.store()`: LangGraph's BaseStore over our storage — the contract (against LangGraph's
own InMemoryStore), semantic search with our embedder, TTL, working memory as an item, a graph
using ``store=`` and ``get_store()``, and langmem's memory tools driven by a scripted model."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import Call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.store.base import InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

from langchain_mastra_memory import Memory, PostgresStorage, SQLiteStorage
from langchain_mastra_memory.integrations.store import MemoryStore, matches
from langchain_mastra_memory.testing import strict_model


def plain_store(storage=None, **options: Any) -> MemoryStore:
    memory = Memory(storage=storage or SQLiteStorage(":memory:"), options=options or None)
    return memory.store(index=False)


def test_put_get_delete_and_namespaces(storage, call: Call) -> None:
    store = Memory(storage=storage).store(index=False)
    call(store, "put", ("alice", "memories"), "m1", {"text": "likes tea", "n": 1})
    call(store, "put", ("alice", "memoriesX"), "m1", {"text": "not under the prefix"})
    call(store, "put", ("alice", "memories", "food"), "m2", {"text": "no peanuts", "n": 5})
    item = call(store, "get", ("alice", "memories"), "m1")
    assert item.value == {"text": "likes tea", "n": 1} and item.namespace == ("alice", "memories")
    assert item.created_at <= item.updated_at
    found = call(store, "search", ("alice", "memories"))
    assert {(i.namespace, i.key) for i in found} == {
        (("alice", "memories"), "m1"),
        (("alice", "memories", "food"), "m2"),
    }  # a prefix is whole labels: ("alice", "memoriesX") is not under ("alice", "memories")
    assert [i.key for i in call(store, "search", ("alice",), filter={"n": {"$gt": 2}})] == ["m2"]
    assert call(store, "list_namespaces", prefix=("alice",)) == [
        ("alice", "memories"),
        ("alice", "memories", "food"),
        ("alice", "memoriesX"),
    ]
    assert call(store, "list_namespaces", max_depth=1) == [("alice",)]
    call(store, "delete", ("alice", "memories"), "m1")
    assert call(store, "get", ("alice", "memories"), "m1") is None
    call(store, "put", ("alice", "memories", "food"), "m2", {"text": "peanuts are fine"})
    assert call(store, "get", ("alice", "memories", "food"), "m2").value == {
        "text": "peanuts are fine"
    }


labels = st.sampled_from(["a", "b", "ab", "a-b", "c"])
namespaces = st.lists(labels, min_size=1, max_size=3).map(tuple)
values = st.fixed_dictionaries(
    {"n": st.integers(0, 5)}, optional={"tag": st.sampled_from(["x", "y"]), "k": st.booleans()}
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), namespaces, st.sampled_from(["k1", "k2"]), values),
        st.tuples(st.just("delete"), namespaces, st.sampled_from(["k1", "k2"])),
    ),
    max_size=20,
)
filters = st.one_of(
    st.none(),
    st.fixed_dictionaries({"n": st.integers(0, 5)}),
    st.fixed_dictionaries({"n": st.sampled_from([{"$gte": 3}, {"$lt": 2}, {"$ne": 1}])}),
    st.fixed_dictionaries({"tag": st.sampled_from(["x", "y"])}),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops, prefix=st.lists(labels, max_size=2).map(tuple), where=filters)
def test_the_same_answers_as_langgraphs_in_memory_store(ops, prefix, where) -> None:
    ours, theirs = plain_store(), InMemoryStore()
    for op in ops:
        for store in (ours, theirs):
            if op[0] == "put":
                store.put(op[1], op[2], op[3])
            else:
                store.delete(op[1], op[2])
    for namespace in {op[1] for op in ops}:
        for key in ("k1", "k2"):
            a, b = ours.get(namespace, key), theirs.get(namespace, key)
            assert (a and a.value) == (b and b.value)
    a = ours.search(prefix, filter=where, limit=100)
    b = theirs.search(prefix, filter=where, limit=100)
    assert sorted((i.namespace, i.key, str(i.value)) for i in a) == sorted(
        (i.namespace, i.key, str(i.value)) for i in b
    )
    held = {i.namespace for i in theirs.search((), limit=1000)}  # InMemoryStore also lists
    for kwargs in ({"prefix": prefix or None}, {"suffix": ("b",)}, {"prefix": ("a", "*")}):
        assert ours.list_namespaces(**kwargs) == sorted(  # namespaces emptied by deletes
            n for n in theirs.list_namespaces(**kwargs) if n in held
        )
    for depth in (1, 2):
        want = {n[:depth] for n in held if n[-1] == "b"}
        assert ours.list_namespaces(suffix=("b",), max_depth=depth) == sorted(want)


def test_search_pages_newest_first() -> None:
    store = plain_store()
    for n in range(5):
        store.put(("docs",), f"d{n}", {"n": n})
    assert [i.key for i in store.search(("docs",), limit=2)] == ["d4", "d3"]
    assert [i.key for i in store.search(("docs",), limit=2, offset=2)] == ["d2", "d1"]
    assert [i.key for i in store.search((), filter={"n": {"$lte": 1}})] == ["d1", "d0"]


@pytest.mark.parametrize(
    ("value", "wanted", "result"),
    [
        ({"a": {"b": 1}}, {"a": {"b": 1}}, True),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}, True),
        ({"a": [1, 2]}, {"a": [1, 2]}, True),
        ({"a": "x"}, {"a": {"$gt": 1}}, False),  # not a number: no match, no error
        ({"a": 3}, {"a": {"$gte": 3, "$lt": 4}}, True),
    ],
)
def test_filters_follow_langgraph(value, wanted, result) -> None:
    assert all(matches(value.get(k), v) for k, v in wanted.items()) is result


def test_an_unknown_filter_operator_is_a_clear_error() -> None:
    store = plain_store()
    store.put(("a",), "k", {"n": 1})
    with pytest.raises(ValueError, match=r"unsupported filter operator '\$in'"):
        store.search(("a",), filter={"n": {"$in": [1]}})


def test_semantic_search_with_our_embedder(call: Call) -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    store = memory.store(index={"fields": ["text"]})
    call(store, "put", ("u1", "memories"), "tea", {"text": "The user drinks green tea daily"})
    call(store, "put", ("u1", "memories"), "bike", {"text": "The user rides a red bicycle"})
    call(store, "put", ("u1", "memories"), "raw", {"text": "unindexed"}, index=False)
    hits = call(store, "search", ("u1",), query="what does the user like to drink?")
    assert [h.key for h in hits[:2]] == ["tea", "bike"]
    assert hits[0].score > hits[1].score > 0
    assert hits[-1].key == "raw" and hits[-1].score is None  # not indexed: after the scored
    assert call(store, "search", ("u2",), query="tea") == []  # another prefix sees nothing


def test_ttl_expires_and_reading_refreshes() -> None:
    store = plain_store()
    store.put(("s",), "short", {"v": 1}, ttl=0.002)  # 0.12 s
    store.put(("s",), "kept", {"v": 2})
    assert store.get(("s",), "short") is not None
    time.sleep(0.08)
    assert store.get(("s",), "short") is not None  # the read restarts its 0.12 s
    time.sleep(0.08)
    assert store.get(("s",), "short", refresh_ttl=False) is not None
    time.sleep(0.1)
    assert store.get(("s",), "short") is None
    assert [i.key for i in store.search(("s",))] == ["kept"]
    store.put(("s",), "other", {"v": 3})  # a write sweeps what expired
    assert store.storage.search_items(("s",)) and len(store.storage.search_items(("s",))) == 2


def test_working_memory_is_the_item_our_tool_and_prompt_see(call: Call) -> None:
    memory = Memory(
        storage=SQLiteStorage(":memory:"), options={"working_memory": {"enabled": True}}
    )
    store = memory.store(index=False)
    assert call(store, "get", ("working_memory", "alice"), "current") is None
    memory.update_working_memory("# User\n- Name: Alice", resource_id="alice")
    item = call(store, "get", ("working_memory", "alice"), "current")
    assert item.value == {"content": "# User\n- Name: Alice"}
    call(store, "put", ("working_memory", "alice"), "current", {"content": "# User\n- Name: Al"})
    assert memory.get_working_memory(resource_id="alice") == "# User\n- Name: Al"
    tool = memory.working_memory_tool(resource_id="alice")
    tool.invoke({"memory": "# User\n- Name: Ally"})
    assert call(store, "get", ("working_memory", "alice"), "current").value == {
        "content": "# User\n- Name: Ally"
    }
    found = call(store, "search", ("working_memory",))
    assert [(i.namespace, i.key) for i in found] == [(("working_memory", "alice"), "current")]
    assert ("working_memory", "alice") in call(store, "list_namespaces")
    with pytest.raises(ValueError, match="content"):
        call(store, "put", ("working_memory", "alice"), "current", {"text": 1})
    assert memory.get_working_memory(resource_id="alice") == "# User\n- Name: Ally"  # intact
    with pytest.raises(InvalidNamespaceError, match="holds the working memory only"):
        call(store, "put", ("working_memory", "alice"), "other", {"content": "x"})
    call(store, "delete", ("working_memory", "alice"), "current")
    assert call(store, "get", ("working_memory", "alice"), "current") is None


def test_thread_scoped_working_memory_item() -> None:
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        options={"working_memory": {"enabled": True, "scope": "thread"}},
    )
    memory.create_thread(thread_id="t1", resource_id="alice")
    store = memory.store(index=False)
    store.put(("working_memory", "alice", "t1"), "current", {"content": "# Trip\n- To: Oslo"})
    assert memory.get_working_memory(resource_id="alice", thread_id="t1") == "# Trip\n- To: Oslo"
    with pytest.raises(InvalidNamespaceError):
        store.get(("working_memory", "alice"), "current")


def test_schema_working_memory_item_is_the_object() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        options={"working_memory": {"enabled": True, "schema": schema}},
    )
    store = memory.store(index=False)
    store.put(("working_memory", "bob"), "current", {"name": "Bob"})
    assert store.get(("working_memory", "bob"), "current").value == {"name": "Bob"}


def test_a_graph_reads_and_writes_through_get_store() -> None:
    from langgraph.config import get_store
    from langgraph.graph import START, MessagesState, StateGraph

    memory = Memory(storage=SQLiteStorage(":memory:"))
    store = memory.store(index=False)

    def remember(state: MessagesState, config) -> dict:
        user = config["configurable"]["user_id"]
        graph_store = get_store()
        graph_store.put((user, "notes"), "last", {"said": state["messages"][-1].content})
        count = len(graph_store.search((user, "notes")))
        return {"messages": [AIMessage(f"{count} note(s)")]}

    graph = StateGraph(MessagesState).add_node(remember).add_edge(START, "remember")
    app = graph.compile(store=store)
    out = app.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"user_id": "u7"}})
    assert out["messages"][-1].content == "1 note(s)"
    assert store.get(("u7", "notes"), "last").value == {"said": "hello"}


def test_langmem_memory_tools_in_an_agent_on_our_store() -> None:
    from langgraph.prebuilt import create_react_agent
    from langmem import create_manage_memory_tool, create_search_memory_tool

    memory = Memory(storage=SQLiteStorage(":memory:"))
    store = memory.store(index={"fields": ["content"]})
    tools = [
        create_manage_memory_tool(namespace=("memories", "{user_id}")),
        create_search_memory_tool(namespace=("memories", "{user_id}")),
    ]
    model = strict_model(
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "manage_memory",
                    "args": {"content": "User is allergic to peanuts", "action": "create"},
                    "id": "call_1",
                }
            ],
        ),
        AIMessage(
            "",
            tool_calls=[{"name": "search_memory", "args": {"query": "allergy"}, "id": "call_2"}],
        ),
        AIMessage("Noted: no peanuts."),
    )
    agent = create_react_agent(model, tools, store=store)
    config = {"configurable": {"user_id": "alice"}}
    out = agent.invoke({"messages": [HumanMessage("Remember I'm allergic to peanuts")]}, config)
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "created memory" in results[0].content
    assert "allergic to peanuts" in results[1].content  # the search found it, by meaning
    stored = store.search(("memories", "alice"))
    assert [i.value["content"] for i in stored] == ["User is allergic to peanuts"]
    assert store.search(("memories", "bob")) == []


def test_a_storage_without_items_names_the_backends() -> None:
    from langchain_mastra_memory.storage.base import MemoryStorage

    with pytest.raises(NotImplementedError, match="needs SQLiteStorage or PostgresStorage"):
        MemoryStorage.put_items(SQLiteStorage(":memory:"), [])  # the interface's default


def test_the_default_index_embeds_the_whole_value_as_langgraphs_stores_do(
    storage, call: Call
) -> None:
    """``fields=["$"]`` (the default) embeds each value's JSON: scored and ranked by meaning,
    in the order LangGraph's InMemoryStore gives with the same embedder."""
    from langgraph.store.memory import InMemoryStore

    memory = Memory(storage=storage)
    ours = memory.store()
    theirs = InMemoryStore(index={"embed": memory.store().embedder, "dims": 384})
    values = {
        "tea": {"note": "drinks green tea every morning", "kind": "habit"},
        "cello": {"note": "plays the cello in an orchestra", "kind": "hobby"},
        "knee": {"note": "hurt a knee skiing", "kind": "health"},
    }
    for key, value in values.items():
        call(ours, "put", ("alice", "memories"), key, value)
        theirs.put(("alice", "memories"), key, value)
    for query in ("a musical instrument", "a hot drink", "an injury"):
        hits = call(ours, "search", ("alice",), query=query)
        expected = theirs.search(("alice",), query=query)
        assert all(h.score is not None for h in hits)
        assert [h.key for h in hits] == [e.key for e in expected]
        assert hits[0].score == pytest.approx(expected[0].score, abs=1e-3)
    assert call(ours, "search", ("bob",), query="a hot drink") == []


def test_query_search_runs_on_the_vector_index_and_never_returns_dead_items(
    storage, call: Call
) -> None:
    """Deleted, expired and unindexed items never come back from the index; filters and
    pages hold; in PostgreSQL the vectors are rows of pgvector's table, kept with the items."""
    import time as clock

    memory = Memory(storage=storage)
    store = memory.store(index={"fields": ["text"]})
    topics = ["tea", "coffee", "cello", "piano", "skiing", "running", "paris", "lisbon"]
    for n, topic in enumerate(topics):
        call(
            store, "put", ("alice", "notes"), topic, {"text": f"alice talks about {topic}", "n": n}
        )
    call(
        store,
        "put",
        ("alice", "notes", "deep"),
        "violin",
        {"text": "alice plays the violin", "n": 9},
    )
    call(store, "put", ("alice", "notes"), "raw", {"text": "music music music"}, index=False)
    call(
        store, "put", ("alice", "notes"), "ttl", {"text": "a short-lived note on music"}, ttl=0.0005
    )
    call(store, "put", ("bob", "notes"), "drums", {"text": "bob plays the drums, music"})
    call(store, "delete", ("alice", "notes"), "piano")
    clock.sleep(0.1)  # the TTL (0.03 s) has passed
    hits = call(store, "search", ("alice",), query="a musical instrument", limit=3)
    assert [h.key for h in hits][:2] == ["violin", "cello"]
    assert {"piano", "ttl", "raw", "drums"}.isdisjoint(h.key for h in hits)
    assert all(h.score is not None for h in hits)
    page = call(store, "search", ("alice",), query="a musical instrument", limit=2, offset=1)
    assert [h.key for h in page] == [h.key for h in hits[1:3]]
    odd = call(store, "search", ("alice",), query="a drink", filter={"n": 1})
    assert [h.key for h in odd] == ["coffee"]
    everything = call(store, "search", ("alice",), query="music", limit=50)
    assert everything[-1].key == "raw" and everything[-1].score is None  # unindexed: last
    assert "bob" not in {h.namespace[0] for h in everything}
    if isinstance(storage, PostgresStorage):
        with storage._transaction(write=False) as conn:
            rows = conn.execute(
                "SELECT namespace, key FROM memory_store_vectors_384 ORDER BY 1, 2"
            ).fetchall()
        assert ("alice.notes", "piano") not in rows and ("alice.notes", "raw") not in rows
        assert ("alice.notes.deep", "violin") in rows and len(rows) == 10  # ttl until purged
