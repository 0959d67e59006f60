"""Fan-out never wedges: deliveries of every kind in one cycle, a failing event isolated."""

from __future__ import annotations

import secrets

from tests.orchestrator.support import OrchestratorApi
from tests.push.conftest import register_device
from tests.push.test_live_activities import _register
from tests.support.fake_apns import FakeApns
from tests.support.fake_llm import Text


async def test_a_device_and_a_live_activity_on_one_run_both_hear_its_end(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    """Issue 28's reproduction: alert rows and Live Activity rows in one cycle."""
    device = await register_device(api)
    token = secrets.token_hex(40)
    thread_id = await api.new_thread()
    await _register(api, thread_id, token)
    api.llm.script(Text("done with both"))
    _, run = await api.turn("hello", thread_id)
    await fake_apns.wait_for(
        lambda: (
            any(p.payload["aps"].get("event") == "end" for p in fake_apns.to(token))
            and fake_apns.to(device["token"])
        )
    )
    (alert,) = fake_apns.to(device["token"])
    assert alert.payload["kind"] == "run_completed" and alert.payload["run_id"] == run["id"]
    api.llm.script(Text("and the next one"))  # later pushes still flow
    _, later = await api.turn("again")
    await fake_apns.wait_for(lambda: len(fake_apns.to(device["token"])) == 2)
    assert fake_apns.to(device["token"])[-1].payload["run_id"] == later["id"]
    assert not fake_apns.rejected
