"""Memory never writes to a standby: a DSN naming only standbys is refused at start, with the
servers and the fix named; a connection that lands on a server in recovery (a DSN without
``target_session_attrs``, the old primary come back as a standby) is refused and replaced, and
the write waits for a primary rather than go anywhere else (issue 86). A split brain, two
servers each believing it is the primary, is the operator's to prevent (fencing, Patroni):
memory cannot tell two primaries apart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from pg_cluster import Cluster

from langchain_mastra_memory import PostgresStorage, StorageError

pytestmark = pytest.mark.postgres


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster.start(tmp_path / "ha", {"standby1": {"sync": True}})
    yield made
    made.close()


def test_a_dsn_of_standbys_only_is_refused_at_start_naming_them(cluster: Cluster) -> None:
    port = cluster.nodes["standby1"].port
    with pytest.raises(StorageError, match="no server of the DSN accepts writes") as found:
        PostgresStorage(cluster.dsn("standby1"), connect_timeout=3)
    assert f"127.0.0.1:{port}/postgres" in str(found.value)
    assert "target_session_attrs=read-write" in str(found.value)  # the fix
    with pytest.raises(StorageError, match=f"127.0.0.1:{port}/postgres is a standby in recovery"):
        PostgresStorage(cluster.nodes["standby1"].conninfo(), connect_timeout=3)  # no attrs
    assert cluster.nodes["standby1"].sql(
        "SELECT count(*) FROM pg_namespace WHERE nspname = 'public'"
    ) == [(1,)]  # (read; nothing was made on it)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_connection_that_lands_on_a_standby_is_refused_and_replaced(
    cluster: Cluster, mode: str
) -> None:
    """A DSN without ``target_session_attrs``: libpq connects to the first server that answers.
    With the primary gone, that is the standby: memory refuses it (nothing written, a clear
    error); once the standby is promoted, the same storage writes again on it."""
    import asyncio

    storage = PostgresStorage(cluster.dsn("primary", "standby1", attrs="any"), connect_timeout=3,
                              pool_timeout=5)  # fmt: skip
    storage.create_thread(thread_id="t", resource_id="alice")

    def save(text: str, id_: str) -> None:
        message = [HumanMessage(text, id=id_)]
        if mode == "sync":
            storage.save_messages(message, thread_id="t", resource_id="alice")
        else:
            asyncio.run(storage.asave_messages(message, thread_id="t", resource_id="alice"))

    try:
        save("before", "m1")
        cluster.kill("primary")
        with pytest.raises(StorageError, match="standby in recovery") as refused:
            save("while only a standby answers", "m2")
        assert "target_session_attrs=read-write" in str(refused.value)
        cluster.promote("standby1")
        save("after the promotion", "m3")
        assert [s.message.id for s in storage.list_messages("t", resource_id="alice")] == [
            "m1", "m3"
        ]  # fmt: skip
    finally:
        storage.close()
