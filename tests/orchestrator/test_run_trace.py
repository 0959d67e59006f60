"""Every run carries a trace (`GET …/runs/{run_id}`): one step per model turn that called
tools, the pre-flight calls, the answer; and each tool call's outcome from its cell."""

from __future__ import annotations

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Error, Text, ToolCalls


def step_rows(run: dict) -> list[tuple[str, str, str]]:
    return [(s["id"], s["action"], s["status"]) for s in run["steps"]]


async def test_each_tool_round_is_a_step_and_each_call_a_result(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(
            Call("test_echo", {"action": "echo", "text": "one"}),
            Call("test_echo", {"action": "echo", "text": "two"}),
        ),
        ToolCalls(Call("test_raise", {"action": "boom", "text": "x"})),
        Text("Done."),
    )
    thread_id, run = await api.turn("go")
    assert run["status"] == "completed", run
    assert step_rows(run) == [
        ("turn-1", "tool", "ok"),
        ("turn-2", "tool", "error"),
        ("completion", "completion", "ok"),
    ]
    assert run["steps"][0]["label"] == "Model turn 1: test_echo"
    assert run["steps"][1]["error"] == "1 of 1 tool call(s) failed."
    tools = await api.tool_messages(thread_id)
    assert run["steps"][0]["tool_call_ids"] == [t["tool_activity"]["id"] for t in tools[:2]]
    results = run["tool_results"]
    assert [(r["name"], r["status"]) for r in results] == [
        ("test_echo", "success"),
        ("test_echo", "success"),
        ("test_raise", "failure"),
    ]
    assert results[0]["input"] == {"action": "echo", "text": "one"}
    assert results[0]["data"] == {"text": "one"} and results[0]["error"] is None
    assert results[2]["error_type"] == "system_error"
    assert results[2]["data"] == {
        "type": "error",
        "error": results[2]["error"],
        "error_type": "system_error",
    }
    assert [r["message_id"] for r in results] == [t["id"] for t in tools]
    assert all(r["step_id"] is None for r in results)


async def test_pre_flight_calls_are_their_own_step(api: OrchestratorApi) -> None:
    api.llm.script(Text("Echoed."))
    pre = [{"name": "test_echo", "args": {"action": "echo", "text": "pre"}}]
    _, run = await api.turn("echo first", tool_calls=pre)
    assert step_rows(run) == [
        ("preflight", "tool", "ok"),
        ("completion", "completion", "ok"),
    ]
    assert run["tool_results"][0]["data"] == {"text": "pre"}


async def test_a_failed_run_says_why_in_its_last_step(api: OrchestratorApi) -> None:
    api.llm.script(Error(400, "the request is malformed"))
    _, run = await api.turn("hello")
    assert run["status"] == "failed"
    assert step_rows(run) == [("completion", "completion", "error")]
    assert run["steps"][0]["error"] == run["error"]
    assert run["tool_results"] == []


async def test_a_queued_run_has_an_empty_trace(api: OrchestratorApi) -> None:
    api.llm.script(Text("Hi."))
    thread_id, run = await api.turn("hello")
    assert step_rows(run) == [("completion", "completion", "ok")]
    # the run frames and the POST answer stay small: no trace there
    response = await api.post(thread_id, "again", client_message_id="x1")
    assert "steps" not in response.json()["run"]
    await api.wait_run(thread_id, response.json()["run"]["id"])
