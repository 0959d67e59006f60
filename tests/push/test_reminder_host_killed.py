"""A host killed (SIGKILL, a real server process) at the moment it takes due reminders:
each is still pushed exactly once, by the host that lives on.

Host A is a real server process (tests/support/freezing_app.py) on the test database
with push on, the only scheduler and sender running when the reminders fall due: it
stops itself just before the statement that matters and is SIGKILLed there, either

- `claimed`: the reminders taken by its claim, their push events about to be written in
  the same transaction (uncommitted: the claim must roll back and be taken again), or
- `fanning_out`: the claim and the push events committed, the events being fanned out
  into deliveries (nothing sent yet: another host's sender must send them).

Host B, this process's server, then runs its scheduler and sender as a host that stayed
up. The one window not shown here is the push sender's own (killed after APNs accepted a
push, before recording it): the delivery's claim lapses and it is sent again, with the
same `apns-collapse-id`, so the phone shows one notification
(tests/push/test_push_delivery.py, the lapsed claims).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import httpx
import pytest
from sqlalchemy import select

from app.db import clock
from app.db.models import Task
from app.tasks import services
from tests.orchestrator.support import OrchestratorApi
from tests.push.conftest import BUNDLE, register_device
from tests.support.fake_apns import FakeApns, Received
from tests.support.fake_llm import FakeLLM
from tests.support.processes import free_port, server_env, start_server, until, wait_ready

QUIET = 1.5  # nothing more may arrive this long after the expected pushes
FREEZES = {
    "claimed": ("INSERT INTO push_events", "task_reminder"),
    "fanning_out": ("INSERT INTO push_deliveries", ""),
}


def _reminders(fake_apns: FakeApns) -> list[Received]:
    return [r for r in fake_apns.received if r.payload.get("kind") == "task_reminder"]


@pytest.fixture
async def survivor_held_back(api: OrchestratorApi) -> AsyncIterator[Callable[[], None]]:
    """Host B's scheduler and sender wait until A is stopped (else B may take the
    reminders first and A is killed holding nothing); the test resumes them (or the
    teardown does)."""
    scheduler, sender = api.app.state.timer_scheduler, api.app.state.push_sender
    await scheduler.stop()
    await sender.stop()
    resumed = False

    def resume() -> None:
        nonlocal resumed
        if not resumed:
            resumed = True
            sender.start()
            scheduler.start()

    try:
        yield resume
    finally:
        resume()


@pytest.mark.parametrize("moment", list(FREEZES))
async def test_a_host_killed_as_it_takes_due_reminders_still_pushes_each_once(
    api: OrchestratorApi,
    fake_apns: FakeApns,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    database_url: str,
    tmp_path: Path,
    survivor_held_back: Callable[[], None],
    moment: str,
) -> None:
    device = await register_device(api)
    marker = tmp_path / "frozen"
    before, needle = FREEZES[moment]
    env = server_env(
        database_url, fake_llm, agent_types_file,
        APNS_KEY_FILE=fake_apns.key_file, APNS_KEY_ID=fake_apns.key_id,
        APNS_TEAM_ID=fake_apns.team_id, APNS_TOPIC=BUNDLE,
        APNS_BASE_URL=fake_apns.base_url, APNS_CA_FILE=fake_apns.ca_file,
        PUSH_POLL_SECONDS="0.2", REMINDER_POLL_SECONDS="0.2",
        FREEZE_BEFORE=before, FREEZE_IF=needle, FREEZE_MARKER=str(marker),
    )  # fmt: skip
    port = free_port()
    host_a = start_server(port, env, factory="tests.support.freezing_app:create")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            await wait_ready(http)
        due = (clock.now() + timedelta(seconds=1.5)).replace(microsecond=0)
        tasks = [
            await services.create_task(api.db, api.user.user.id, title=title, due_at=due)
            for title in ("Buy milk", "Call the bank", "Water the plants")
        ]
        assert all(task.remind_at == due for task in tasks)
        task_ids = [str(task.id) for task in tasks]
        await api.db.commit()

        async def frozen() -> bool:
            return marker.exists()

        await until(frozen, timeout=30)  # A polled, found them due, and stopped
        host_a.send_signal(signal.SIGKILL)
        host_a.wait(timeout=10)
        assert _reminders(fake_apns) == []  # A sent nothing before it died
    finally:
        host_a.kill()
        host_a.wait(timeout=10)

    survivor_held_back()  # host B, up all along, goes on
    await fake_apns.wait_for(lambda: len(_reminders(fake_apns)) >= len(task_ids), timeout=20)
    await asyncio.sleep(QUIET)
    pushes = _reminders(fake_apns)
    assert sorted(p.payload["task_id"] for p in pushes) == sorted(task_ids)
    assert all(p.token == device["token"] and p.payload["late"] is False for p in pushes)
    assert not fake_apns.rejected
    api.db.expire_all()
    rows = list(await api.db.scalars(select(Task).where(Task.id.in_([UUID(i) for i in task_ids]))))
    assert len(rows) == len(task_ids)
    assert all(r.remind_at is None and r.reminded_at == due for r in rows)
