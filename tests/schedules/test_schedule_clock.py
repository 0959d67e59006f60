"""A daily 08:00 schedule in Europe/Berlin, run by a real server whose clock is moved
across both daylight-saving changes: each run starts at 08:00 local, and the next time is
the right UTC instant.

"The clock" is the database's (app/db/clock.py): on PostgreSQL the server measures its
offset from the database server's clock, so moving the app's clock alone would be
corrected away. Here both are moved: the app server (a uvicorn process) and, on
PostgreSQL, a database cluster of the test's own run under libfaketime, reading one
offset from one file (SQLite is in the app's process: its clock is the app's). Moving
the clock is rewriting that file; the real scheduler, runner and timestamps do the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from app.db.models import Run, Schedule
from tests.conftest import ApiUser, make_api_user
from tests.hosts.deployment import FAKETIME_LIBRARY
from tests.orchestrator.conftest import agent_types_file, fake_llm
from tests.support.databases import DIALECTS, migrate, sqlite_url
from tests.support.fake_llm import FakeLLM, Text
from tests.support.pg_cluster import available, throwaway_cluster
from tests.support.processes import free_port, server_env, start_server, until, wait_ready

__all__ = ("agent_types_file", "fake_llm")
BERLIN = ZoneInfo("Europe/Berlin")
# Berlin springs forward on 2026-03-29 and falls back on 2026-10-25.
MORNINGS = [
    datetime(2026, 3, 28, 7, tzinfo=UTC),  # 08:00 CET
    datetime(2026, 3, 29, 6, tzinfo=UTC),  # 08:00 CEST, the first day of summer time
    datetime(2026, 10, 24, 6, tzinfo=UTC),  # 08:00 CEST
    datetime(2026, 10, 25, 7, tzinfo=UTC),  # 08:00 CET, the first day of winter time
]
# The next time after each, as the schedule must say (08:00 local the next day, in UTC).
FOLLOWING = [
    MORNINGS[1],
    datetime(2026, 3, 30, 6, tzinfo=UTC),
    MORNINGS[3],
    datetime(2026, 10, 26, 7, tzinfo=UTC),
]
LEAD = timedelta(seconds=4)  # the clock is moved this long before a morning
ON_TIME = timedelta(seconds=5)  # a run starts within this after its time (a loaded host)


@dataclass
class MovedClock:
    """libfaketime's offset, read from one file by every process started with `env`."""

    file: Path

    @property
    def env(self) -> dict[str, str]:
        return {
            "LD_PRELOAD": FAKETIME_LIBRARY,
            "FAKETIME_TIMESTAMP_FILE": str(self.file),
            "FAKETIME_CACHE_DURATION": "1",  # a move is seen within a second
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",  # asyncio's sleeps stay real
            # Files' times stay true: Python checks its cached bytecode by them (moved,
            # every import would compile again).
            "NO_FAKE_STAT": "1",
        }

    def set(self, at: datetime) -> None:
        offset = round(at.timestamp() - time.time())
        self.file.write_text(f"{offset:+d}s\n")

    async def move_to(self, at: datetime) -> None:
        self.set(at)
        await asyncio.sleep(1.2)  # every process's cache of the old offset has expired


@pytest.fixture
def moved_clock() -> Iterator[MovedClock]:
    if not os.path.exists(FAKETIME_LIBRARY):
        pytest.skip(f"libfaketime is not installed ({FAKETIME_LIBRARY}): apt-get install faketime")
    directory = Path(tempfile.mkdtemp(prefix="tc-clock-"))
    directory.chmod(0o755)  # the database server's user reads it too
    clock = MovedClock(directory / "faketime")
    clock.file.write_text("+0s\n")
    clock.file.chmod(0o644)
    started = time.time()
    try:
        yield clock
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        _remove_stale_faketime_memory(since=started)


def _remove_stale_faketime_memory(since: float) -> None:
    """libfaketime's shared memory of processes that ended without its clean-up (killed,
    or exec'd away), made during this test: a later process given the same pid would
    fail to start (libfaketime's README, "Cleaning up shared memory")."""
    for path in Path("/dev/shm").glob("*faketime_s*_*"):
        pid = path.name.rsplit("_", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                if path.stat().st_mtime >= since:
                    path.unlink()


@contextmanager
def database(dialect: str, clock: MovedClock, tmp_path: Path) -> Iterator[str]:
    """A migrated database whose clock is `clock` (PostgreSQL: a cluster of its own)."""
    if dialect == "sqlite":
        url = sqlite_url(tmp_path)
        migrate(url)
        yield url
        return
    if not available():
        pytest.skip("PostgreSQL server binaries (initdb) not found")
    wrap = ("env", *(f"{key}={value}" for key, value in clock.env.items()))
    with throwaway_cluster(wrap=wrap) as cluster:
        migrate(cluster.url())
        yield cluster.url()


@dataclass
class Deployment:
    http: httpx.AsyncClient
    sessions: async_sessionmaker[AsyncSession]
    user: ApiUser

    async def runs(self, thread_id: str) -> list[Run]:
        async with self.sessions() as session:
            query = select(Run).where(Run.thread_id == UUID(thread_id)).order_by(Run.created_at)
            return list(await session.scalars(query))

    async def schedule(self, schedule_id: str) -> Schedule:
        async with self.sessions() as session:
            schedule = await session.get(Schedule, UUID(schedule_id))
            assert schedule is not None
            return schedule

    async def wait_runs(self, thread_id: str, count: int) -> list[Run]:
        async def ended() -> list[Run] | None:
            runs = await self.runs(thread_id)
            return runs if sum(r.finished_at is not None for r in runs) >= count else None

        return await until(ended, timeout=30)


@pytest.fixture(params=DIALECTS)
async def deployment(
    request: pytest.FixtureRequest,
    moved_clock: MovedClock,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    tmp_path: Path,
) -> AsyncIterator[Deployment]:
    """The app server (its clock moved) on a database whose clock moves with it."""
    moved_clock.set(MORNINGS[0] - timedelta(days=1))
    with database(request.param, moved_clock, tmp_path) as url:
        env = server_env(url, fake_llm, agent_types_file, REMINDER_POLL_SECONDS="0.5")
        port = free_port()
        server = start_server(port, env | moved_clock.env)
        engine = create_async_engine(url)
        try:
            sessions = async_sessionmaker(engine, expire_on_commit=False)
            async with sessions() as session:
                user = await make_api_user(session)
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base, headers=user.headers, timeout=30) as http:
                await wait_ready(http)
                yield Deployment(http, sessions, user)
        finally:
            server.terminate()  # a clean exit: libfaketime frees its shared memory
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)
            await engine.dispose()


async def test_a_daily_8_am_runs_at_8_local_across_both_daylight_saving_changes(
    deployment: Deployment, moved_clock: MovedClock, fake_llm: FakeLLM
) -> None:
    fake_llm.reset()
    http = deployment.http
    thread = await http.post("/api/threads", json={"agent_id": str(deployment.user.agent.id)})
    assert thread.status_code == 201, thread.text
    thread_id = thread.json()["id"]
    body = {"thread_id": thread_id, "prompt": "Good morning: the news", "kind": "cron",
            "rule": "0 8 * * *", "time_zone": "Europe/Berlin"}  # fmt: skip
    created = await http.post("/api/schedules", json=body)
    assert created.status_code == 201, created.text
    schedule_id = created.json()["id"]
    assert created.json()["next_run_at"] == "2026-03-28T07:00:00Z"  # the clock moved: 27 March

    ran: list[datetime] = []
    for index, morning in enumerate(MORNINGS):
        if index == 2:  # spring to autumn: 30 March's time passed long ago
            await _skip_to(deployment, moved_clock, schedule_id, morning)
        fake_llm.script(Text(f"The news of {morning:%d %B}."))
        await moved_clock.move_to(morning - LEAD)
        runs = await deployment.wait_runs(thread_id, index + 1)
        assert len(runs) == index + 1, "a morning started more than one run"
        run = runs[-1]
        assert run.status == "completed", run.error
        assert run.started_at is not None
        started = run.started_at.astimezone(UTC)
        assert morning <= started < morning + ON_TIME, (morning, started)
        local = started.astimezone(BERLIN)
        assert (local.hour, local.minute) == (8, 0), local
        ran.append(started)
        schedule = await deployment.schedule(schedule_id)
        assert schedule.last_run_at == morning and schedule.last_run_id == run.id
        assert schedule.next_run_at == FOLLOWING[index], (morning, schedule.next_run_at)
    assert len(ran) == len(MORNINGS)


async def _skip_to(
    deployment: Deployment, clock: MovedClock, schedule_id: str, morning: datetime
) -> None:
    """Months on: the pending time (30 March) is far older than the lateness bound, so
    the scheduler passes it over, starts no run, and takes the next 08:00 after now."""
    await clock.move_to(morning - timedelta(hours=1))

    async def passed_over() -> Any:
        schedule = await deployment.schedule(schedule_id)
        return schedule.next_run_at == morning

    await until(passed_over, timeout=15)
