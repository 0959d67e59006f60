"""`POST /v1/agent` over real HTTP (seed 001): a prompt in, the agent's plan, its steps and
its answer out; the model is the fake one, so the answer is what the model said."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.conftest import make_api_user
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Error, Text, ToolCalls

MEMORY = {"id": "recall", "label": "Recall", "executor": "agent", "action": "memory"}
ANSWER = {"id": "answer", "label": "Answer", "executor": "litellm", "action": "completion"}


@pytest.fixture
async def v1(api: OrchestratorApi, openai_base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=openai_base_url, headers=api.headers) as client:
        yield client


async def run_agent(v1: httpx.AsyncClient, **body: Any) -> httpx.Response:
    return await v1.post("/agent", json=body, timeout=60)


def kinds(answer: dict) -> list[tuple[str, str, str]]:
    return [(s["type"], s["name"], s["status"]) for s in answer["steps"]]


async def test_the_answer_comes_from_the_model(api: OrchestratorApi, v1: httpx.AsyncClient) -> None:
    api.llm.script(Text("Hello from the model."))
    response = await run_agent(v1, prompt="say hello", metadata={"source": "seed-001"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["status"] == "completed" and answer["answer"] == "Hello from the model."
    assert "plan" not in answer and "error" not in answer  # no planner, no error
    assert answer["steps"] == [
        {"type": "completion", "name": "completion", "status": "success",
         "display_message": None, "error": None, "step_id": None,
         "content": "Hello from the model."}
    ]  # fmt: skip
    assert answer["metadata"] == {"source": "seed-001"}
    assert answer["id"] == f"agentrun-{answer['run_id'].replace('-', '')}"
    messages = await api.messages(answer["thread_id"])
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "say hello"),
        ("assistant", "Hello from the model."),
    ]


async def test_a_tool_call_is_a_step_before_the_completion(
    api: OrchestratorApi, v1: httpx.AsyncClient
) -> None:
    api.llm.script(ToolCalls(Call("test_echo", {"action": "echo", "text": "hi"})), Text("Echoed."))
    answer = (await run_agent(v1, prompt="echo hi", agent=str(api.user.agent.id))).json()
    assert kinds(answer) == [
        ("tool", "test_echo", "success"),
        ("completion", "completion", "success"),
    ]
    assert answer["steps"][0]["data"] is not None
    assert answer["steps"][-1]["content"] == answer["answer"] == "Echoed."


async def test_a_memory_save_is_a_memory_step(api: OrchestratorApi, v1: httpx.AsyncClient) -> None:
    save = {"action": "save", "key": "coffee", "content": "Black."}
    api.llm.script(ToolCalls(Call("memory", save)), Text("Noted."))
    answer = (await run_agent(v1, prompt="I take my coffee black")).json()
    assert kinds(answer) == [
        ("memory", "memory", "success"),
        ("completion", "completion", "success"),
    ]
    assert answer["steps"][0]["display_message"] == "Saved to memory"


async def test_a_planner_answers_its_plan_with_a_completion_step(
    api: OrchestratorApi, v1: httpx.AsyncClient
) -> None:
    await api.add_agent(name="Planner", agent_type="tester_planner")
    plan = {"description": "Recall, then answer.", "steps": [MEMORY, ANSWER]}
    api.llm.script(Text(json.dumps(plan)), Text("You like black coffee."))
    answer = (await run_agent(v1, prompt="what coffee do I like?", agent="planner")).json()
    assert answer["status"] == "completed" and answer["answer"] == "You like black coffee."
    steps = answer["plan"]["steps"]
    assert [(s["action"], s["status"]) for s in steps] == [("memory", "ok"), ("completion", "ok")]
    assert kinds(answer)[-1] == ("completion", "completion", "success")
    assert all(s["step_id"] == "recall" for s in answer["steps"][:-1])


async def test_a_failed_run_says_so(api: OrchestratorApi, v1: httpx.AsyncClient) -> None:
    api.llm.script(*[Error(400, "the model refused")] * 3)
    answer = (await run_agent(v1, prompt="hi")).json()
    assert answer["status"] == "failed" and "answer" not in answer
    assert answer["error"] and answer["steps"][-1]["status"] == "failure"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "prompt"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": "   "}, "prompt"),
        ({"prompt": "x" * 32_001}, "prompt"),
        ({"prompt": "hi", "metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
        ({"prompt": "hi", "metadata": {"k": 1}}, "metadata"),
        ({"prompt": "hi", "surprise": 1}, "surprise"),
    ],
)
async def test_a_bad_body_is_a_400_problem(
    api: OrchestratorApi, v1: httpx.AsyncClient, body: dict, field: str
) -> None:
    response = await run_agent(v1, **body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert field in response.text
    assert api.llm.requests == []


async def test_an_agent_of_another_user_is_not_found(
    api: OrchestratorApi, v1: httpx.AsyncClient
) -> None:
    stranger = await make_api_user(api.db)
    response = await run_agent(v1, prompt="hi", agent=str(stranger.agent.id))
    assert response.status_code == 404, response.text
    assert response.json()["code"] == "agent_not_found"
    unsigned = await v1.post("/agent", json={"prompt": "hi"}, headers={"authorization": ""})
    assert unsigned.status_code == 401
