"""Each provider's own stream and error shapes, replayed over real HTTP through the door:
OpenAI and OpenAI-compatible servers through our client, Anthropic and Gemini through
litellm's public `acompletion` (never mocked)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.orchestrator.door import openai_client
from app.orchestrator.door.llm import LLMError, ModelTarget, ModelTurn, stream_turn
from tests.support import provider_streams as shapes
from tests.support.fake_llm import FakeLLM

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "tasks",
            "description": "Manage tasks.",
            "parameters": {
                "type": "object",
                "properties": {"action": {"type": "string"}, "title": {"type": "string"}},
                "required": ["action"],
            },
        },
    }
]
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


@pytest.fixture
async def llm(fake_llm: FakeLLM) -> AsyncIterator[FakeLLM]:
    fake_llm.reset()
    yield fake_llm
    await openai_client.close_session()


async def _turn(llm: FakeLLM, model: str, kind: str, retries: int = 0) -> tuple[ModelTurn, str]:
    target = ModelTarget(
        model,
        api_base=llm.base_url.removesuffix("/v1") if kind == "litellm" else llm.base_url,
        api_key="sk-provider-key",
        timeout=3.0,
        max_retries=retries,
        retry_base=0.01,
        kind=kind,  # type: ignore[arg-type]
        wire_model=model if kind == "litellm" else model.split("/", 1)[1],
    )
    shown: list[str] = []

    async def on_text(piece: str) -> None:
        shown.append(piece)

    turn = await stream_turn(target, [dict(m) for m in MESSAGES], TOOLS, on_text)
    return turn, "".join(shown)


def _arguments(turn: ModelTurn) -> list[Any]:
    return [json.loads(call["function"]["arguments"]) for call in turn.tool_calls]


async def test_openai_parallel_calls_nulls_and_a_usage_only_last_chunk(llm: FakeLLM) -> None:
    llm.script(shapes.openai_parallel_calls())
    turn, _ = await _turn(llm, "openai/gpt-4o-mini", "openai")
    assert [c["id"] for c in turn.tool_calls] == ["call_A", "call_B"]
    assert _arguments(turn) == [{"action": "create", "title": "milk"}, {"action": "list"}]
    assert turn.finish_reason == "tool_calls"
    usage = turn.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (120, 30)
    assert (usage.cached_tokens, usage.reasoning_tokens) == (64, 10)
    assert usage.cost is not None and usage.cost > 0  # gpt-4o-mini is in litellm's map
    assert llm.requests[0]["stream_options"] == {"include_usage": True}


async def test_openai_compatible_quirks(llm: FakeLLM) -> None:
    llm.script(shapes.compatible_quirks())
    turn, shown = await _turn(llm, "groq/llama-3.3-70b", "openai")
    assert shown == "" and turn.text == ""
    assert [c["id"] for c in turn.tool_calls] == ["call_1", "call_2"]
    assert [c["function"]["name"] for c in turn.tool_calls] == ["tasks", "tasks"]
    assert _arguments(turn) == [{"action": "list"}, {"action": "create"}]
    assert turn.usage is not None and turn.usage.input_tokens == 50  # from x_groq


async def test_an_error_inside_a_200_stream_is_classified_by_its_own_status(llm: FakeLLM) -> None:
    llm.script(shapes.groq_error_in_stream(), shapes.compatible_quirks())
    with pytest.raises(LLMError) as caught:
        await _turn(llm, "groq/llama-3.3-70b", "openai", retries=2)
    error = caught.value
    assert error.kind == "bad_request" and error.status == 400 and not error.transient
    assert "(400 invalid_request_error: Tool call validation failed" in error.message
    assert len(llm.requests) == 1  # a 4xx is not retried


async def test_anthropic_tool_use_thinking_and_usage_through_litellm(llm: FakeLLM) -> None:
    llm.script(shapes.anthropic_tool_use())
    turn, shown = await _turn(llm, "anthropic/claude-sonnet-4-5", "litellm")
    assert llm.paths[0].endswith("/v1/messages")
    assert shown == "Adding it."  # thinking is not shown as the answer
    assert [c["id"] for c in turn.tool_calls] == ["toolu_01"]
    assert _arguments(turn) == [{"action": "create", "title": "milk"}]
    assert turn.usage is not None
    assert turn.usage.output_tokens == 89 and turn.usage.input_tokens >= 472
    assert turn.usage.cost is not None and turn.usage.cost > 0


async def test_anthropic_overloaded_is_retried_then_said_plainly(llm: FakeLLM) -> None:
    llm.script(shapes.anthropic_overloaded(), shapes.anthropic_overloaded())
    with pytest.raises(LLMError) as caught:
        await _turn(llm, "anthropic/claude-sonnet-4-5", "litellm", retries=1)
    error = caught.value
    assert error.kind == "overloaded" and len(llm.requests) == 2
    assert error.message.startswith("The model provider is overloaded; try again in a minute.")
    assert "(529 overloaded_error: Overloaded)" in error.message and "b'" not in error.message
    assert "sk-provider-key" not in error.message


async def test_anthropic_overloaded_then_an_answer(llm: FakeLLM) -> None:
    llm.script(shapes.anthropic_overloaded(), shapes.anthropic_tool_use())
    turn, _ = await _turn(llm, "anthropic/claude-sonnet-4-5", "litellm", retries=2)
    assert len(turn.tool_calls) == 1 and len(llm.requests) == 2


async def test_gemini_function_call_and_usage_metadata_through_litellm(llm: FakeLLM) -> None:
    llm.script(shapes.gemini_function_call())
    turn, shown = await _turn(llm, "gemini/gemini-2.5-flash", "litellm")
    assert "streamGenerateContent" in llm.paths[0]
    assert shown == "Let me check."
    assert [c["function"]["name"] for c in turn.tool_calls] == ["tasks"]
    assert _arguments(turn) == [{"action": "list"}]
    assert turn.usage is not None
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (40, 20) or (
        turn.usage.input_tokens == 40 and turn.usage.output_tokens >= 12
    )
