"""Pushes through the outbox to a fake APNs: when, what, retries, dead tokens, restarts."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from uuid import UUID

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import func, insert, select, update

import app.push.sender
from app.db import clock
from app.db.models import Device, PushDelivery, PushEvent, Run, push_presence
from app.lib.time import utcnow
from app.push.presence import OWNER
from tests.orchestrator.support import OrchestratorApi
from tests.push.conftest import BUNDLE, register_device
from tests.realtime.support import WsClient
from tests.support.fake_apns import FakeApns
from tests.support.fake_llm import Call, Text, ToolCalls

ANSWER = "Here is your answer, with everything you asked for. " * 6


async def _fanned_out(api: OrchestratorApi, run_id: str) -> None:
    """Wait until the run's end has been handled: not (or no longer) due for push, and
    its event, if one was made, fanned out (whatever it produced)."""
    async with asyncio.timeout(10):
        while True:
            api.db.expire_all()
            run = await api.db.get(Run, UUID(run_id))
            event = await api.db.scalar(select(PushEvent).where(PushEvent.run_id == UUID(run_id)))
            handled = event is None or event.fanned_out_at is not None
            if run is not None and run.finished_at and not run.push_due and handled:
                return
            await asyncio.sleep(0.05)  # polling the sender's commit


async def test_a_completed_run_with_nobody_watching_is_one_alert(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    device = await register_device(api)
    sent_before = _pushes_sent()
    api.llm.script(Text(ANSWER))
    thread_id, run = await api.turn("hello")
    assert run["status"] == "completed"
    (push,) = await fake_apns.wait_received(1)
    assert push.token == device["token"] and not fake_apns.rejected
    headers, payload = push.headers, push.payload
    assert headers["apns-push-type"] == "alert" and headers["apns-topic"] == BUNDLE
    assert headers["apns-priority"] == "10"
    assert headers["apns-collapse-id"] == f"thread-{thread_id}"
    assert int(headers["apns-expiration"]) > time.time()
    answer = [m for m in await api.messages(thread_id) if m["role"] == "assistant"][-1]
    assert payload["kind"] == "run_completed"
    assert payload["thread_id"] == thread_id and payload["run_id"] == run["id"]
    assert payload["message_id"] == answer["id"] and payload["seq"] == answer["seq"]
    body = payload["aps"]["alert"]["body"]
    assert body.endswith("…") and ANSWER.startswith(body[:-1]) and len(body) <= 180
    assert payload["aps"]["thread-id"] == thread_id
    await _fanned_out(api, run["id"])
    assert len(fake_apns.received) == 1
    for _ in range(100):  # /metrics counts it once the sender has read APNs' answer
        if _pushes_sent() == sent_before + 1:
            break
        await asyncio.sleep(0.05)
    assert _pushes_sent() == sent_before + 1


def _pushes_sent() -> float:
    value = REGISTRY.get_sample_value("toolcells_push_notifications_total", {"outcome": "sent"})
    return value or 0.0


async def test_a_user_watching_the_thread_gets_no_push(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    await register_device(api)
    thread_id = await api.new_thread()
    ws_url = f"ws://127.0.0.1:{api.client.base_url.port}/api/ws"
    async with WsClient.connect(ws_url, api.user.token) as socket:
        await socket.subscribe(thread_id)
        await socket.wait_type("subscribed", thread_id=thread_id)
        api.llm.script(Text("watched"))
        _, run = await api.turn("hi", thread_id)
        await _fanned_out(api, run["id"])
    assert fake_apns.received == []
    assert await api.db.scalar(select(func.count()).select_from(PushDelivery)) == 0


async def test_a_socket_in_another_process_counts(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    await register_device(api)
    thread_id = await api.new_thread()
    await api.db.execute(
        insert(push_presence).values(
            owner="presence-other-process",
            user_id=api.user.user.id,
            thread_id=UUID(thread_id),
            expires_at=utcnow() + timedelta(seconds=30),
        )
    )
    await api.db.commit()
    api.llm.script(Text("seen elsewhere"))
    _, run = await api.turn("hi", thread_id)
    await _fanned_out(api, run["id"])
    assert (await api.db.get(Run, UUID(run["id"]))).push_due is False  # not even marked
    assert fake_apns.received == []
    assert OWNER != "presence-other-process"


async def test_a_failed_run_is_an_alert_the_app_words(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    await register_device(api)
    from tests.support.fake_llm import Error

    api.llm.script(Error(400, "bad request"))
    thread_id, run = await api.turn("hello")
    assert run["status"] == "failed"
    (push,) = await fake_apns.wait_received(1)
    alert = push.payload["aps"]["alert"]
    assert push.payload["kind"] == "run_failed" and alert["loc-key"] == "RUN_FAILED_BODY"
    assert push.payload["aps"]["category"] == "RUN_FAILED"
    assert push.payload["run_id"] == run["id"] and push.payload["thread_id"] == thread_id


async def test_an_approval_request_is_time_sensitive_and_actionable(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    await register_device(api)
    api.llm.script(ToolCalls(Call("test_confirm", {"action": "do", "note": "n"})), Text("ok"))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "do it")).json()["run"]["id"]
    message = await api.wait_activity("awaiting_approval", "test_confirm")
    (push,) = await fake_apns.wait_received(1)
    aps = push.payload["aps"]
    assert aps["category"] == "APPROVAL_REQUEST"
    assert aps["interruption-level"] == "time-sensitive"
    assert aps["alert"]["loc-key"] == "APPROVAL_REQUEST_BODY"
    assert aps["alert"]["loc-args"][0] == "test_confirm"
    assert push.payload["kind"] == "approval_request"
    assert push.payload["message_id"] == message["id"] and push.payload["seq"] == message["seq"]
    assert push.payload["run_id"] == run_id
    from datetime import datetime

    expires = datetime.fromisoformat(message["tool_activity"]["expires_at"].replace("Z", "+00:00"))
    assert int(push.headers["apns-expiration"]) == int(expires.timestamp())
    await api.decide(thread_id, message["id"], True)
    await api.wait_run(thread_id, run_id)
    await fake_apns.wait_received(2)  # then the answer
    assert [p.payload["kind"] for p in fake_apns.received] == ["approval_request", "run_completed"]


async def test_429_is_retried_until_delivered(api: OrchestratorApi, fake_apns: FakeApns) -> None:
    device = await register_device(api)
    fake_apns.answer(device["token"], 429)
    api.llm.script(Text("after a retry"))
    await api.turn("hello")
    await fake_apns.wait_received(1)
    assert [status for _, status in fake_apns.attempts] == [429, 200]
    await _wait_status(api, "sent")
    row = await api.db.scalar(select(PushDelivery))
    assert row is not None and row.attempts == 2 and row.last_error is None


async def test_500_then_connection_trouble_is_retried(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    device = await register_device(api)
    fake_apns.answer(device["token"], 500, 503)
    api.llm.script(Text("eventually"))
    await api.turn("hello")
    await fake_apns.wait_received(1)
    assert [status for _, status in fake_apns.attempts] == [500, 503, 200]


async def test_410_unregistered_deletes_the_device(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    gone = await register_device(api)
    kept = await register_device(api)
    fake_apns.answer(gone["token"], 410)
    api.llm.script(Text("to two phones"))
    await api.turn("hello")
    await fake_apns.wait_for(lambda: len(fake_apns.attempts) == 2)
    async with asyncio.timeout(10):
        while await api.db.get(Device, UUID(gone["id"])) is not None:
            api.db.expire_all()
            await asyncio.sleep(0.05)  # polling the sender's commit
    assert await api.db.get(Device, UUID(kept["id"])) is not None
    listed = (await api.client.get("/api/devices", headers=api.headers)).json()["items"]
    assert [d["id"] for d in listed] == [kept["id"]]


async def test_bad_device_token_deletes_the_device(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    device = await register_device(api)
    fake_apns.answer(device["token"], 400, reason="BadDeviceToken")
    api.llm.script(Text("x"))
    await api.turn("hello")
    async with asyncio.timeout(10):
        while await api.db.get(Device, UUID(device["id"])) is not None:
            api.db.expire_all()
            await asyncio.sleep(0.05)


async def test_pending_rows_are_sent_after_a_restart_and_never_twice(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    device = await register_device(api)
    sender = api.app.state.push_sender
    await sender.stop()  # the process is down: what it left stays in the tables
    try:
        user_id = api.user.user.id
        for _ in range(2):  # one event written twice (a retried write, two processes)
            api.db.add(PushEvent(kind="test", event_key="test:restart", user_id=user_id))
        # claimed by a process that died before it answered
        api.db.add(_due_delivery(device, "test:claimed", "left over", attempts=1))
        await api.db.commit()
    finally:
        sender.start()
    await fake_apns.wait_received(2)
    kinds = sorted(str(p.payload["aps"]["alert"]) for p in fake_apns.received)
    assert "left over" in kinds
    await _wait_status(api, "sent", count=2)
    await sender.cycle()  # another round finds nothing more to send
    assert len(fake_apns.received) == 2


async def test_a_run_ending_while_the_sender_is_down_is_pushed_after_a_restart(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    await register_device(api)
    sender = api.app.state.push_sender
    await sender.stop()
    try:
        api.llm.script(Text("finished while nobody sent"))
        _, run = await api.turn("hello")
        api.db.expire_all()
        assert (await api.db.get(Run, UUID(run["id"]))).push_due is True  # the run is its outbox
        assert fake_apns.received == []
    finally:
        sender.start()
    (push,) = await fake_apns.wait_received(1)
    assert push.payload["kind"] == "run_completed" and push.payload["run_id"] == run["id"]
    await _fanned_out(api, run["id"])
    await sender.cycle()
    assert len(fake_apns.received) == 1


async def test_a_turn_nobody_can_be_pushed_about_writes_nothing_for_push(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    """Push on, the user has no device: the run's end is not marked, no event is written."""
    api.llm.script(Text("no phone to tell"))
    _, run = await api.turn("hello")
    api.db.expire_all()
    assert (await api.db.get(Run, UUID(run["id"]))).push_due is False
    await api.app.state.push_sender.cycle()
    assert await api.db.scalar(select(func.count()).select_from(PushEvent)) == 0
    assert fake_apns.received == []


async def _wait_status(api: OrchestratorApi, status: str, count: int = 1) -> None:
    async with asyncio.timeout(10):
        while True:
            api.db.expire_all()
            done = await api.db.scalar(
                select(func.count()).select_from(PushDelivery).where(PushDelivery.status == status)
            )
            if done >= count:
                return
            await asyncio.sleep(0.05)  # polling the sender's commit


async def test_a_device_tool_waiting_asks_the_user_to_open_the_app(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    await register_device(api)
    agent = await api.add_agent(name="Companion", agent_type="tester_device")
    thread_id = await api.new_thread(agent.id)
    api.llm.script(ToolCalls(Call("device_location", {"accuracy": "coarse"})), Text("Berlin."))
    run_id = (await api.post(thread_id, "where am I?")).json()["run"]["id"]
    message = await api.wait_activity("awaiting_device", "device_location")
    (push,) = await fake_apns.wait_received(1)
    assert push.payload["kind"] == "device_request"
    assert push.payload["aps"]["category"] == "DEVICE_REQUEST"
    assert push.payload["aps"]["interruption-level"] == "time-sensitive"
    assert push.payload["message_id"] == message["id"] and push.payload["run_id"] == run_id
    answer = await api.client.post(
        f"/api/threads/{thread_id}/messages/{message['id']}/result",
        json={"output": {"latitude": 52.52, "longitude": 13.405}},
        headers=api.headers,
    )
    assert answer.status_code == 200, answer.text
    assert (await api.wait_run(thread_id, run_id))["status"] == "completed"


def _fenced_pushes() -> float:
    return REGISTRY.get_sample_value("toolcells_fenced_total", {"holder": "push"}) or 0.0


def _due_delivery(device: dict, event_key: str, alert: str, attempts: int = 0) -> PushDelivery:
    """A pending alert to `device`, due a second ago."""
    return PushDelivery(
        event_key=event_key,
        token=device["token"],
        device_id=UUID(device["id"]),
        environment="sandbox",
        topic=BUNDLE,
        push_type="alert",
        priority=10,
        expiration=0,
        payload={"aps": {"alert": alert}, "kind": "test"},
        next_attempt_at=utcnow() - timedelta(seconds=1),
        attempts=attempts,
    )


async def _left_pending(api: OrchestratorApi, device: dict) -> UUID:
    delivery = _due_delivery(device, "test:fenced", "fenced")
    api.db.add(delivery)
    await api.db.commit()
    return delivery.id


async def test_a_sender_whose_claim_lapsed_records_nothing(
    api: OrchestratorApi, fake_apns: FakeApns, caplog: pytest.LogCaptureFixture
) -> None:
    """Sender A claims, stalls past its claim (a pause, a partition); B claims the delivery
    again and sends it. A's late outcome is refused by the database: recorded once, by B."""
    device = await register_device(api)
    sender = api.app.state.push_sender
    await sender.stop()
    delivery_id = await _left_pending(api, device)
    fenced_before = _fenced_pushes()
    claimed_a, claim_a = await sender._claim()
    # A's claim lapses (as if it had been taken long ago): B claims the row again.
    await api.db.execute(
        update(PushDelivery).values(next_attempt_at=utcnow() - timedelta(seconds=1))
    )
    await api.db.commit()
    claimed_b, claim_b = await sender._claim()
    assert [d.id for d in claimed_a] == [d.id for d in claimed_b] == [delivery_id]

    sent_b = [await sender._send(d, claim_b) for d in claimed_b]
    await sender._record([s for s in sent_b if s])
    late_a = [await sender._send(d, claim_a) for d in claimed_a]
    with caplog.at_level(logging.WARNING, logger="app.push.sender"):
        await sender._record([s for s in late_a if s])

    api.db.expire_all()
    row = await api.db.get(PushDelivery, delivery_id)
    assert row is not None and row.status == "sent" and row.attempts == 1  # B's, once
    assert _fenced_pushes() == fenced_before + 1
    (warning,) = [r for r in caplog.records if "claim" in r.getMessage()]
    assert str(delivery_id) in warning.getMessage()


async def test_a_claim_that_lapsed_before_its_send_is_not_sent(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    device = await register_device(api)
    sender = api.app.state.push_sender
    await sender.stop()
    delivery_id = await _left_pending(api, device)
    fenced_before = _fenced_pushes()
    claimed, _ = await sender._claim()
    lapsed = utcnow() - timedelta(seconds=1)
    assert [await sender._send(d, lapsed) for d in claimed] == [None]
    assert not fake_apns.received and _fenced_pushes() == fenced_before + 1
    api.db.expire_all()
    row = await api.db.get(PushDelivery, delivery_id)
    assert row is not None and row.status == "pending" and row.attempts == 0


async def test_a_host_whose_clock_runs_ahead_leaves_a_live_claim_alone(
    api: OrchestratorApi, fake_apns: FakeApns, monkeypatch: pytest.MonkeyPatch, dialect: str
) -> None:
    """Host B claimed a delivery (for CLAIM_SECONDS). Host A's clock runs 90 s ahead: on
    its own clock B's claim has lapsed, on the database's it has not, and A sends nothing."""
    if dialect == "sqlite":
        pytest.skip("SQLite is one host and one clock (no offset to measure)")
    device = await register_device(api)
    sender = api.app.state.push_sender
    await sender.stop()
    delivery_id = await _left_pending(api, device)
    claimed, _ = await sender._claim()  # B
    assert [d.id for d in claimed] == [delivery_id]

    def ahead():
        return utcnow() + timedelta(seconds=90)

    try:  # A: the same sender on a host 90 s ahead, which measured its offset
        monkeypatch.setattr(app.push.sender, "utcnow", ahead)
        monkeypatch.setattr(clock, "utcnow", ahead)
        await sender._synchronize_clock()
        assert (await sender._claim())[0] == []
    finally:
        monkeypatch.undo()
        await sender._synchronize_clock()
    assert abs(clock.offset().total_seconds()) < 5
