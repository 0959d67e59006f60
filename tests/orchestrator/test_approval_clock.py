"""A wait's expiry is stamped and judged on the database's clock (app/db/clock.py): an
approval that arrives at a host whose clock runs ahead, in time on the database's clock,
is taken, and the waiting run does not expire it either."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from app.db import clock
from app.lib.time import utcnow
from app.orchestrator.loop import waiting as waits
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls

TTL_SECONDS = 60
SKEW_SECONDS = 90  # more than the TTL: on this host's own clock the wait is over


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    # The waiting run looks at its cell once, then only when woken (by the answer), not
    # every half second: a look between this host's clock jumping ahead and its offset
    # being measured would expire the wait (a real clock is ahead all along, and measured).
    return {"approval_ttl_seconds": TTL_SECONDS, "runner_poll_seconds": 30.0}


async def test_an_approval_in_time_on_the_database_clock_is_taken_on_a_host_ahead(
    api: OrchestratorApi, monkeypatch: pytest.MonkeyPatch, dialect: str
) -> None:
    if dialect == "sqlite":
        pytest.skip("SQLite is one host and one clock (no offset to measure)")
    looked = asyncio.Event()  # the waiting run has read its cell once: it now waits
    read = waits._read

    async def first_look(deps: Any, message: Any) -> Any:
        fresh = await read(deps, message)
        looked.set()
        return fresh

    monkeypatch.setattr(waits, "_read", first_look)
    api.llm.script(ToolCalls(Call("test_confirm", {"action": "do", "note": "n"})), Text("done"))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "do it")).json()["run"]["id"]
    message = await api.wait_activity("awaiting_approval")
    await asyncio.wait_for(looked.wait(), timeout=10)

    def ahead():
        return utcnow() + timedelta(seconds=SKEW_SECONDS)

    try:  # from here on this host's clock runs ahead, and it measured its offset
        monkeypatch.setattr(clock, "utcnow", ahead)
        monkeypatch.setattr(waits, "utcnow", ahead, raising=False)  # the code before
        await clock.synchronize(api.db)
        decided = await api.decide(thread_id, message["id"], True)
        assert decided.status_code == 200, decided.text
        run = await api.wait_run(thread_id, run_id)
    finally:
        monkeypatch.undo()
        await clock.synchronize(api.db)
    assert run["status"] == "completed"
    activity = (await api.tool_messages(thread_id))[0]["tool_activity"]
    assert activity["status"] == "success", activity
