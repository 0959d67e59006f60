"""Exactly one terminal write per cell, on every way a call can end (issue 40): success,
each failure kind, an expired wait, a denial, a cancel (running and waiting), the end of
a delegation and the loss of the run's lease. What is counted is what a phone sees: the
frames that show a cell ended (each a committed write of it)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from uuid import UUID

import pytest
import yaml
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.db.models import Run
from app.orchestrator.scheduling import reaper
from app.threads import activity as cell
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.test_tools import GateTool, register_test_tools, write_agent_types

APPROVAL_SECONDS = 1.5
DELEGATION_SECONDS = 1.0


@pytest.fixture(scope="module")
def agent_types_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    register_test_tools()
    path = write_agent_types(tmp_path_factory.mktemp("terminal_writes"))
    data = yaml.safe_load(path.read_text())
    data["agent_types"]["specialist"]["tools"] = ["test_slow"]
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {
        "approval_ttl_seconds": APPROVAL_SECONDS,
        "delegation_timeout_seconds": DELEGATION_SECONDS,
    }


Ending = tuple[str, str | None]  # a cell's (status, error_type)


async def _started(api: OrchestratorApi, call: Call, agent_type: str | None = None) -> tuple:
    api.llm.script(ToolCalls(call), Text("Done."))
    agent_id = None
    if agent_type is not None:
        agent_id = (await api.add_agent(name=agent_type, agent_type=agent_type)).id
    thread_id = await api.new_thread(agent_id)
    response = await api.post(thread_id, "go")
    assert response.status_code == 202, response.text
    return thread_id, response.json()["run"]["id"]


async def _cancel(api: OrchestratorApi, thread_id: str, run_id: str) -> None:
    url = f"/api/threads/{thread_id}/runs/{run_id}/cancel"
    assert (await api.client.post(url, headers=api.headers)).status_code == 200


Walk = Callable[[OrchestratorApi, async_sessionmaker[AsyncSession]], Awaitable[tuple]]


async def _ran(api: OrchestratorApi, _: object) -> tuple:
    return await _started(api, Call("test_echo", {"action": "echo", "text": "hi"}))


async def _invalid(api: OrchestratorApi, _: object) -> tuple:
    return await _started(api, Call("test_echo", {"action": "echo", "txet": "hi"}))


async def _raised(api: OrchestratorApi, _: object) -> tuple:
    return await _started(api, Call("test_raise", {"action": "boom", "text": "x"}))


async def _overran(api: OrchestratorApi, _: object) -> tuple:
    return await _started(api, Call("test_timeout", {"action": "wait", "seconds": 30}))


async def _denied(api: OrchestratorApi, _: object) -> tuple:
    call = Call("test_confirm", {"action": "do", "note": "no"})
    thread_id, run_id = await _started(api, call, "tester_days")
    waiting = await api.wait_activity("awaiting_approval", "test_confirm")
    assert (await api.decide(thread_id, waiting["id"], False)).status_code == 200
    return thread_id, run_id


async def _expired(api: OrchestratorApi, _: object) -> tuple:
    return await _started(api, Call("test_confirm", {"action": "do", "note": "later"}))


async def _device_expired(api: OrchestratorApi, _: object) -> tuple:
    return await _started(api, Call("test_quick_device", {}), "tester_device")


async def _cancelled_running(api: OrchestratorApi, _: object) -> tuple:
    thread_id, run_id = await _started(api, Call("test_slow", {"action": "wait", "seconds": 60}))
    await api.wait_activity("in_progress", "test_slow")
    await _cancel(api, thread_id, run_id)
    return thread_id, run_id


async def _cancelled_waiting(api: OrchestratorApi, _: object) -> tuple:
    call = Call("test_confirm", {"action": "do", "note": "wait"})
    thread_id, run_id = await _started(api, call, "tester_days")
    await api.wait_activity("awaiting_approval", "test_confirm")
    await _cancel(api, thread_id, run_id)
    return thread_id, run_id


async def _delegation_ended(api: OrchestratorApi, _: object) -> tuple:
    await api.add_agent(name="Sage", agent_type="specialist", system_prompt="You are Sage.")
    api.llm.script(
        ToolCalls(Call("ask_sage", {"message": "take your time"})),
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": 60})),
        Text("Sage took too long."),
    )
    thread_id = await api.new_thread()
    return thread_id, (await api.post(thread_id, "ask sage")).json()["run"]["id"]


async def _lease_lost(api: OrchestratorApi, sessions: async_sessionmaker[AsyncSession]) -> tuple:
    """The run's lease lapses while its tool runs; a peer's reaper fails the run and closes
    the cell; the tool then ends on the old host, whose write is refused."""
    GateTool.gate = asyncio.Event()
    thread_id, run_id = await _started(api, Call("test_gate", {"action": "wait"}))
    await api.wait_activity("in_progress", "test_gate")
    async with sessions() as session:
        lapsed = update(Run).where(Run.id == UUID(run_id)).values(lease_expires_at=clock.now())
        await session.execute(lapsed)
        assert [r.id for r in await reaper.reap_expired_runs(session)] == [UUID(run_id)]
        await session.commit()
    GateTool.gate.set()
    worker = api.app.state.run_worker
    async with asyncio.timeout(10), worker.finished:
        await worker.finished.wait_for(lambda: not worker.executions)
    return thread_id, run_id


WALKS: dict[str, tuple[Walk, str, dict[str, Ending]]] = {
    # walk, the run's end, and each cell's one ending
    "success": (_ran, "completed", {"test_echo": ("success", None)}),
    "invalid": (_invalid, "completed", {"test_echo": ("failure", "validation_error")}),
    "raised": (_raised, "completed", {"test_raise": ("failure", "system_error")}),
    "timeout": (_overran, "completed", {"test_timeout": ("failure", "timeout")}),
    "denied": (_denied, "completed", {"test_confirm": ("failure", "permission_error")}),
    "approval_expired": (_expired, "completed", {"test_confirm": ("failure", "timeout")}),
    "device_expired": (_device_expired, "completed", {"test_quick_device": ("failure", "timeout")}),
    "cancel_running": (_cancelled_running, "cancelled", {"test_slow": ("failure", "cancelled")}),
    "cancel_waiting": (_cancelled_waiting, "cancelled", {"test_confirm": ("failure", "cancelled")}),
    "delegation_end": (
        _delegation_ended,
        "completed",
        {"ask_sage": ("failure", "timeout"), "test_slow": ("failure", "timeout")},
    ),
    "lease_lost": (_lease_lost, "failed", {"test_gate": ("failure", "system_error")}),
}


@pytest.mark.parametrize("path", list(WALKS))
async def test_every_ending_is_one_write(
    api: OrchestratorApi, session_factory: async_sessionmaker[AsyncSession], path: str
) -> None:
    walk, run_end, endings = WALKS[path]
    thread_id, run_id = await walk(api, session_factory)
    run = await api.wait_run(thread_id, run_id, timeout=APPROVAL_SECONDS + 10)
    await api.drain()
    assert run["status"] == run_end, run
    assert api.frames.cell_ends(thread_id) == {name: [end] for name, end in endings.items()}
    # What a fresh read shows agrees with the one write each cell got.
    stored = {m["tool_activity"]["name"]: m for m in await api.tool_messages(thread_id)}
    for name, (status, error_type) in endings.items():
        activity = stored[name]["tool_activity"]
        assert (activity["status"], activity["error_type"]) == (status, error_type), activity
    if path == "lease_lost":
        assert stored["test_gate"]["tool_activity"]["error"] == cell.INTERRUPTED
