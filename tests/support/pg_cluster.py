"""A throwaway PostgreSQL cluster of a test's own, from the system binaries, that the test
may stop (an outage) without touching the shared server.

initdb refuses to run as root, so as root the binaries run as the `postgres` user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def _bindir() -> Path | None:
    if pg_config := shutil.which("pg_config"):
        candidate = Path(subprocess.check_output([pg_config, "--bindir"], text=True).strip())
        if (candidate / "initdb").exists():
            return candidate
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Cluster:
    bindir: Path
    directory: Path
    port: int
    listen: str = "127.0.0.1"  # the address it listens on (a namespace's, in tests/hosts)
    wrap: tuple[str, ...] = ()  # a command prefix the binaries run under (`ip netns exec …`)

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+asyncpg://postgres@{self.listen}:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run([*self.wrap, *command], check=True, capture_output=True)

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.directory} -c fsync=off -c listen_addresses={self.listen}"
        )
        log = str(self.directory / "log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        """An outage: the server dies at once, its connections are cut."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")


def available() -> bool:
    return _bindir() is not None


@contextmanager
def throwaway_cluster(
    listen: str = "127.0.0.1", wrap: tuple[str, ...] = (), port: int | None = None
) -> Iterator[Cluster]:
    """A started cluster (trust auth, superuser `postgres`), removed afterwards."""
    bindir = _bindir()
    assert bindir is not None, "PostgreSQL server binaries (initdb) not found"
    directory = Path(tempfile.mkdtemp(prefix="tc-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres")
    cluster = Cluster(
        bindir=bindir, directory=directory, port=port or _free_port(), listen=listen, wrap=wrap
    )
    try:
        cluster._run("initdb", "-D", str(cluster.data), "-A", "trust", "-U", "postgres")
        if listen != "127.0.0.1":  # initdb trusts only local peers: trust the listen /24
            with (cluster.data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {listen}/24 trust\n")
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
