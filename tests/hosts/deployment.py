"""What runs on the hosts: PostgreSQL and Redis on `data`, a server on `app1` and `app2`.

Each app host's server is `uvicorn --factory tests.support.orchestrator_app:create` (the
app with the test tools) started through `ip netns exec`, so it binds its host's address
and reaches the others over the veth links. Its database traffic goes through the lag
relay on its own loopback (tests/hosts/lag.py: delay on demand), its Redis traffic and
model calls straight over the link. Lease and heartbeat settings are short so that
failures resolve in seconds.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx
from redis.asyncio import Redis

from app.settings import PROJECT_ROOT
from tests.hosts.network import Network
from tests.support.databases import migrate
from tests.support.pg_cluster import Cluster, throwaway_cluster
from tests.support.processes import until

APP_PORT = 8000
LAG_PORT = 15432
FAKETIME_LIBRARY = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
# Short enough that every failure resolves within seconds; long enough that a blip of
# up to 4 s (stretched by TCP's retransmission backoff) takes no host for dead and lets
# no lease lapse (tests/hosts/test_blips.py).
SERVER_SETTINGS = {
    "RUN_LEASE_SECONDS": "12",
    "RUNNER_HEARTBEAT_SECONDS": "0.5",
    "RUNNER_HEARTBEAT_TIMEOUT_SECONDS": "9",
    "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS": "4",
    "DATABASE_STATEMENT_TIMEOUT": "10",
    "RUNNER_POLL_SECONDS": "0.3",
    "RUNNER_DB_RETRY_SECONDS": "30",
    "DATABASE_POOL_TIMEOUT": "5",
    "DATABASE_MAX_CONNECTIONS": "12",
    "WS_TOKEN_CHECK_SECONDS": "5",
    "LOG_LEVEL": "warning",
    "ACCESS_LOG": "0",
    "MCP_DEMO_SERVER": "0",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LLM_MODEL": "openai/fake-model",
    "LLM_API_KEY": "test-key",
    "LLM_MAX_RETRIES": "0",
    "LLM_TIMEOUT_SECONDS": "20",
}

# Every write to a run or a message, with the database's clock and transaction: what
# "no write after a run ended" is checked against (test-only, not a migration).
AUDIT = """
CREATE TABLE chaos_writes (
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    tx bigint NOT NULL DEFAULT txid_current(),
    tbl text NOT NULL, row_id uuid NOT NULL, run_id uuid, status text, seq bigint,
    activity text
);
CREATE FUNCTION chaos_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'runs' THEN
        INSERT INTO chaos_writes (tbl, row_id, run_id, status)
        VALUES ('runs', NEW.id, NEW.id, NEW.status);
    ELSE
        INSERT INTO chaos_writes (tbl, row_id, run_id, seq, activity)
        VALUES ('thread_messages', NEW.id, NEW.run_id, NEW.seq, NEW.tool_activity->>'status');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER chaos_runs AFTER INSERT OR UPDATE ON runs
    FOR EACH ROW EXECUTE FUNCTION chaos_audit();
CREATE TRIGGER chaos_messages AFTER INSERT OR UPDATE ON thread_messages
    FOR EACH ROW EXECUTE FUNCTION chaos_audit();
"""


@dataclass
class DataHost:
    network: Network
    cluster: Cluster
    redis: subprocess.Popen[bytes]
    migrated: bool = False

    @property
    def redis_url(self) -> str:
        return f"redis://{self.network.address('data')}:6379/0"

    async def new_database(self) -> str:
        """A migrated database with the write audit: its name. The first is migrated and
        the rest copied from it (a migration takes seconds; a copy, milliseconds)."""
        template = "hosts_template"
        if not self.migrated:
            await self._admin(f'CREATE DATABASE "{template}"')
            await asyncio.to_thread(migrate, self.cluster.url(template))
            conn = await asyncpg.connect(self.dsn(template))
            try:
                await conn.execute(AUDIT)
            finally:
                await conn.close()
            self.migrated = True
        name = f"hosts_{uuid.uuid4().hex[:10]}"
        await self._admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return name

    async def _admin(self, statement: str) -> None:
        admin = await asyncpg.connect(self.dsn("postgres"))
        try:
            await admin.execute(statement)
        finally:
            await admin.close()

    def dsn(self, database: str) -> str:
        return self.cluster.url(database).replace("postgresql+asyncpg://", "postgresql://")


@contextmanager
def data_host(network: Network, workdir: Path) -> Iterator[DataHost]:
    """PostgreSQL (its own cluster) and Redis, listening on the data host's address."""
    address = network.address("data")
    with throwaway_cluster(listen=address, wrap=tuple(network.exec("data")), port=5432) as pg:
        log = (workdir / "redis.log").open("wb")
        redis = subprocess.Popen(
            [
                *network.exec("data"),
                *("redis-server", "--bind", address, "--port", "6379"),
                *("--save", "", "--appendonly", "no", "--protected-mode", "no"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            asyncio.run(_redis_up(f"redis://{address}:6379/0"))
            yield DataHost(network, pg, redis)
        finally:
            redis.terminate()
            redis.wait(timeout=10)
            log.close()


async def _redis_up(url: str) -> None:
    client = Redis.from_url(url)
    try:
        await until(lambda: _pings(client), timeout=20)
    finally:
        await client.aclose()


async def _pings(client: Redis) -> bool:
    try:
        return bool(await client.ping())
    except OSError:
        return False
    except Exception:  # redis' own ConnectionError while it starts
        return False


@dataclass
class AppHost:
    """A server on one of the app hosts, with its lag relay to the database."""

    name: str
    network: Network
    env: dict[str, str]
    log: Path
    port: int = APP_PORT
    clock_offset: str | None = None  # libfaketime's FAKETIME, e.g. "+30s"
    server: subprocess.Popen[bytes] | None = None
    lag: subprocess.Popen[str] | None = None
    _log_file: object = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{self.network.address(self.name)}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.network.address(self.name)}:{self.port}/api/ws"

    @property
    def pid(self) -> int:
        assert self.server is not None
        return self.server.pid  # `ip netns exec` execs: the server keeps its pid

    def owns(self, lease_owner: str | None) -> bool:
        """Whether a run's lease owner (`host:pid:random`) is this host's server."""
        return lease_owner is not None and lease_owner.split(":")[1] == str(self.pid)

    def start_lag(self, port: int) -> None:
        target = (self.network.address("data"), "5432")
        self.lag = subprocess.Popen(
            [
                *self.network.exec(self.name),
                *(sys.executable, str(Path(__file__).with_name("lag.py")), str(port), *target),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.lag.stdout is not None and self.lag.stdout.readline().strip() == "ready"

    def delay(self, milliseconds: int) -> None:
        """Added round-trip time between this host and the database (0: none)."""
        assert self.lag is not None and self.lag.stdin is not None
        self.lag.stdin.write(f"{milliseconds}\n")
        self.lag.stdin.flush()

    def start(self) -> None:
        env = dict(self.env)
        if self.clock_offset:
            # Only the wall clock: asyncio's monotonic clock is no clock anyone compares.
            env |= {
                "LD_PRELOAD": FAKETIME_LIBRARY,
                "FAKETIME": self.clock_offset,
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            }
        self._log_file = self.log.open("ab")
        self.server = subprocess.Popen(
            [
                *self.network.exec(self.name),
                *(sys.executable, "-m", "uvicorn", "--factory"),
                *(
                    "tests.support.orchestrator_app:create",
                    "--host",
                    self.network.address(self.name),
                ),
                *("--port", str(self.port), "--log-level", "warning"),
            ],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
        )

    async def ready(self) -> None:
        async with httpx.AsyncClient(base_url=self.base_url, timeout=5) as http:

            async def healthy() -> bool:
                assert self.server is not None and self.server.poll() is None, (
                    f"{self.name}'s server exited: see {self.log}"
                )
                try:
                    return (await http.get("/api/health")).status_code == 200
                except httpx.TransportError:
                    return False

            await until(healthy, timeout=300, every=0.2)  # minutes on a loaded machine

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait(timeout=10)
        if self._log_file is not None:
            self._log_file.close()  # type: ignore[attr-defined]

    def stop_lag(self) -> None:
        if self.lag is not None:
            self.lag.kill()
            self.lag.wait(timeout=10)


def app_env(
    database_url: str, llm_base: str, agent_types_file: Path, redis_url: str | None
) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("REDIS")}
    env |= SERVER_SETTINGS | {
        "DATABASE_URL": database_url,
        "LLM_API_BASE": llm_base,
        "AGENT_TYPES_FILE": str(agent_types_file),
        "CHANNELS_PREFIX": f"hosts-{uuid.uuid4().hex[:8]}:",
    }
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env
