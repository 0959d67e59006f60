"""`/v1/chat/completions` when the answer takes long or the client leaves: the waiting
ends, the run does not (it continues and is persisted)."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls

WAIT = 2.0


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {"completion_wait_seconds": WAIT}


async def test_a_slow_run_answers_a_timeout_error_and_continues(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": WAIT + 1})), Text("Finally.")
    )
    with pytest.raises(openai.APIStatusError) as timed_out:
        await openai_client.chat.completions.create(
            model=str(api.user.agent.id), messages=[{"role": "user", "content": "slow"}]
        )
    error = timed_out.value
    assert error.status_code == 504 and error.code == "timeout"
    assert error.response.headers["x-should-retry"] == "false"
    assert f"within {WAIT:g} seconds" in error.body["message"]
    thread_id, run_id = error.body["thread_id"], error.body["run_id"]
    run = await api.wait_run(thread_id, run_id, timeout=30)
    assert run["status"] == "completed"
    assert (await api.messages(thread_id))[-1]["content"] == "Finally."


async def test_a_slow_streamed_run_ends_the_stream_with_a_timeout_error(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": WAIT + 1})), Text("Finally.")
    )
    stream = await openai_client.chat.completions.create(
        model=str(api.user.agent.id), messages=[{"role": "user", "content": "slow"}], stream=True
    )
    chunks = []
    with pytest.raises(openai.APIError) as timed_out:
        async for chunk in stream:
            chunks.append(chunk)
    assert timed_out.value.body["code"] == "timeout"
    where = chunks[0].choices[0].delta.model_extra["metadata"]
    run = await api.wait_run(where["thread_id"], where["run_id"], timeout=30)
    assert run["status"] == "completed"


async def test_a_client_leaving_a_stream_does_not_stop_the_run(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": 1}), text="Working on it."),
        Text("All done."),
    )
    stream = await openai_client.chat.completions.create(
        model=str(api.user.agent.id), messages=[{"role": "user", "content": "go"}], stream=True
    )
    first = await anext(aiter(stream))
    where = first.choices[0].delta.model_extra["metadata"]
    await stream.close()  # the client goes away mid-run
    run = await api.wait_run(where["thread_id"], where["run_id"], timeout=30)
    assert run["status"] == "completed"
    rows = await api.messages(where["thread_id"])
    assert [m["tool_activity"]["status"] for m in rows if m["role"] == "tool"] == ["success"]
    assert rows[-1]["content"] == "All done."


async def test_a_slow_agent_run_answers_a_timeout_problem_and_continues(
    api: OrchestratorApi, openai_base_url: str
) -> None:
    api.llm.script(
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": WAIT + 1})), Text("Finally.")
    )
    async with httpx.AsyncClient(base_url=openai_base_url, headers=api.headers) as v1:
        response = await v1.post("/agent", json={"prompt": "slow"}, timeout=30)
    assert response.status_code == 504, response.text
    problem = response.json()
    assert problem["code"] == "timeout" and f"within {WAIT:g} seconds" in problem["detail"]
    run = await api.wait_run(problem["thread_id"], problem["run_id"], timeout=30)
    assert run["status"] == "completed"
    assert (await api.messages(problem["thread_id"]))[-1]["content"] == "Finally."
