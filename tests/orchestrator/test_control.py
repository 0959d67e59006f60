"""Cancel, double texting, request metadata and delegation, through the public API."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from uuid import UUID

import pytest
from sqlalchemy import update

from app.db.models import Run
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls


async def test_cancel_mid_tool_stops_within_two_seconds(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(
            Call("test_slow", {"action": "wait", "seconds": 60}),
            Call("test_echo", {"action": "echo", "text": "quick"}),
            text="Working on it",
        ),
        Text("never"),
    )
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "slow please")).json()["run"]["id"]
    await api.wait_activity("in_progress", "test_slow", display_message="Waiting…")
    started = time.monotonic()
    cancel = await api.client.post(
        f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=api.headers
    )
    assert cancel.status_code == 200
    run = await api.wait_run(thread_id, run_id, timeout=2)
    assert time.monotonic() - started < 2
    assert run["status"] == "cancelled"
    again = await api.client.post(
        f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=api.headers
    )
    assert again.json()["status"] == "cancelled"  # idempotent
    messages = await api.messages(thread_id)
    assert messages[1]["role"] == "assistant" and messages[1]["content"] == "Working on it"
    slow, echo = [m["tool_activity"] for m in messages if m["role"] == "tool"]
    assert slow["status"] == "failure" and slow["error_type"] == "cancelled"
    # its last progress no longer holds: replaced by the error, as on every other end
    assert slow["display_message"] is None
    assert slow["data"] == {"type": "error", "error": slow["error"], "error_type": "cancelled"}
    assert echo["status"] in ("success", "failure")  # it may have finished first
    assert len(api.llm.requests) == 1


async def test_cancel_mid_stream_keeps_the_text_so_far(api: OrchestratorApi) -> None:
    api.llm.script(Text("The beginning of a long answer", pieces=3, hang_after=True))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "tell me a story")).json()["run"]["id"]
    await api.frames.wait_for(
        lambda f: type(f).__name__ == "MessageFrame" and f.message.role == "assistant"
    )
    await api.client.post(f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=api.headers)
    run = await api.wait_run(thread_id, run_id, timeout=2)
    assert run["status"] == "cancelled"
    assistant = (await api.messages(thread_id))[-1]
    assert assistant["content"] == "The beginning of a long answer"


async def test_double_texting_queues_the_next_run_in_order(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": 0.3})),
        Text("first"),
        Text("second"),
    )
    thread_id = await api.new_thread()
    first = (await api.post(thread_id, "one")).json()["run"]
    await api.wait_activity("in_progress", "test_slow")
    response = await api.post(thread_id, "two")
    assert response.status_code == 202
    second = response.json()["run"]
    assert second["status"] == "queued"
    done_second = await api.wait_run(thread_id, second["id"])
    done_first = await api.get_run(thread_id, first["id"])
    assert done_first["status"] == done_second["status"] == "completed"
    assert done_first["finished_at"] <= done_second["started_at"]
    # the second run's model saw the whole first turn before the new message
    roles = [m["role"] for m in api.llm.requests[2]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]


async def test_double_texting_reject_answers_409_with_the_active_run(api: OrchestratorApi) -> None:
    agent = await api.add_agent(name="busy", agent_type="tester_reject")
    api.llm.script(ToolCalls(Call("test_slow", {"action": "wait", "seconds": 0.3})), Text("done"))
    thread_id = await api.new_thread(agent.id)
    first = (await api.post(thread_id, "one")).json()["run"]
    refused = await api.post(thread_id, "two")
    assert refused.status_code == 409
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["active_run_id"] == first["id"]
    await api.wait_run(thread_id, first["id"])
    third = await api.post(thread_id, "three")
    assert third.status_code == 202
    await api.wait_run(thread_id, third.json()["run"]["id"])


async def test_request_metadata_narrows_tools_and_runs_calls_first(api: OrchestratorApi) -> None:
    api.llm.script(Text("Here is what I found."))
    thread_id, run = await api.turn(
        "summarise",
        tools=["test_echo"],
        tool_calls=[
            {"name": "test_echo", "args": {"action": "echo", "text": "pre"}},
            {"name": "tasks", "args": {"action": "list"}},  # not in the allow-list
        ],
    )
    assert run["status"] == "completed", run
    tools = await api.tool_messages(thread_id)
    assert [t["tool_activity"]["status"] for t in tools] == ["success", "failure"]
    request = api.llm.requests[0]
    assert [t["function"]["name"] for t in request["tools"]] == ["test_echo"]
    results = [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]
    assert results[0] == {"ok": True, "text": "pre"}
    assert results[1]["error_type"] == "permission_error"
    assert results[1]["error"] == ("tasks(action=list): 'tasks' is not allowed for this request.")


async def test_delegation_to_a_specialist(api: OrchestratorApi) -> None:
    specialist = await api.add_agent(
        name="Researcher", agent_type="specialist", system_prompt="You research."
    )
    api.llm.script(
        ToolCalls(Call("ask_researcher", {"message": "find x"})),  # the assistant delegates
        ToolCalls(Call("test_echo", {"action": "echo", "text": "digging"})),  # specialist's tool
        Text("x is 42"),  # the specialist's answer
        Text("The researcher says x is 42."),  # the assistant's answer
    )
    thread_id, run = await api.turn("what is x?")
    assert run["status"] == "completed", run
    ask, dig = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert ask["name"] == "ask_researcher" and ask["status"] == "success"
    assert ask["data"]["answer"] == "x is 42"
    assert dig["name"] == "test_echo" and dig["input"]["delegated_by"]["agent_id"] == str(
        specialist.id
    )
    specialist_request = api.llm.requests[1]
    assert specialist_request["messages"][0]["content"] == "You research."
    assert [t["function"]["name"] for t in specialist_request["tools"]] == ["memory", "test_echo"]
    final_request = api.llm.requests[3]["messages"]
    assert json.loads(final_request[-1]["content"])["answer"] == "x is 42"
    assert (await api.messages(thread_id))[-1]["content"] == "The researcher says x is 42."


async def test_the_runner_serves_many_threads_at_once(api: OrchestratorApi) -> None:
    api.llm.respond_with(lambda body: Text("ok"))
    results = await asyncio.gather(*(api.turn(f"hi {i}") for i in range(4)))
    assert [run["status"] for _, run in results] == ["completed"] * 4


async def test_a_queued_message_is_not_in_the_earlier_runs_history(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": 0.3})),
        Text("zero"),
        Text("one"),
        Text("two"),
    )
    thread_id = await api.new_thread()
    await api.post(thread_id, "m0")
    await api.wait_activity("in_progress", "test_slow")
    await api.post(thread_id, "m1")
    last = (await api.post(thread_id, "m2")).json()["run"]
    await api.wait_run(thread_id, last["id"])
    user_turns = [
        [m["content"] for m in request["messages"] if m["role"] == "user"]
        for request in api.llm.requests
    ]
    assert user_turns[2] == ["m0", "m1"]  # run 1 does not see m2, queued behind it
    assert user_turns[3] == ["m0", "m1", "m2"]


async def test_a_cancel_asked_by_another_process_is_noticed(api: OrchestratorApi) -> None:
    api.llm.script(ToolCalls(Call("test_slow", {"action": "wait", "seconds": 60})))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "slow")).json()["run"]["id"]
    await api.wait_activity("in_progress", "test_slow")
    # what another process's cancel endpoint writes (no in-process notification here)
    await api.db.execute(update(Run).where(Run.id == UUID(run_id)).values(cancel_requested=True))
    await api.db.commit()
    run = await api.wait_run(thread_id, run_id, timeout=3)
    assert run["status"] == "cancelled"
    activity = (await api.tool_messages(thread_id))[0]["tool_activity"]
    assert activity["error_type"] == "cancelled"


async def test_cancel_while_a_call_waits_ends_each_cell_once_and_shows_no_crash(
    api: OrchestratorApi, caplog: pytest.LogCaptureFixture
) -> None:
    """One call waits for approval, a slower sibling runs: the cancel ends both cells as
    `cancelled`, each in one write, with no "failed unexpectedly" shown first and nothing
    logged as an error (the paused run deadline was rescheduled after its end)."""
    api.llm.script(
        ToolCalls(
            Call("test_confirm", {"action": "do", "note": "wait for me"}),
            Call("test_slow", {"action": "wait", "seconds": 60}),
        ),
        Text("never"),
    )
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "both please")).json()["run"]["id"]
    await api.wait_activity("awaiting_approval", "test_confirm")
    await api.wait_activity("in_progress", "test_slow", display_message="Waiting…")
    with caplog.at_level(logging.ERROR):
        cancel = await api.client.post(
            f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=api.headers
        )
        assert cancel.status_code == 200
        run = await api.wait_run(thread_id, run_id, timeout=5)
        await api.drain()
    assert run["status"] == "cancelled"
    writes = api.frames.cell_ends(thread_id)
    assert sorted(len(ends) for ends in writes.values()) == [1, 1], writes
    assert {ends[0] for ends in writes.values()} == {("failure", "cancelled")}, writes
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
