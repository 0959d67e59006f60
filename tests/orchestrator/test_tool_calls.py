"""Tool calls of one turn: concurrency, isolation, self-correcting errors, loop guards."""

from __future__ import annotations

import json
from datetime import datetime
from uuid import UUID

from sqlalchemy import select

from app.db.models import ThreadMessage
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.test_tools import EchoTool

BOTH_DOORS = True  # every test runs through both paths of the model door


def _results(api: OrchestratorApi, request: int = 1) -> list[dict]:
    return [
        json.loads(m["content"])
        for m in api.llm.requests[request]["messages"]
        if m["role"] == "tool"
    ]


async def test_three_parallel_calls_each_become_a_cell(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(
            Call("test_slow", {"action": "wait", "seconds": 0.5}),
            Call("test_slow", {"action": "wait", "seconds": 0.5}),
            Call("test_echo", {"action": "echo", "text": "x"}),
        ),
        Text("All done."),
    )
    thread_id, run = await api.turn("go")
    assert run["status"] == "completed", run
    tools = await api.tool_messages(thread_id)
    assert [t["tool_activity"]["status"] for t in tools] == ["success"] * 3
    # concurrent: each wait started before the other ended (the stored cells keep
    # sub-second precision; the API serves whole seconds)
    stored = [
        row.tool_activity
        for row in await api.db.scalars(
            select(ThreadMessage)
            .where(ThreadMessage.thread_id == UUID(thread_id), ThreadMessage.role == "tool")
            .execution_options(populate_existing=True)
        )
    ]
    waits = [a for a in stored if a["name"] == "test_slow"]
    starts = [datetime.fromisoformat(a["started_at"]) for a in waits]
    ends = [datetime.fromisoformat(a["finished_at"]) for a in waits]
    assert len(waits) == 2 and max(starts) < min(ends), waits
    assert len(_results(api)) == 3  # the model saw every result, in call order
    messages = await api.messages(thread_id)
    assert [m["position"] for m in messages] == list(range(1, len(messages) + 1))
    seqs = [f.seq for _, f in api.frames.frames if type(f).__name__ == "MessageFrame"]
    assert sorted(seqs) == list(range(seqs[0], seqs[0] + len(seqs)))  # gap-free, no repeats


async def test_bad_calls_get_self_correcting_errors_and_do_not_sink_the_others(
    api: OrchestratorApi,
) -> None:
    api.llm.script(
        ToolCalls(
            Call("tasks", '{"action": "create", "title": '),  # invalid JSON
            Call("tasks", {"action": "create"}),  # schema: title missing
            Call("no_such_tool", {"x": 1}),  # unknown tool
            Call("test_raise", {"action": "boom", "text": "x"}),  # the tool raises
            Call("test_timeout", {"action": "wait", "seconds": 5}),  # the tool times out
            Call("test_echo", {"action": "echo", "text": "fine"}),  # succeeds anyway
        ),
        Text("Sorry about those."),
    )
    thread_id, run = await api.turn("do many things")
    assert run["status"] == "completed", run
    activities = [t["tool_activity"] for t in await api.tool_messages(thread_id)]
    assert [a["status"] for a in activities] == ["failure"] * 5 + ["success"]
    assert [a["error_type"] for a in activities[:5]] == [
        "validation_error",
        "validation_error",
        "validation_error",
        "system_error",
        "timeout",
    ]
    assert "secret internals" not in json.dumps(activities)
    results = _results(api)
    assert results[1]["error_type"] == "validation_error" and "title" in json.dumps(results[1])
    assert "test_echo" in results[2]["available_tools"]
    assert results[5] == {"ok": True, "text": "fine"}
    # each error the model reads starts with the call it answers; the cell's error does not
    assert [r["error"].partition(": ")[0] for r in results[:5]] == [
        "tasks(…)",
        "tasks(action=create)",
        "no_such_tool(x=1)",
        'test_raise(action=boom, text="x")',
        "test_timeout(action=wait, seconds=5.0)",  # as parsed: a float parameter
    ]
    assert results[1]["error"] == "tasks(action=create): title is required for create action."
    assert activities[1]["error"] == "title is required for create action."


async def test_identical_calls_are_answered_once_and_the_loop_is_stopped(
    api: OrchestratorApi,
) -> None:
    EchoTool.calls.clear()
    same = {"action": "echo", "text": "again"}
    api.llm.script(*[ToolCalls(Call("test_echo", same)) for _ in range(4)])
    thread_id, run = await api.turn("loop please")
    assert run["status"] == "completed", run
    assert EchoTool.calls == ["again"]  # the side effect happened once
    assert len(api.llm.requests) == 3  # one real call, then two duplicate turns: stopped
    messages = await api.messages(thread_id)
    assert "repeating" in messages[-1]["content"]
    assert _results(api, 2)[-1]["duplicate"] is True


async def test_identical_calls_of_a_turn_show_as_duplicates_of_the_first(
    api: OrchestratorApi,
) -> None:
    """Three identical creates: one task, one "Created" cell, two cells that name the call
    that answered them (`data.duplicate_of`) and say so."""
    same = {"action": "create", "title": "Buy milk"}
    api.llm.script(
        ToolCalls(
            Call("tasks", same, id="c1"), Call("tasks", same, id="c2"), Call("tasks", same, id="c3")
        ),
        Text("Created it."),
    )
    thread_id, run = await api.turn("remind me to buy milk")
    assert run["status"] == "completed", run
    first, *repeats = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert first["status"] == "success" and "duplicate_of" not in first["data"]
    assert first["display_message"].startswith("Created")
    for repeat in repeats:
        assert repeat["status"] == "success"
        assert repeat["data"]["duplicate_of"] == "c1"
        assert repeat["data"]["task_id"] == first["data"]["task_id"]
        assert repeat["display_message"] == (
            f"Duplicate of c1, not run again: {first['display_message']}"
        )
        assert repeat["preview"][0].startswith("Duplicate of c1")
    tasks = (await api.client.get("/api/tasks", headers=api.headers)).json()["items"]
    assert [t["title"] for t in tasks] == ["Buy milk"]
    read = _results(api)
    assert "duplicate_of" not in read[0]
    assert read[1]["duplicate_of"] == "c1" and read[1]["duplicate"] is True


async def test_step_limit_ends_a_runaway_loop_with_a_clear_note(api: OrchestratorApi) -> None:
    api.llm.script(
        *[ToolCalls(Call("test_echo", {"action": "echo", "text": f"n{i}"})) for i in range(10)]
    )
    thread_id, run = await api.turn("never stop")
    assert run["status"] == "completed", run
    assert len(api.llm.requests) == 4  # tester's step_limit
    last = (await api.messages(thread_id))[-1]
    assert last["role"] == "assistant" and "limit of 4 steps" in last["content"]
    assert all(
        t["tool_activity"]["status"] == "success" for t in await api.tool_messages(thread_id)
    )


async def test_tool_call_budget_ends_the_run(api: OrchestratorApi) -> None:
    calls = [Call("test_echo", {"action": "echo", "text": f"b{i}"}) for i in range(10)]
    api.llm.script(ToolCalls(*calls), Text("unused"))
    thread_id, run = await api.turn("ten at once")
    assert run["status"] == "completed", run
    activities = [t["tool_activity"] for t in await api.tool_messages(thread_id)]
    assert [a["status"] for a in activities] == ["success"] * 8 + ["failure"] * 2  # budget 8
    assert activities[-1]["error_type"] == "user_error"
    assert "budget" in (await api.messages(thread_id))[-1]["content"]
    assert len(api.llm.requests) == 1
