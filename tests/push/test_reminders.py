"""Task reminders pushed at their time through the fake APNs: once with two schedulers,
snoozed and fired again, completed from the notification (another device hears it live),
and the catch-up after downtime (late within the bound, dropped past it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from app.db import clock
from app.db.models import Task
from app.lib.schema import served_timestamp
from app.tasks import services
from app.timers.scheduler import TimerScheduler
from tests.orchestrator.support import OrchestratorApi
from tests.push.conftest import BUNDLE, register_device
from tests.realtime.support import WsClient
from tests.support.fake_apns import FakeApns, Received
from tests.support.fake_llm import Call, Text, ToolCalls

QUIET = 1.0  # nothing more may arrive this long after the expected pushes


def _reminders(fake_apns: FakeApns) -> list[Received]:
    return [r for r in fake_apns.received if r.payload.get("kind") == "task_reminder"]


async def _wait_reminders(fake_apns: FakeApns, count: int) -> list[Received]:
    await fake_apns.wait_for(lambda: len(_reminders(fake_apns)) >= count, timeout=15)
    return _reminders(fake_apns)


async def _add_task(api: OrchestratorApi, *, due_in: float, title: str = "Buy milk") -> Task:
    """A task with a reminder `due_in` seconds from now, committed (which wakes the
    scheduler of this process, as the API's and the tool's writes do)."""
    due = clock.now() + timedelta(seconds=due_in)
    task = await services.create_task(api.db, api.user.user.id, title=title, due_at=due)
    await api.db.commit()
    return task


async def _row(api: OrchestratorApi, task_id: UUID | str) -> Task:
    api.db.expire_all()
    task = await api.db.scalar(select(Task).where(Task.id == UUID(str(task_id))))
    assert task is not None
    return task


async def _answer(api: OrchestratorApi, task_id: UUID | str, action: str, **more: Any) -> dict:
    response = await api.client.post(
        f"/api/tasks/{task_id}/reminder-answer",
        json={"action": action, **more},
        headers=api.headers,
    )
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
async def second_scheduler(
    api: OrchestratorApi, session_factory: async_sessionmaker[AsyncSession], dialect: str
) -> AsyncIterator[TimerScheduler]:
    """Another host's scheduler on the same database: its own engine, the same rows."""
    settings = api.app.state.timer_scheduler.settings
    scheduler = TimerScheduler(settings, session_factory, postgres=dialect == "postgresql")
    scheduler.start()
    yield scheduler
    await scheduler.stop()


async def test_a_reminder_the_agent_set_is_pushed_once_at_its_time_by_two_schedulers(
    api: OrchestratorApi, fake_apns: FakeApns, second_scheduler: TimerScheduler
) -> None:
    device = await register_device(api)
    # A whole second (the tool's input has no fraction), 2.5 to 3.5 s from now: a time
    # already past when the task is written arms nothing, and a loaded CI host is slow.
    due = (clock.now() + timedelta(seconds=2.5)).replace(microsecond=0) + timedelta(seconds=1)
    # Twenty more due at the same instant: the two schedulers race for every one.
    others = [await _add_task(api, due_in=(due - clock.now()).total_seconds()) for _ in range(20)]
    create = {"action": "create", "title": "Buy milk", "due_at": served_timestamp(due)}
    api.llm.script(ToolCalls(Call("tasks", create)), Text("I will remind you."))
    thread_id, run = await api.turn("Remind me to buy milk in two seconds")
    assert run["status"] == "completed"
    (cell,) = await api.tool_messages(thread_id)
    task_id = cell["tool_activity"]["data"]["task_id"]
    assert cell["tool_activity"]["data"]["remind_at"] == served_timestamp(due)

    await _wait_reminders(fake_apns, 1)
    assert clock.now() >= due  # not before its time
    pushes = await _wait_reminders(fake_apns, 21)
    await asyncio.sleep(QUIET)
    assert len(_reminders(fake_apns)) == 21 and not fake_apns.rejected
    tasks = {str(t.id) for t in others} | {task_id}
    assert {p.payload["task_id"] for p in pushes} == tasks  # each one once
    (push,) = [p for p in pushes if p.payload["task_id"] == task_id]
    assert push.token == device["token"] and push.headers["apns-topic"] == BUNDLE
    assert push.headers["apns-push-type"] == "alert"
    assert push.headers["apns-collapse-id"] == f"task-{task_id}"
    aps = push.payload["aps"]
    assert aps["category"] == "TASK_REMINDER" and aps["interruption-level"] == "time-sensitive"
    assert aps["alert"] == {"title": "Buy milk", "loc-key": "TASK_REMINDER_BODY"}
    assert push.payload["due_at"] == served_timestamp(due) and push.payload["late"] is False
    assert push.payload["thread_id"] == thread_id
    row = await _row(api, task_id)
    assert row.remind_at is None and row.reminded_at == due


async def test_snooze_fires_again_and_complete_reaches_another_device_live(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    await register_device(api)
    task = await _add_task(api, due_in=0.5)
    (first,) = await _wait_reminders(fake_apns, 1)
    assert first.payload["task_id"] == str(task.id)

    before = clock.now()
    snoozed = await _answer(api, task.id, "snooze_10m")
    remind_at = datetime.fromisoformat(snoozed["remind_at"])
    assert timedelta(minutes=9) < remind_at - before <= timedelta(minutes=10, seconds=1)
    assert snoozed["due_at"] == served_timestamp(task.due_at)  # the due time stays
    # Ten minutes pass (the pending time moved near, as the clock would): it fires again.
    soon = clock.now() + timedelta(seconds=0.3)
    await api.db.execute(update(Task).where(Task.id == task.id).values(remind_at=soon))
    await api.db.commit()
    api.app.state.timer_scheduler.wake()
    await _wait_reminders(fake_apns, 2)
    assert [r.payload["task_id"] for r in _reminders(fake_apns)] == [str(task.id)] * 2
    assert (await _row(api, task.id)).reminded_at == soon  # the snoozed one, sent

    ws_url = f"ws://127.0.0.1:{api.client.base_url.port}/api/ws"
    async with WsClient.connect(ws_url, api.user.token) as phone:
        await phone.send({"type": "ping"})
        await phone.wait_type("pong")  # the socket is up (and on the user's channel)
        snoozed = await _answer(api, task.id, "snooze_1h")
        frame = await phone.wait_type("task")
        assert frame["task"]["id"] == str(task.id)
        assert frame["task"]["remind_at"] == snoozed["remind_at"]
        done = await _answer(api, task.id, "complete")  # the lock screen's button
        frame = await phone.wait_for(
            lambda f: f["type"] == "task" and f["task"]["status"] == "completed"
        )
    assert frame["task"] == done and done["remind_at"] is None
    listed = (await api.client.get("/api/tasks", headers=api.headers)).json()["items"]
    assert listed[0]["status"] == "completed"
    again = await api.client.post(
        f"/api/tasks/{task.id}/reminder-answer",
        json={"action": "snooze_10m"},
        headers=api.headers,
    )
    assert again.status_code == 409  # completed: nothing to snooze
    assert len(_reminders(fake_apns)) == 2


async def test_after_downtime_late_reminders_go_marked_and_stale_ones_are_dropped(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    """The service was down over these reminders' times: the one due ten minutes ago is
    sent with `late: true`; the one due seven hours ago (past the six-hour bound) is
    claimed and dropped."""
    await register_device(api)
    late = await _add_task(api, due_in=3600, title="Call the bank")
    stale = await _add_task(api, due_in=3600, title="Water the plants")
    now = clock.now()
    for task, ago in ((late, timedelta(minutes=10)), (stale, timedelta(hours=7))):
        await api.db.execute(update(Task).where(Task.id == task.id).values(remind_at=now - ago))
    await api.db.commit()
    api.app.state.timer_scheduler.wake()  # as a restarted process's first round

    (push,) = await _wait_reminders(fake_apns, 1)
    await asyncio.sleep(QUIET)
    assert len(_reminders(fake_apns)) == 1
    assert push.payload["task_id"] == str(late.id) and push.payload["late"] is True
    assert push.payload["aps"]["alert"]["loc-key"] == "TASK_REMINDER_LATE_BODY"
    assert (await _row(api, stale.id)).remind_at is None  # claimed: never sent later


async def test_changing_the_due_time_moves_the_reminder_and_completing_cancels_it(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    await register_device(api)
    task = await _add_task(api, due_in=0.8)
    url = f"/api/tasks/{task.id}"
    later = (clock.now() + timedelta(hours=2)).replace(microsecond=0)
    body = {"due_at": served_timestamp(later), "remind_before_seconds": 900}
    moved = (await api.client.patch(url, json=body, headers=api.headers)).json()
    assert moved["remind_at"] == served_timestamp(later - timedelta(minutes=15))
    renamed = (await api.client.patch(url, json={"title": "Oat milk"}, headers=api.headers)).json()
    assert renamed["remind_at"] == moved["remind_at"]  # other fields leave it be
    done = await api.client.patch(url, json={"status": "completed"}, headers=api.headers)
    assert done.json()["remind_at"] is None
    soon = await _add_task(api, due_in=0.8, title="Gone before its time")
    await api.client.patch(
        f"/api/tasks/{soon.id}", json={"status": "completed"}, headers=api.headers
    )
    await asyncio.sleep(1.2)  # past both first times: nothing was sent
    assert _reminders(fake_apns) == []


async def test_reminder_answers_are_the_owners_alone(api: OrchestratorApi) -> None:
    from tests.conftest import make_api_user

    task = await _add_task(api, due_in=3600)
    stranger = await make_api_user(api.db)
    url = f"/api/tasks/{task.id}/reminder-answer"
    foreign = await api.client.post(url, json={"action": "complete"}, headers=stranger.headers)
    assert foreign.status_code == 404
    assert (await _row(api, task.id)).status == "active"
    for body in ({"action": "later"}, {"action": "snooze_tomorrow", "time_zone": "Mars/Base"}):
        response = await api.client.post(url, json=body, headers=api.headers)
        assert response.status_code == 400, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
    tomorrow = await _answer(api, task.id, "snooze_tomorrow", time_zone="Europe/Berlin")
    assert tomorrow["remind_at"].endswith(("T08:00:00Z", "T07:00:00Z"))  # 9:00 in Berlin


async def test_a_due_reminder_another_hosts_claim_holds_is_waited_for_not_spun_on(
    api: OrchestratorApi, fake_apns: FakeApns, dialect: str, database_url: str
) -> None:
    """PostgreSQL: a reminder due, but locked by another host's claim still in flight
    (SKIP LOCKED: this scheduler cannot take it, yet it is due). The scheduler looks
    again after a moment, not in a loop of queries; once the lock goes, it is pushed."""
    if dialect != "postgresql":
        pytest.skip("SQLite's claims queue on its one write lock: none is skipped")
    await register_device(api)
    task = await _add_task(api, due_in=3600)
    app_scheduler = api.app.state.timer_scheduler
    await app_scheduler.stop()
    engine = create_async_engine(database_url)
    claims: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("UPDATE tasks"):
            claims.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    scheduler = TimerScheduler(
        app_scheduler.settings, async_sessionmaker(engine, expire_on_commit=False), postgres=True
    )
    try:
        due = clock.now() - timedelta(seconds=1)
        await api.db.execute(update(Task).where(Task.id == task.id).values(remind_at=due))
        await api.db.commit()
        async with engine.connect() as other_host:  # its claim, not yet committed
            await other_host.execute(select(Task.id).where(Task.id == task.id).with_for_update())
            scheduler.start()
            await asyncio.sleep(2.0)
            held = len(claims)
            await other_host.rollback()  # that host died: its claim is undone
        (push,) = await _wait_reminders(fake_apns, 1)
        assert push.payload["task_id"] == str(task.id)
        # A claim every HELD_ELSEWHERE_SECONDS (a quarter second): 8 or 9; spinning, many more.
        assert 1 <= held <= 12, f"{held} claims in 2 s while the row was held"
    finally:
        await scheduler.stop()
        app_scheduler.start()
        await engine.dispose()
