"""Scheduled runs: a schedule starts a run in its thread with its prompt at its time,
once with two schedulers, its end pushed; REST with its limits and object-level
authorization; a schedule whose runs keep failing is paused and its owner told."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.db.models import Run, Schedule
from app.lib.schema import served_timestamp
from app.timers.scheduler import TimerScheduler
from tests.conftest import make_api_user
from tests.orchestrator.support import OrchestratorApi
from tests.push.conftest import register_device
from tests.support.fake_apns import FakeApns
from tests.support.fake_llm import Call, Error, Text, ToolCalls
from tests.support.test_tools import GateTool


async def _create(api: OrchestratorApi, headers: dict | None = None, **body: Any) -> Any:
    return await api.client.post("/api/schedules", json=body, headers=headers or api.headers)


async def _runs(api: OrchestratorApi, thread_id: str) -> list[Run]:
    api.db.expire_all()
    query = select(Run).where(Run.thread_id == UUID(thread_id)).order_by(Run.created_at)
    return list(await api.db.scalars(query))


async def _wait_runs(api: OrchestratorApi, thread_id: str, count: int) -> list[Run]:
    """The thread's runs once `count` of them have ended."""
    async with asyncio.timeout(15):
        while True:
            runs = await _runs(api, thread_id)
            if len([r for r in runs if r.finished_at is not None]) >= count:
                return runs
            await asyncio.sleep(0.05)  # polling the runner's commits


async def _due_now(api: OrchestratorApi, schedule_id: str) -> None:
    """The schedule's next time comes (as the clock would bring it)."""
    soon = clock.now() + timedelta(milliseconds=100)
    statement = update(Schedule).where(Schedule.id == UUID(schedule_id))
    await api.db.execute(statement.values(next_run_at=soon))
    await api.db.commit()
    api.app.state.timer_scheduler.wake()


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


async def test_a_schedule_starts_one_run_with_its_prompt_and_its_answer_is_pushed(
    api: OrchestratorApi, fake_apns: FakeApns, second_scheduler: TimerScheduler
) -> None:
    device = await register_device(api)
    thread_id = await api.new_thread()
    api.llm.script(Text("Here is today's news: nothing happened."))
    run_at = clock.now() + timedelta(seconds=1)
    created = await _create(
        api, thread_id=thread_id, prompt="Give me the news", kind="once",
        run_at=served_timestamp(run_at + timedelta(seconds=1)),
    )  # fmt: skip
    assert created.status_code == 201, created.text
    schedule = created.json()
    assert schedule["status"] == "active" and schedule["next_run_at"] is not None

    (run,) = await _wait_runs(api, thread_id, 1)
    assert run.status == "completed"
    messages = await api.messages(thread_id)
    assert messages[0]["role"] == "user" and messages[0]["content"] == "Give me the news"
    await fake_apns.wait_for(lambda: fake_apns.to(device["token"]))
    (push,) = fake_apns.to(device["token"])
    assert push.payload["kind"] == "run_completed" and push.payload["run_id"] == str(run.id)
    assert push.payload["aps"]["alert"]["body"].startswith("Here is today's news")
    await asyncio.sleep(1.0)
    assert len(await _runs(api, thread_id)) == 1  # two schedulers, one run
    ended = (await api.client.get(f"/api/schedules/{schedule['id']}", headers=api.headers)).json()
    assert ended["status"] == "ended" and ended["next_run_at"] is None
    assert ended["last_run_id"] == str(run.id)


async def test_schedules_rest_limits_and_owners(api: OrchestratorApi) -> None:
    thread_id = await api.new_thread()
    body = {"thread_id": thread_id, "prompt": "News", "kind": "cron", "rule": "0 8 * * 1-5",
            "time_zone": "Europe/Berlin"}  # fmt: skip
    created = await _create(api, **body)
    assert created.status_code == 201, created.text
    schedule = created.json()
    url = f"/api/schedules/{schedule['id']}"
    assert schedule["next_run_at"].endswith(("T07:00:00Z", "T06:00:00Z"))  # 8:00 in Berlin

    for bad in (
        {"rule": "* * * * *"},  # every minute: under the minimum interval
        {"rule": "not cron"},
        {"time_zone": "Mars/Base"},
        {"kind": "once"},  # without run_at
        {"kind": "once", "run_at": served_timestamp(clock.now() - timedelta(hours=1))},
    ):
        response = await _create(api, **(body | bad))
        assert response.status_code == 400, (bad, response.text)
    stranger = await make_api_user(api.db)
    assert (await _create(api, stranger.headers, **body)).status_code == 404  # not their thread
    for method, path in (("GET", url), ("PATCH", url), ("DELETE", url), ("POST", f"{url}/pause")):
        kwargs = {"json": {"prompt": "x"}} if method == "PATCH" else {}
        response = await api.client.request(method, path, headers=stranger.headers, **kwargs)
        assert response.status_code == 404, (method, path)
    listed = (await api.client.get("/api/schedules", headers=stranger.headers)).json()
    assert listed == {"items": []}

    paused = (await api.client.post(f"{url}/pause", headers=api.headers)).json()
    assert paused["status"] == "paused" and paused["next_run_at"] is None
    edited = await api.client.patch(url, json={"rule": "30 9 * * *"}, headers=api.headers)
    assert edited.json()["status"] == "paused" and edited.json()["rule"] == "30 9 * * *"
    resumed = (await api.client.post(f"{url}/resume", headers=api.headers)).json()
    assert resumed["status"] == "active"
    assert resumed["next_run_at"].endswith(("T08:30:00Z", "T07:30:00Z"))
    listed = (await api.client.get("/api/schedules", headers=api.headers)).json()["items"]
    assert [s["id"] for s in listed] == [schedule["id"]]
    assert (await api.client.delete(url, headers=api.headers)).status_code == 204
    assert (await api.client.get(url, headers=api.headers)).status_code == 404


async def test_schedules_per_user_are_limited(api: OrchestratorApi) -> None:
    thread_id = await api.new_thread()
    limit = api.app.state.timer_scheduler.settings.schedules_per_user
    for _ in range(limit):
        body = {"thread_id": thread_id, "prompt": "p", "kind": "cron", "rule": "0 8 * * *"}
        assert (await _create(api, **body)).status_code == 201
    over = await _create(api, **body)
    assert over.status_code == 409
    count = select(func.count()).select_from(Schedule)
    assert await api.db.scalar(count) == limit


async def test_a_schedule_whose_runs_keep_failing_is_paused_and_its_owner_told(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    device = await register_device(api)
    thread_id = await api.new_thread()
    body = {"thread_id": thread_id, "prompt": "Check", "kind": "cron", "rule": "0 8 * * *"}
    schedule = (await _create(api, **body)).json()
    failures = api.app.state.timer_scheduler.settings.schedule_max_failures
    for ended in range(1, failures + 1):
        api.llm.script(Error(401, "bad key"))  # a failure no retry mends
        await _due_now(api, schedule["id"])
        runs = await _wait_runs(api, thread_id, ended)
        assert runs[-1].status == "failed"
    await _due_now(api, schedule["id"])  # the next time: paused instead of a fourth run

    await fake_apns.wait_for(
        lambda: any(r.payload["kind"] == "schedule_paused" for r in fake_apns.to(device["token"]))
    )
    (told,) = [r for r in fake_apns.received if r.payload["kind"] == "schedule_paused"]
    assert told.payload["schedule_id"] == schedule["id"]
    assert told.payload["thread_id"] == thread_id
    assert told.payload["aps"]["category"] == "SCHEDULE_PAUSED"
    url = f"/api/schedules/{schedule['id']}"
    paused = (await api.client.get(url, headers=api.headers)).json()
    assert paused["status"] == "paused" and paused["next_run_at"] is None
    assert paused["paused_reason"] == f"Its last {failures} runs failed."
    assert len(await _runs(api, thread_id)) == failures


async def test_the_agent_lists_and_creates_schedules_with_the_users_approval(
    api: OrchestratorApi,
) -> None:
    create = {"action": "create", "prompt": "Give me the news", "kind": "cron",
              "rule": "0 8 * * 1-5", "time_zone": "Europe/Berlin"}  # fmt: skip
    api.llm.script(
        ToolCalls(Call("schedules", create)),
        ToolCalls(Call("schedules", {"action": "list"})),
        Text("Every weekday at 8."),
    )
    agent = await api.add_agent(name="Aide", agent_type="assistant", enabled_tools=["schedules"])
    thread_id = await api.new_thread(agent.id)
    run_id = (await api.post(thread_id, "Every weekday at 8, give me the news")).json()["run"]["id"]
    waiting = await api.wait_activity("awaiting_approval", "schedules")
    assert await api.db.scalar(select(func.count()).select_from(Schedule)) == 0  # not yet
    assert (await api.decide(thread_id, waiting["id"], approve=True)).status_code == 200
    run = await api.wait_run(thread_id, run_id)
    assert run["status"] == "completed"
    created, listed = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert created["status"] == "success"
    assert created["data"]["schedule"]["thread_id"] == thread_id
    assert created["data"]["schedule"]["next_run_at"].endswith(("T07:00:00Z", "T06:00:00Z"))
    assert listed["data"]["count"] == 1
    schedules = (await api.client.get("/api/schedules", headers=api.headers)).json()["items"]
    assert [s["rule"] for s in schedules] == ["0 8 * * 1-5"]


async def _fired(api: OrchestratorApi, schedule_id: str, since: Any) -> None:
    """Until the scheduler took the due time (its last_run_at moved past `since`)."""
    async with asyncio.timeout(10):
        while True:
            api.db.expire_all()
            schedule = await api.db.get(Schedule, UUID(schedule_id))
            if schedule is not None and schedule.last_run_at and schedule.last_run_at > since:
                return
            await asyncio.sleep(0.05)  # polling the scheduler's commit


@pytest.mark.parametrize("limit", ["runs_per_day", "budget"])
async def test_a_due_time_past_a_limit_starts_no_run(api: OrchestratorApi, limit: str) -> None:
    thread_id = await api.new_thread()
    body = {"thread_id": thread_id, "prompt": "Check", "kind": "cron", "rule": "0 8 * * *"}
    schedule = (await _create(api, **body)).json()
    api.llm.script(Text("Checked.", usage={"prompt_tokens": 12, "completion_tokens": 2}))
    await _due_now(api, schedule["id"])
    [first] = await _wait_runs(api, thread_id, 1)
    assert first.status == "completed" and (first.input_tokens or 0) > 0
    scheduler = api.app.state.timer_scheduler
    kept = scheduler.settings
    if limit == "runs_per_day":
        scheduler.settings = dataclasses.replace(kept, schedule_runs_per_day=1)
    else:  # the first run's tokens spend a one-token month
        scheduler.settings = dataclasses.replace(kept, user_monthly_token_budget=1)
    try:
        before = clock.now()
        await _due_now(api, schedule["id"])
        await _fired(api, schedule["id"], before)
    finally:
        scheduler.settings = kept
    assert [run.id for run in await _runs(api, thread_id)] == [first.id]  # no second run
    messages = await api.messages(thread_id)
    assert [m["content"] for m in messages if m["role"] == "user"] == ["Check"]
    assert messages[0]["client_message_id"].startswith(f"schedule:{schedule['id']}:")


async def test_after_downtime_a_schedule_runs_once_for_its_missed_times_a_stale_one_waits(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    """The service was down over these hourly schedules' times: the one whose first
    missed time is 3 h old runs once (not once per missed hour), the one 7 h behind (past
    REMINDER_MAX_LATENESS_SECONDS) runs not at all; both wait for their next hour."""
    device = await register_device(api)
    caught_up, stale = await api.new_thread(), await api.new_thread()
    body = {"prompt": "Hourly check", "kind": "cron", "rule": "0 * * * *"}
    ids = [(await _create(api, thread_id=t, **body)).json()["id"] for t in (caught_up, stale)]
    api.llm.script(Text("All fine since this morning."))
    scheduler = api.app.state.timer_scheduler
    hour = clock.now().replace(minute=0, second=0, microsecond=0)
    missed = hour - timedelta(hours=3)
    await scheduler.stop()  # the service is down
    try:
        for schedule_id, since in zip(ids, (missed, hour - timedelta(hours=7)), strict=True):
            statement = update(Schedule).where(Schedule.id == UUID(schedule_id))
            await api.db.execute(statement.values(next_run_at=since))
        await api.db.commit()
    finally:
        scheduler.start()  # back: its first round is at once

    (run,) = await _wait_runs(api, caught_up, 1)
    assert run.status == "completed"
    (asked, _) = await api.messages(caught_up)
    assert asked["content"] == "Hourly check"
    assert asked["client_message_id"] == f"schedule:{ids[0]}:{missed:%Y-%m-%dT%H:%M:%S.%fZ}"
    await fake_apns.wait_for(lambda: fake_apns.to(device["token"]))
    (push,) = fake_apns.to(device["token"])
    assert push.payload["kind"] == "run_completed" and push.payload["run_id"] == str(run.id)
    await asyncio.sleep(1.0)
    assert len(await _runs(api, caught_up)) == 1 and await _runs(api, stale) == []
    following = served_timestamp(hour + timedelta(hours=1))
    for schedule_id in ids:
        read = await api.client.get(f"/api/schedules/{schedule_id}", headers=api.headers)
        assert read.json()["status"] == "active" and read.json()["next_run_at"] == following


async def test_a_scheduled_run_starts_a_live_activity_by_push_that_follows_it_to_its_end(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    """Nobody opened the app: the install's push-to-start token gets one `start` for the
    scheduled run; the activity it started registers its token, gets updates while the
    run goes and the `end` with its final state."""
    start_token = secrets.token_hex(40)
    registered = await api.client.post(
        "/api/live-activities/push-to-start",
        json={"push_token": start_token, "environment": "sandbox"},
        headers=api.headers,
    )
    assert registered.status_code == 201, registered.text
    thread_id = await api.new_thread()
    body = {"thread_id": thread_id, "prompt": "Morning digest", "kind": "cron", "rule": "0 8 * * *"}
    schedule = (await _create(api, **body)).json()
    GateTool.gate = asyncio.Event()
    api.llm.script(ToolCalls(Call("test_gate", {"action": "wait"})), Text("Your digest."))
    await _due_now(api, schedule["id"])

    await fake_apns.wait_for(lambda: fake_apns.to(start_token))
    (start,) = fake_apns.to(start_token)
    (run,) = await _runs(api, thread_id)
    aps = start.payload["aps"]
    assert aps["event"] == "start" and aps["attributes-type"] == "RunActivityAttributes"
    assert aps["attributes"]["threadId"] == thread_id
    assert aps["attributes"]["runId"] == str(run.id)
    assert start.headers["apns-push-type"] == "liveactivity"
    token = secrets.token_hex(40)  # the started activity's own token, sent by the app
    url = f"/api/threads/{thread_id}/runs/{run.id}/live-activity"
    followed = await api.client.post(url, json={"push_token": token}, headers=api.headers)
    assert followed.status_code == 201, followed.text
    await fake_apns.wait_for(
        lambda: any(p.payload["aps"]["content-state"]["toolName"] == "test_gate"
                    for p in fake_apns.to(token))
    )  # fmt: skip
    GateTool.gate.set()
    await fake_apns.wait_for(
        lambda: any(p.payload["aps"]["event"] == "end" for p in fake_apns.to(token))
    )
    pushes = fake_apns.to(token)
    assert [p.payload["aps"]["event"] for p in pushes][-1] == "end"
    assert all(p.payload["aps"]["event"] == "update" for p in pushes[:-1])
    assert pushes[-1].payload["aps"]["content-state"]["status"] == "completed"
    assert len(fake_apns.to(start_token)) == 1 and not fake_apns.rejected
