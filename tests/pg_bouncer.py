"""PgBouncer in front of the session's PostgreSQL, as a team deploys it (issue 93): Debian's
``pgbouncer`` (`make test` installs it as it installs Chromium), on a free port of 127.0.0.1,
trusting the session's user, in ``transaction`` or ``session`` pooling mode. As root it runs as
the PostgreSQL server's system user (PgBouncer refuses root), as the server does.

``ignore_options`` is the setting most psycopg and asyncpg deployments add to PgBouncer's
config (``ignore_startup_parameters = extra_float_digits,options``): the ``options`` startup
parameter is then accepted and silently dropped instead of refused.

    bouncer = Bouncer.start(tmp_path, dsn, mode="transaction")
    storage = PostgresStorage(bouncer.dsn, schema="tenant_a")
    bouncer.reconnect()  # RECONNECT on the admin console; bouncer.restart(): kill and start
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def binary() -> str:
    """PgBouncer's program; a clear error naming the package when it is missing."""
    found = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if Path(
        "/usr/sbin/pgbouncer").exists() else None)  # fmt: skip
    if found is None:
        raise RuntimeError("PgBouncer is missing: apt-get install pgbouncer (make test does)")
    return found


@dataclass
class Bouncer:
    folder: Path
    port: int
    config: Path
    user: str | None  # the system user it runs as (root: the server's)
    process: subprocess.Popen | None = None

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres?connect_timeout=5"

    @property
    def admin_dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/pgbouncer"

    @classmethod
    def start(
        cls, folder: Path, server_dsn: str, *, mode: str, ignore_options: bool = False,
        pool_size: int = 20,
    ) -> Bouncer:  # fmt: skip
        """PgBouncer on a free port in front of `server_dsn` (a Unix-socket DSN, as the
        session's throwaway server gives)."""
        info = psycopg.conninfo.conninfo_to_dict(server_dsn)
        host = str(info.get("host") or "127.0.0.1")
        port = str(info.get("port") or "5432")
        folder.mkdir(parents=True, exist_ok=True)
        user = None
        if os.geteuid() == 0:  # PgBouncer refuses root: the server's own user
            owner = Path(host).stat().st_uid if host.startswith("/") else 0
            user = pwd.getpwuid(owner).pw_name if owner else "nobody"
        (folder / "users.txt").write_text('"postgres" ""\n')
        listen = _free_port()
        ignored = "extra_float_digits,options" if ignore_options else "extra_float_digits"
        config = folder / "pgbouncer.ini"
        config.write_text(
            "[databases]\n"
            f"* = host={host} port={port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {listen}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {folder / 'users.txt'}\n"
            f"pool_mode = {mode}\nmax_client_conn = 1000\ndefault_pool_size = {pool_size}\n"
            f"ignore_startup_parameters = {ignored}\nadmin_users = postgres\n"
            f"logfile = {folder / 'pgbouncer.log'}\npidfile = {folder / 'pgbouncer.pid'}\n"
            "server_reset_query = DISCARD ALL\n"
        )
        if user is not None:
            folder.chmod(0o755)
            shutil.chown(folder, user)
            for path in folder.iterdir():
                shutil.chown(path, user)
        bouncer = cls(folder, listen, config, user)
        bouncer._run()
        return bouncer

    def _run(self) -> None:
        command = [binary(), *(["-u", self.user] if self.user else []), str(self.config)]
        # its log goes to stderr too: a file, never a pipe nobody reads (a fault's flood of
        # "server login has been failing" fills a pipe, and PgBouncer stops, blocked writing)
        stderr = self.folder / "stderr.log"
        with stderr.open("ab") as sink:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sink)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"PgBouncer did not start: {stderr.read_text()[-2000:]}")
            try:
                with psycopg.connect(self.dsn, autocommit=True) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                time.sleep(0.1)
        raise RuntimeError(f"PgBouncer did not answer on port {self.port}")

    def admin(self, command: str) -> None:
        """A command on PgBouncer's admin console (``RECONNECT``, ``PAUSE``, ...)."""
        with psycopg.connect(self.admin_dsn, autocommit=True, prepare_threshold=None) as conn:
            conn.execute(command)

    def reconnect(self) -> None:
        """Close every server connection as soon as its client lets go of it (``RECONNECT``)."""
        self.admin("RECONNECT")

    def restart(self, down: float = 0.5) -> None:
        """Kill PgBouncer (SIGKILL: every client connection cut), and start it again after
        `down` seconds."""
        self.kill()
        time.sleep(down)
        self._run()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
