"""A specialist's call that waits for the user, and a delegation that ends first: the
delegation's clock stops while the user decides; when a delegation ends, every cell its
specialist opened is terminal with it (issue 40, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.threads.activity import DELEGATION_ENDED
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.test_tools import register_test_tools, write_agent_types

DELEGATION_SECONDS = 1.0
APPROVAL_SECONDS = 3.0  # longer than the delegation: its clock must stop meanwhile


@pytest.fixture(scope="module")
def agent_types_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    register_test_tools()
    path = write_agent_types(tmp_path_factory.mktemp("delegation_waits"))
    data = yaml.safe_load(path.read_text())
    data["agent_types"]["specialist"]["tools"] = ["test_confirm", "test_slow"]
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {
        "delegation_timeout_seconds": DELEGATION_SECONDS,
        "approval_ttl_seconds": APPROVAL_SECONDS,
        "llm_timeout_seconds": 5.0,
    }


async def test_the_delegation_waits_while_the_user_decides(api: OrchestratorApi) -> None:
    """Before: `ask_sage` failed `timeout` after the delegation's second while Sage's cell
    stayed `awaiting_approval` for ever. Now the approval expires on its own clock, Sage
    answers, and every cell of the run is terminal."""
    await api.add_agent(name="Sage", agent_type="specialist", system_prompt="You are Sage.")
    api.llm.script(
        ToolCalls(Call("ask_sage", {"message": "do the thing"})),
        ToolCalls(Call("test_confirm", {"action": "do", "note": "needs a yes"})),
        Text("Nobody approved, so I did nothing."),  # Sage, after the expiry
        Text("Sage could not do it."),
    )
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "ask sage")).json()["run"]["id"]
    waiting = await api.wait_activity("awaiting_approval", "test_confirm")
    run = await api.wait_run(thread_id, run_id, timeout=APPROVAL_SECONDS + 10)
    assert run["status"] == "completed", run
    cells = {
        m["tool_activity"]["name"]: m["tool_activity"] for m in await api.tool_messages(thread_id)
    }
    assert cells["ask_sage"]["status"] == "success", cells["ask_sage"]
    assert cells["ask_sage"]["data"]["answer"] == "Nobody approved, so I did nothing."
    confirm = cells["test_confirm"]
    assert confirm["status"] == "failure" and confirm["error_type"] == "timeout", (
        confirm["error"],
        confirm["error_type"],
    )
    late = await api.decide(thread_id, waiting["id"], True)
    assert late.status_code == 409 and "expired" in late.json()["detail"], late.text


async def test_a_delegation_that_ends_ends_its_specialists_cells(api: OrchestratorApi) -> None:
    """Before: the delegation timed out, its specialist's running call was cancelled and
    its cell stayed `in_progress` in a completed run."""
    await api.add_agent(name="Sage", agent_type="specialist", system_prompt="You are Sage.")
    api.llm.script(
        ToolCalls(Call("ask_sage", {"message": "take your time"})),
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": 60})),
        Text("Sage took too long."),
    )
    thread_id, run = await api.turn("ask sage slowly")
    assert run["status"] == "completed", run
    cells = {
        m["tool_activity"]["name"]: m["tool_activity"] for m in await api.tool_messages(thread_id)
    }
    assert cells["ask_sage"]["status"] == "failure" and cells["ask_sage"]["error_type"] == "timeout"
    slow = cells["test_slow"]
    assert slow["status"] == "failure" and slow["error"] == DELEGATION_ENDED, slow
    assert slow["error_type"] == "timeout", slow
