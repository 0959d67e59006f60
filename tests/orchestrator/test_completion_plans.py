"""Seed 001 through `/v1/chat/completions` with the official `openai` client: a planner
agent's answer carries its plan (`metadata.plan`), a streamed answer sends each step as it
happens, and a plan's remote completion goes to the model it names through the provider
profiles."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import FakeLLM, Text
from tests.support.test_tools import GateTool


@pytest.fixture(scope="module")
def settings_overrides(fake_llm: FakeLLM) -> dict:
    profiles = {"profiles": {"bigger": {"kind": "openai", "base_url": fake_llm.base_url}}}
    return {"llm_profiles": json.dumps(profiles)}


def plan_text(*steps: dict[str, Any]) -> Text:
    return Text(json.dumps({"description": "Plan for the answer.", "steps": list(steps)}))


ECHO = {"id": "echo", "label": "Echo", "executor": "agent", "action": "tool",
        "tool": "test_echo", "args": {"action": "echo", "text": "hi"}}  # fmt: skip
GATE = {"id": "gate", "label": "Wait", "executor": "agent", "action": "tool",
        "tool": "test_gate", "args": {"action": "wait"}}  # fmt: skip
ANSWER = {"id": "answer", "label": "Answer", "executor": "litellm", "action": "completion"}


async def planner(api: OrchestratorApi) -> str:
    agent = await api.add_agent(name="planner", agent_type="tester_planner")
    return str(agent.id)


async def test_an_answer_carries_its_plan_and_a_remote_completion_is_routed(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    remote = {**ANSWER, "executor": "remote", "args": {"model": "bigger/big-model"}}
    api.llm.script(plan_text(ECHO, remote), Text("Echoed hi, thoughtfully."))
    completion = await openai_client.chat.completions.create(
        model=await planner(api), messages=[{"role": "user", "content": "echo hi"}]
    )
    assert completion.choices[0].message.content == "Echoed hi, thoughtfully."
    trace = completion.choices[0].message.model_extra["metadata"]
    plan = trace["plan"]
    assert plan["status"] == "ok" and plan["description"] == "Plan for the answer."
    assert [(s["id"], s["status"], s["executor"]) for s in plan["steps"]] == [
        ("echo", "ok", "agent"),
        ("answer", "ok", "remote"),
    ]
    assert plan["steps"][1]["detail"] == "Answered by bigger/big-model"
    # the plan was made by the agent's model, the answer by the one the plan named
    assert [r["model"] for r in api.llm.requests] == ["fake-model", "big-model"]


async def test_a_remote_completion_must_name_a_profile(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    unknown = {**ANSWER, "executor": "remote", "args": {"model": "elsewhere/huge"}}
    named = {**ANSWER, "executor": "remote", "provider": "bigger", "args": {"model": "big"}}
    api.llm.script(plan_text(unknown), plan_text(named), Text("Fine."))
    completion = await openai_client.chat.completions.create(
        model=await planner(api), messages=[{"role": "user", "content": "hi"}]
    )
    correction = api.llm.requests[1]["messages"][-1]["content"]
    assert "model 'elsewhere/huge' names no provider profile; profiles: bigger." in correction
    plan = completion.choices[0].message.model_extra["metadata"]["plan"]
    assert plan["attempts"] == 2 and plan["steps"][0]["args"] == {
        "model": "big",
        "provider": "bigger",
    }
    assert api.llm.requests[-1]["model"] == "big"


async def test_a_streamed_answer_sends_each_step_as_it_happens(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    GateTool.gate = asyncio.Event()
    api.llm.script(plan_text(GATE, ANSWER), Text("The gate opened.", pieces=3))
    stream = await openai_client.chat.completions.create(
        model=await planner(api), messages=[{"role": "user", "content": "wait"}], stream=True
    )
    seen: list[dict[str, Any]] = []  # each chunk's (content, plan step statuses)
    async with asyncio.timeout(30):
        async for chunk in stream:
            delta = chunk.choices[0].delta
            trace = (delta.model_extra or {}).get("metadata")
            plan = (trace or {}).get("plan")
            steps = {s["id"]: s["status"] for s in (plan or {}).get("steps") or []}
            seen.append(
                {"content": delta.content, "steps": steps, "end": chunk.choices[0].finish_reason}
            )
            if steps.get("gate") == "in_progress":
                GateTool.gate.set()  # the step arrived while it ran: let it finish
    assert GateTool.gate.is_set(), "no chunk showed the gate step running"
    assert seen[-1]["end"] == "stop" and seen[-1]["steps"] == {"gate": "ok", "answer": "ok"}
    progress = [s["steps"] for s in seen[1:-1] if s["steps"]]
    assert {"gate": "in_progress", "answer": "pending"} in progress
    first_text = next(i for i, s in enumerate(seen) if s["content"])
    running = next(i for i, s in enumerate(seen) if s["steps"].get("gate") == "in_progress")
    assert running < first_text
    assert "".join(s["content"] or "" for s in seen) == "The gate opened."
