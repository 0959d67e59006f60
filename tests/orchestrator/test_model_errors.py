"""The model door: retries (bounded, retry-after honoured), clear run errors, context trim."""

from __future__ import annotations

import time

from app.orchestrator.door.llm import fit_to_context
from app.orchestrator.door.model_info import count_tokens
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Error, Text

BOTH_DOORS = True  # every test runs through both paths of the model door


async def test_rate_limit_then_success_honours_retry_after(api: OrchestratorApi) -> None:
    api.llm.script(Error(429, "slow down", headers={"retry-after": "0.4"}), Text("Finally."))
    started = time.monotonic()
    thread_id, run = await api.turn("hi")
    assert run["status"] == "completed", run
    assert time.monotonic() - started >= 0.4
    assert len(api.llm.requests) == 2
    assert (await api.messages(thread_id))[-1]["content"] == "Finally."


async def test_server_errors_exhaust_bounded_retries_and_fail_the_run(api: OrchestratorApi) -> None:
    api.llm.script(Error(500), Error(500), Error(500), Text("never reached"))
    _, run = await api.turn("hi")
    assert run["status"] == "failed"
    assert "model provider failed. (500" in run["error"] and "after 3 attempts" in run["error"]
    assert len(api.llm.requests) == 3  # llm_max_retries=2


async def test_authentication_error_is_not_retried(api: OrchestratorApi) -> None:
    api.llm.script(Error(401, "bad key"))
    _, run = await api.turn("hi")
    assert run["status"] == "failed"
    assert "authentication" in run["error"]
    assert len(api.llm.requests) == 1


async def test_a_stream_dropped_mid_answer_is_a_lost_connection(api: OrchestratorApi) -> None:
    api.llm.script(Text("Half an answ", drop_after=True), Text("never reached"))
    thread_id, run = await api.turn("hi")
    assert run["status"] == "failed"
    assert run["error"] == "The connection to the model provider was lost mid-answer."
    assert len(api.llm.requests) == 1  # text was already shown: never retried
    assert (await api.messages(thread_id))[-1]["content"] == "Half an answ"


def test_history_is_trimmed_to_the_context_window() -> None:
    old = [
        {"role": "user", "content": "old question " * 200},
        {"role": "assistant", "content": "old answer " * 200},
    ]
    messages = [
        {"role": "system", "content": "be brief"},
        *old * 5,
        {"role": "user", "content": "the question"},
    ]
    fitted = fit_to_context("openai/fake-model", messages, None, window=2000, reserve=200)
    assert fitted[0] == messages[0] and fitted[-1] == messages[-1]
    assert len(fitted) < len(messages)
    assert fitted[1]["role"] == "user"  # never starts mid-turn


def test_tool_results_are_cut_before_the_users_question_is_dropped() -> None:
    """The latest turn holds a huge tool result: the result is cut, the question stays
    (before: the question was dropped first and the oversized result kept)."""
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "an old question"},
        {"role": "assistant", "content": "an old answer"},
        {"role": "user", "content": "the question"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 500_000},
    ]
    fitted = fit_to_context("openai/fake-model", messages, None, window=4000, reserve=200)
    assert {"role": "user", "content": "the question"} in fitted
    assert fitted[-1]["role"] == "tool" and len(fitted[-1]["content"]) < 12_000
    assert fitted[-1]["content"].endswith("more characters]")
    assert count_tokens("openai/fake-model", fitted, None) <= 3800
