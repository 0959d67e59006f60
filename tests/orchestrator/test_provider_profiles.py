"""Two agents on two providers with two keys in one server: each agent's model names its
provider profile (base URL, the variable holding its key, headers, prices); each run
shows its tokens and cost; no key reaches an API response."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support import provider_streams as shapes
from tests.support.fake_llm import FakeLLM, Text

KEYS = {"DOOR_TEST_OPENAI_KEY": "sk-alpha-111", "DOOR_TEST_ANTHROPIC_KEY": "sk-ant-beta-222"}


@pytest.fixture(scope="module")
def settings_overrides(fake_llm: FakeLLM) -> Iterator[dict]:
    os.environ.update(KEYS)
    profiles = {
        "profiles": {
            "alpha": {
                "kind": "openai",
                "base_url": fake_llm.base_url,
                "api_key_env": "DOOR_TEST_OPENAI_KEY",
                "headers": {"X-Team": "ios"},
                "prices": {"input_per_million": 2.0, "output_per_million": 8.0},
            },
            "beta": {
                "kind": "litellm",
                "provider": "anthropic",
                "base_url": fake_llm.base_url.removesuffix("/v1"),
                "api_key_env": "DOOR_TEST_ANTHROPIC_KEY",
            },
        }
    }
    yield {"llm_profiles": json.dumps(profiles)}
    for name in KEYS:
        os.environ.pop(name, None)


async def test_two_agents_two_providers_two_keys(api: OrchestratorApi) -> None:
    api.user.agent.model = "alpha/house-model"
    await api.db.commit()
    specialist = await api.add_agent(
        name="Claude", model="beta/claude-sonnet-4-5", agent_type="tester"
    )
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    api.llm.script(Text("From alpha.", usage=usage))
    _, first = await api.turn("hi")
    assert first["status"] == "completed", first
    api.llm.script(shapes.anthropic_tool_use(), shapes.anthropic_text())
    _, second = await api.turn("hi", await api.new_thread(specialist.id))
    assert second["status"] == "completed", second

    alpha, beta = api.llm.headers[0], api.llm.headers[1]
    assert alpha["authorization"] == "Bearer sk-alpha-111" and alpha["x-team"] == "ios"
    assert api.llm.requests[0]["model"] == "house-model"
    assert beta["x-api-key"] == "sk-ant-beta-222" and "authorization" not in beta
    assert api.llm.paths[1].endswith("/v1/messages")
    assert api.llm.requests[1]["model"] == "claude-sonnet-4-5"

    # the profile's prices: 1000 in x $2/M + 100 out x $8/M
    assert first["usage"] == {
        "input_tokens": 1000, "output_tokens": 100, "cached_tokens": 0,
        "reasoning_tokens": 0, "cost_usd": pytest.approx(0.0028),
    }  # fmt: skip
    assert len(api.llm.requests) == 3  # the tool call's result went back to Claude
    assert second["usage"]["output_tokens"] >= 89 + 5 and second["usage"]["cost_usd"] > 0
    for run in (first, second):
        assert not any(key in json.dumps(run) for key in KEYS.values())
