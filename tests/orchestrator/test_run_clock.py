"""Every stored time of a run and of its cells is on the database's clock, so its times
and duration are right whichever host queued, ran and ended it.

A host whose clock runs 60 s behind the database's knows it (app/db/clock.py measures
the offset); here the offset is set as that host would have measured it. Before, the
claim stamped `started_at` on the database clock and the end `finished_at` on the
host's: the run finished a minute before it started.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from app.db import clock
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls

BEHIND = timedelta(seconds=60)


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_a_run_on_a_host_behind_the_database_ends_after_it_starts(
    api: OrchestratorApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clock, "_offset", BEHIND)  # this host: 60 s behind the database
    api.llm.script(ToolCalls(Call("tasks", {"action": "list"})), Text("Nothing to do."))
    thread_id, run = await api.turn("what do I have to do?")
    assert run["status"] == "completed", run
    created, started = _time(run["created_at"]), _time(run["started_at"])
    finished = _time(run["finished_at"])
    assert created <= started <= finished
    assert 0 <= run["duration_ms"] < 30_000  # seconds at most, not a minute off
    [tool] = await api.tool_messages(thread_id)
    cell = tool["tool_activity"]
    assert _time(cell["started_at"]) <= _time(cell["finished_at"])
    assert started - timedelta(seconds=1) <= _time(cell["started_at"])
