"""Shared by the claim wake-up tests: a run that waits behind another starts as soon as
that one ends, not at the runner's next poll (the modules set a 30 s poll)."""

from __future__ import annotations

import asyncio
import time
from uuid import UUID

from app.orchestrator.scheduling import notify
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls

LONG_POLL = {"runner_poll_seconds": 30.0}


async def waiting_run_starts_when_the_first_ends(api: OrchestratorApi, same_thread: bool) -> None:
    relayed: list[str] = []  # wake-ups sent to the other processes (none run here)
    notify.add_relay(relayed.append)
    try:
        await _second_starts_when_first_ends(api, same_thread, relayed)
    finally:
        notify.remove_relay(relayed.append)


async def _second_starts_when_first_ends(
    api: OrchestratorApi, same_thread: bool, relayed: list[str]
) -> None:
    api.llm.script(
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": 60})), Text("second answer")
    )
    first_thread = await api.new_thread()
    first = (await api.post(first_thread, "first")).json()["run"]
    await api.wait_activity("in_progress", "test_slow")  # the first run holds on
    second_thread = first_thread if same_thread else await api.new_thread()
    second = (await api.post(second_thread, "second")).json()["run"]
    await asyncio.sleep(0.3)  # the runner has looked and found it not claimable
    assert (await api.get_run(second_thread, second["id"]))["status"] == "queued"
    # The run this process claimed at once woke no other process; the one it could not
    # claim was handed on (another process may have the free slot).
    assert notify.encode("queued", UUID(first["id"])) not in relayed
    assert notify.encode("queued", UUID(second["id"])) in relayed
    started = time.monotonic()
    cancel = await api.client.post(
        f"/api/threads/{first_thread}/runs/{first['id']}/cancel", headers=api.headers
    )
    assert cancel.status_code == 200
    run = await api.wait_run(second_thread, second["id"], timeout=5)
    assert run["status"] == "completed"
    assert time.monotonic() - started < 3  # not the 30 s poll
