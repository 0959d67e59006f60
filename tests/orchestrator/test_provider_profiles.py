"""Two agents on two providers with two keys in one server: each agent's model names its
provider profile (base URL, the variable holding its key, headers, prices); each run
shows its tokens and cost; no key reaches an API response."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.orchestrator.door.llm import ModelTarget, target_for
from app.orchestrator.door.profiles import ProfileError, load_profiles
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


async def test_an_overloaded_provider_ends_the_run_saying_so(api: OrchestratorApi) -> None:
    api.user.agent.model = "beta/claude-sonnet-4-5"
    await api.db.commit()
    api.llm.script(*[shapes.anthropic_overloaded()] * 3)
    _, run = await api.turn("hi")
    assert run["status"] == "failed" and len(api.llm.requests) == 3  # retried twice
    assert run["error"].startswith("The model provider is overloaded; try again in a minute.")
    assert "529 overloaded_error: Overloaded" in run["error"] and "after 3 attempts" in run["error"]
    assert "b'" not in run["error"]


def test_profiles_are_validated_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="needs a base_url"):
        load_profiles(None, "profiles: {local: {kind: openai}}")
    with pytest.raises(ProfileError, match="api_key"):
        load_profiles(None, '{"profiles": {"x": {"kind": "litellm", "api_key": "sk-1"}}}')
    with pytest.raises(ProfileError, match="cannot read"):
        load_profiles(str(tmp_path / "missing.yaml"), None)
    path = tmp_path / "profiles.yaml"
    path.write_text("profiles:\n  local: {kind: openai, base_url: 'http://h/v1'}\n")
    both = load_profiles(str(path), "profiles: {claude: {kind: litellm, provider: anthropic}}")
    assert set(both) == {"local", "claude"}


def test_a_profile_names_its_keys_variable_and_the_default_profile_is_the_old_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOOR_TEST_KEY", "sk-from-env")
    profiles = load_profiles(
        None,
        "profiles: {claude: {kind: litellm, provider: anthropic, api_key_env: DOOR_TEST_KEY,"
        " timeout_seconds: 9}}",
    )
    base = ModelTarget("claude/claude-sonnet-4-5", api_base="http://old", api_key="sk-old")
    target = target_for(base, profiles)
    assert (target.kind, target.wire_model) == ("litellm", "anthropic/claude-sonnet-4-5")
    assert target.api_key == "sk-from-env" and target.api_base is None and target.timeout == 9
    assert "sk-from-env" not in repr(target)
    old = target_for(
        ModelTarget("openai/gpt-4o", api_base="http://old/v1", api_key="sk-old"), profiles
    )
    assert (old.kind, old.api_base, old.api_key) == ("openai", "http://old/v1", "sk-old")
