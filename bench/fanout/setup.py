"""Bench fixtures: a scratch PostgreSQL database, seeded rows, one server process."""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from uuid import UUID

import asyncpg
import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import Thread
from app.lib.security import hash_password, new_token
from app.lib.time import utcnow
from app.settings import PROJECT_ROOT
from app.threads.writer import create_message
from bench.common import add_user_with_agent

PG_ADMIN_DSN = os.environ.get("BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")


def raise_fd_limit() -> int:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


async def _admin(statement: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def create_database() -> tuple[str, str]:
    name = f"bench_fanout_{uuid.uuid4().hex[:10]}"
    await _admin(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    url = f"{base}/{name}"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "alembic", "upgrade", "head",
        cwd=PROJECT_ROOT, env={**os.environ, "DATABASE_URL": url},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _, err = await process.communicate()
    if process.returncode:
        raise RuntimeError(f"migration failed: {err.decode()[-2000:]}")
    return url, name


async def drop_database(name: str) -> None:
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Seed:
    token: str
    thread_ids: list[UUID]
    tool_message_ids: dict[UUID, UUID]  # thread -> its tool message (updated by the writer)


async def seed(factory: async_sessionmaker[AsyncSession], threads: int) -> Seed:
    async with factory() as session:
        token = new_token()
        user, agent = await add_user_with_agent(
            session,
            email=f"bench-{uuid.uuid4().hex[:8]}@example.com",
            password_hash=hash_password("x"),
            token=token,
            agent_type="general",
        )
        rows = [
            Thread(owner_id=user.id, agent_id=agent.id, title=f"t{i}", last_activity_at=utcnow())
            for i in range(threads)
        ]
        session.add_all(rows)
        await session.flush()
        tools = {}
        for thread in rows:
            activity = {"id": "call_1", "name": "tasks", "status": "in_progress",
                        "input": {"action": "create", "title": "Buy milk"},
                        "display_message": "Creating task…", "started_at": utcnow().isoformat()}  # fmt: skip
            message = await create_message(session, thread.id, role="tool", tool_activity=activity)
            tools[thread.id] = message.id
        await session.commit()
        return Seed(token=token, thread_ids=[t.id for t in rows], tool_message_ids=tools)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def system_busy() -> tuple[float, float]:
    """(busy, total) CPU time of the whole machine so far, in clock ticks."""
    with open("/proc/stat") as stat:
        values = [float(v) for v in stat.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


class ServerProcess:
    """`uvicorn app:create_app` (uvloop, websockets-sansio: the defaults) on a free port."""

    def __init__(self, env: dict[str, str]) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.env = env
        self.process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "uvicorn", "app:create_app", "--factory",
            "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning",
            "--backlog", "4096", cwd=PROJECT_ROOT, env=self.env,
        )  # fmt: skip
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}") as http:
            async with asyncio.timeout(60):
                while True:
                    try:
                        if (await http.get("/api/health")).status_code == 200:
                            return
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)

    def rss_kib(self) -> int:
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    async def stop(self) -> None:
        if self.process and self.process.returncode is None:
            self.process.terminate()
            try:
                async with asyncio.timeout(10):
                    await self.process.wait()
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
