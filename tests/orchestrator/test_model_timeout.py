"""A model that never answers: the run fails with a clear timeout, nothing left open."""

from __future__ import annotations

import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Hang, Text, ToolCalls

BOTH_DOORS = True  # every test runs through both paths of the model door


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {"llm_timeout_seconds": 0.5, "llm_max_retries": 1}


async def test_a_hanging_model_times_out_after_bounded_retries(api: OrchestratorApi) -> None:
    api.llm.script(Hang(), Hang())
    _, run = await api.turn("hello")
    assert run["status"] == "failed"
    assert run["error"] == "The model did not answer in time. (after 2 attempts)"
    assert len(api.llm.requests) == 2


async def test_a_stream_stalling_mid_answer_keeps_the_text_and_fails(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(Call("test_echo", {"action": "echo", "text": "x"})),
        Text("Half an ans", hang_after=True),
    )
    thread_id, run = await api.turn("hello")
    assert run["status"] == "failed" and "did not answer in time" in run["error"]
    messages = await api.messages(thread_id)
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"] == "Half an ans"
    assert len(api.llm.requests) == 2  # text was streamed: no retry
