"""A run's usage: summed over its model calls, shown on the run, in /v1/chat/completions'
`usage`, in Prometheus and per user (`GET /api/me/usage`); a monthly budget refuses the
next message (429, Retry-After at the month's end) but never cuts a running turn."""

from __future__ import annotations

from datetime import UTC, datetime

import openai
import pytest
from prometheus_client import REGISTRY, generate_latest

from app.usage.budget import month_bounds
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.metrics import Scrape


def _input_tokens() -> float:
    scrape = Scrape(generate_latest(REGISTRY).decode())
    return scrape.value("toolcells_model_tokens_total", model="openai/gpt-4o-mini",
                        agent_type="tester", kind="input")  # fmt: skip


USAGE = {
    "prompt_tokens": 400,
    "completion_tokens": 50,
    "total_tokens": 450,
    "prompt_tokens_details": {"cached_tokens": 100},
    "completion_tokens_details": {"reasoning_tokens": 20},
}


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {"user_monthly_token_budget": 1000}


async def test_a_run_sums_its_calls_and_the_budget_refuses_the_next_message(
    api: OrchestratorApi,
) -> None:
    api.user.agent.model = "openai/gpt-4o-mini"  # priced in litellm's map
    await api.db.commit()
    before = _input_tokens()
    api.llm.script(
        ToolCalls(Call("tasks", {"action": "list"}), usage=USAGE),
        Text("Nothing to do.", usage=USAGE),
    )
    thread_id, run = await api.turn("what is on my list?")
    # 900 tokens: under the budget when the run started; its two calls are both counted
    assert run["status"] == "completed", run
    usage = run["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (800, 100)
    assert (usage["cached_tokens"], usage["reasoning_tokens"]) == (200, 40)
    assert usage["cost_usd"] > 0
    assert _input_tokens() - before == 800

    # a second turn starts (900 < 1000) and may end past the budget: never cut
    api.llm.script(Text("Still nothing.", usage=USAGE))
    _, second = await api.turn("and now?", thread_id)
    assert second["status"] == "completed" and second["usage"]["input_tokens"] == 400

    response = await api.client.get("/api/me/usage", headers=api.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["runs"] == 2 and body["input_tokens"] == 1200 and body["output_tokens"] == 150
    assert body["budget"]["tokens_limit"] == 1000 and body["budget"]["tokens_used"] == 1350

    refused = await api.post(thread_id, "one more")
    assert refused.status_code == 429, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert "budget is spent" in refused.json()["detail"]
    resets = month_bounds(datetime.now(UTC))[1]
    wait = int(refused.headers["retry-after"])
    assert 0 < wait <= (resets - datetime.now(UTC)).total_seconds() + 5


async def test_usage_since_a_moment_and_bad_input(api: OrchestratorApi) -> None:
    api.llm.script(Text("Hi.", usage=USAGE))
    await api.turn("hi")
    later = "2999-01-01T00:00:00Z"
    response = await api.client.get(f"/api/me/usage?since={later}", headers=api.headers)
    assert response.status_code == 200 and response.json()["runs"] == 0
    response = await api.client.get("/api/me/usage?since=yesterday", headers=api.headers)
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/problem+json")
    assert (await api.client.get("/api/me/usage")).status_code == 401


async def test_chat_completions_report_the_runs_usage(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(Text("Hello there.", usage=USAGE))
    completion = await openai_client.chat.completions.create(
        model=str(api.user.agent.id), messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (400, 50)
    assert completion.usage.total_tokens == 450
    assert completion.usage.prompt_tokens_details.cached_tokens == 100  # type: ignore[union-attr]


async def test_a_streamed_completion_ends_with_usage_when_asked(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(Text("Streamed.", usage=USAGE))
    stream = await openai_client.chat.completions.create(
        model=str(api.user.agent.id),
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[-2].choices[0].finish_reason == "stop"
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (400, 50)
