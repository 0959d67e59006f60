"""The planner agent type: a strict JSON plan, a plan cell, steps executed in order, and
the run's trace, all through the API against the fake model."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec

from app.db.models import Memory
from app.realtime.events import MessageFrame
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Text
from tests.support.test_tools import EchoTool, GateTool

BOTH_DOORS = True  # the plan's structured-output call goes through both paths of the door


def plan_text(*steps: dict[str, Any], description: str = "Plan for the answer.") -> Text:
    return Text(json.dumps({"description": description, "steps": list(steps)}))


def tool(step_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"id": step_id, "label": f"Run {name}", "executor": "agent", "action": "tool",
            "tool": name, "args": args}  # fmt: skip


def memory(step_id: str, query: str | None = None) -> dict[str, Any]:
    step = {"id": step_id, "label": "Recall", "executor": "agent", "action": "memory"}
    return {**step, "args": {"query": query}} if query else step


ECHO_HI = tool("echo", "test_echo", action="echo", text="hi")
BOOM = tool("boom", "test_raise", action="boom", text="x")
COMPLETION = {"id": "answer", "label": "Answer", "executor": "litellm", "action": "completion"}


async def planner_thread(api: OrchestratorApi) -> str:
    agent = await api.add_agent(name="planner", agent_type="tester_planner")
    return await api.new_thread(agent.id)


def plan_message(messages: list[dict]) -> dict:
    [message] = [m for m in messages if m.get("plan") is not None]
    return message


def statuses(plan: dict) -> dict[str, str]:
    return {step["id"]: step["status"] for step in plan["steps"]}


def plan_frames(api: OrchestratorApi) -> list[dict]:
    frames = [f for _, f in api.frames.frames if isinstance(f, MessageFrame) and f.message.plan]
    return [{"seq": f.seq, **msgspec.to_builtins(f.message.plan)} for f in frames]


async def test_a_plan_runs_memory_tool_and_completion_steps(api: OrchestratorApi) -> None:
    api.db.add(Memory(owner_id=api.user.user.id, key="coffee", content="Takes coffee black."))
    await api.db.commit()
    api.llm.script(
        plan_text(memory("recall", "coffee"), ECHO_HI, COMPLETION),
        Text("You take it black, and I echoed hi."),
    )
    thread_id, run = await api.turn("How do I take my coffee?", await planner_thread(api))
    assert run["status"] == "completed", run

    # the plan was asked for as structured output, without tools
    first = api.llm.requests[0]
    assert first["response_format"]["type"] == "json_schema"
    assert "tools" not in first
    assert "test_echo" in first["messages"][-1]["content"]  # the inventory is in the prompt
    # the completion saw the recall and the tool's result, and could call no tools
    answer_request = api.llm.requests[1]
    assert "tools" not in answer_request and "response_format" not in answer_request
    seen = json.dumps(answer_request["messages"])
    assert "Takes coffee black." in seen and '\\"text\\": \\"hi\\"' in seen

    messages = await api.messages(thread_id)
    cell = plan_message(messages)
    assert cell["role"] == "assistant" and cell["is_user_facing"] and cell["content"] is None
    plan = cell["plan"]
    assert plan["status"] == "ok" and plan["attempts"] == 1
    assert statuses(plan) == {"recall": "ok", "echo": "ok", "answer": "ok"}
    assert plan["steps"][0]["detail"] == "Recalled 1 memory"
    [echo] = await api.tool_messages(thread_id)
    assert echo["tool_activity"]["step_id"] == "echo"
    assert plan["steps"][1]["tool_call_id"] == echo["tool_activity"]["id"]
    assert messages[-1]["content"] == "You take it black, and I echoed hi."
    assert cell["position"] < echo["position"] < messages[-1]["position"]

    # every change of the cell went out as a message frame with a new seq
    frames = plan_frames(api)
    assert [f["seq"] for f in frames] == sorted({f["seq"] for f in frames})
    assert frames[0]["steps"] == [] and frames[0]["status"] == "in_progress"
    seen_statuses = [statuses(f).get("echo") for f in frames]
    assert seen_statuses.index("pending") < seen_statuses.index("in_progress")
    assert seen_statuses.index("in_progress") < seen_statuses.index("ok")

    # the run's trace
    trace = await api.get_run(thread_id, run["id"])
    assert [(s["id"], s["action"], s["status"]) for s in trace["steps"]] == [
        ("plan", "plan", "ok"),
        ("recall", "memory", "ok"),
        ("echo", "tool", "ok"),
        ("answer", "completion", "ok"),
    ]
    assert trace["steps"][2]["tool_call_ids"] == [echo["tool_activity"]["id"]]
    [result] = trace["tool_results"]
    assert result["name"] == "test_echo" and result["status"] == "success"
    assert result["input"] == {"action": "echo", "text": "hi"}
    assert result["data"] == {"text": "hi"} and result["step_id"] == "echo"


async def test_an_invalid_plan_gets_one_correction(api: OrchestratorApi) -> None:
    api.llm.script(
        Text("Sure! Here is my plan: first I will..."),  # not JSON
        plan_text(COMPLETION),
        Text("Hello."),
    )
    thread_id, run = await api.turn("hi", await planner_thread(api))
    assert run["status"] == "completed", run
    correction = api.llm.requests[1]["messages"][-1]
    assert correction["role"] == "user" and "not valid JSON" in correction["content"]
    plan = plan_message(await api.messages(thread_id))["plan"]
    assert plan["attempts"] == 2 and statuses(plan) == {"answer": "ok"}


async def test_a_plan_invalid_twice_fails_the_run_clearly(api: OrchestratorApi) -> None:
    unknown = plan_text(tool("fetch", "web_fetch", url="https://example.com"), COMPLETION)
    misordered = plan_text(COMPLETION, tool("x", "test_echo", action="echo", text="a"),
                           tool("x", "test_echo", action="echo", text="b"))  # fmt: skip
    api.llm.script(unknown, misordered, Text("never asked"))
    thread_id, run = await api.turn("fetch it", await planner_thread(api))
    assert run["status"] == "failed"
    assert "valid plan" in run["error"]
    assert "must be the last step" in run["error"] and "repeated: x" in run["error"]
    assert len(api.llm.requests) == 2
    retry = api.llm.requests[1]["messages"][-1]["content"]
    assert "unknown tool 'web_fetch'" in retry and "test_echo" in retry  # what is available
    messages = await api.messages(thread_id)
    plan = plan_message(messages)["plan"]
    assert plan["status"] == "error" and plan["steps"] == [] and plan["attempts"] == 2
    assert plan["error"] == run["error"]
    assert not await api.tool_messages(thread_id)  # nothing of a bad plan ran
    trace = await api.get_run(thread_id, run["id"])
    assert [(s["id"], s["status"]) for s in trace["steps"]] == [("plan", "error")]
    assert trace["steps"][0]["error"] == run["error"] and trace["tool_results"] == []


async def test_a_failed_tool_step_skips_the_rest_but_the_answer_comes(
    api: OrchestratorApi,
) -> None:
    EchoTool.calls.clear()
    api.llm.script(
        plan_text(BOOM, tool("echo", "test_echo", action="echo", text="later"), COMPLETION),
        Text("The first step failed, sorry."),
    )
    thread_id, run = await api.turn("do both", await planner_thread(api))
    assert run["status"] == "completed", run
    plan = plan_message(await api.messages(thread_id))["plan"]
    assert statuses(plan) == {"boom": "error", "echo": "skipped", "answer": "ok"}
    assert plan["steps"][1]["error"] == "Skipped: step boom failed."
    assert EchoTool.calls == []
    told = api.llm.requests[1]["messages"][-1]["content"]
    assert "boom (Run test_raise): error" in told and "echo (Run test_echo): skipped" in told
    trace = await api.get_run(thread_id, run["id"])
    [result] = trace["tool_results"]
    assert result["status"] == "failure" and result["error_type"] == "system_error"
    assert result["error"] and result["step_id"] == "boom"
    assert result["data"]["type"] == "error" and result["data"]["error"] == result["error"]


async def test_cancelling_mid_plan_closes_the_plan_cell(api: OrchestratorApi) -> None:
    GateTool.gate = asyncio.Event()
    api.llm.script(plan_text(tool("wait", "test_gate", action="wait"), COMPLETION))
    thread_id = await planner_thread(api)
    response = await api.post(thread_id, "wait for it")
    run_id = response.json()["run"]["id"]
    await api.wait_activity("in_progress", "test_gate")
    cancel = await api.client.post(
        f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=api.headers
    )
    assert cancel.status_code == 200
    run = await api.wait_run(thread_id, run_id)
    assert run["status"] == "cancelled"
    plan = plan_message(await api.messages(thread_id))["plan"]
    assert plan["status"] == "error"
    assert statuses(plan) == {"wait": "error", "answer": "skipped"}
    trace = await api.get_run(thread_id, run_id)
    assert [s["status"] for s in trace["steps"]] == ["ok", "error", "skipped"]


async def test_memory_steps_need_the_memory_tool(api: OrchestratorApi) -> None:
    agent = await api.add_agent(
        name="no memory", agent_type="tester_planner", enabled_tools=["test_echo"]
    )
    api.llm.script(plan_text(memory("recall"), COMPLETION), plan_text(COMPLETION), Text("Hi."))
    _, run = await api.turn("hi", await api.new_thread(agent.id))
    assert run["status"] == "completed", run
    retry = api.llm.requests[1]["messages"][-1]["content"]
    assert "memory steps are not available" in retry


async def test_the_offline_demo_model_plans_too(api: OrchestratorApi) -> None:
    agent = await api.add_agent(name="demo planner", agent_type="planner", model="demo/tool-demo")
    thread_id, run = await api.turn("remind me to water the plants", await api.new_thread(agent.id))
    assert run["status"] == "completed", run
    messages = await api.messages(thread_id)
    plan = plan_message(messages)["plan"]
    assert statuses(plan) == {"step-1": "ok", "answer": "ok"}
    [task] = await api.tool_messages(thread_id)
    assert task["tool_activity"]["input"] == {"action": "create", "title": "water the plants"}
    assert "water the plants" in messages[-1]["content"]
    assert api.llm.requests == []  # nothing went to the network


async def test_a_tool_step_waits_for_approval_like_any_call(api: OrchestratorApi) -> None:
    api.llm.script(
        plan_text(tool("confirm", "test_confirm", action="do", note="ship it"), COMPLETION),
        Text("Shipped."),
    )
    thread_id = await planner_thread(api)
    response = await api.post(thread_id, "ship it")
    run_id = response.json()["run"]["id"]
    waiting = await api.wait_activity("awaiting_approval", "test_confirm")
    assert waiting["tool_activity"]["step_id"] == "confirm"
    plan = plan_message(await api.messages(thread_id))["plan"]
    assert statuses(plan) == {"confirm": "in_progress", "answer": "pending"}
    decided = await api.decide(thread_id, waiting["id"], True)
    assert decided.status_code == 200, decided.text
    run = await api.wait_run(thread_id, run_id)
    assert run["status"] == "completed", run
    plan = plan_message(await api.messages(thread_id))["plan"]
    assert statuses(plan) == {"confirm": "ok", "answer": "ok"}


async def test_pre_flight_calls_come_before_the_plan(api: OrchestratorApi) -> None:
    api.llm.script(plan_text(COMPLETION), Text("Echoed."))
    pre = [{"name": "test_echo", "args": {"action": "echo", "text": "pre"}}]
    _, run = await api.turn("echo first", await planner_thread(api), tool_calls=pre)
    assert run["status"] == "completed", run
    assert [(s["id"], s["status"]) for s in run["steps"]] == [
        ("preflight", "ok"),
        ("plan", "ok"),
        ("answer", "ok"),
    ]
    planning = json.dumps(api.llm.requests[0]["messages"])
    assert '\\"text\\": \\"pre\\"' in planning  # the plan was made knowing the result
