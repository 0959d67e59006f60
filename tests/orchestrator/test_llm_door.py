"""The model door, called directly against the fake OpenAI server over both of its paths:
`fast` reads OpenAI-format streams off the wire, `litellm` goes through litellm in full.
The same calls must give the same turns and the same errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import litellm
import pytest

from app.orchestrator import llm_wire
from app.orchestrator.llm import (
    LLMError,
    ModelTarget,
    ModelTurn,
    _price_unmapped_model,
    context_window,
    map_error,
    stream_turn,
)
from tests.support.fake_llm import Call, Error, FakeLLM, Raw, Text, ToolCalls

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "tasks",
            "description": "Manage tasks.",
            "parameters": {"type": "object", "properties": {"action": {"type": "string"}}},
        },
    }
]
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


@pytest.fixture(params=["fast", "litellm"])
def door(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
async def llm(fake_llm: FakeLLM) -> AsyncIterator[FakeLLM]:
    fake_llm.reset()
    yield fake_llm
    await llm_wire.close_session()  # as the app does at shutdown


async def _turn(
    llm: FakeLLM,
    door: str,
    *,
    tools: Any = None,
    retries: int = 0,
    model: str = "fake-model",
    response_format: dict[str, Any] | None = None,
) -> tuple[ModelTurn, list[str]]:
    target = ModelTarget(
        f"openai/{model}",
        api_base=llm.base_url,
        api_key="door-key",
        timeout=2.0,
        max_retries=retries,
        retry_base=0.01,
        fast_stream=door == "fast",
    )
    pieces: list[str] = []

    async def on_text(piece: str) -> None:
        pieces.append(piece)

    messages = [dict(m) for m in MESSAGES]
    turn = await stream_turn(target, messages, tools, on_text, response_format=response_format)
    return turn, pieces


async def test_text_streams_in_pieces(llm: FakeLLM, door: str) -> None:
    llm.script(Text("Hello there, how can I help?", pieces=4, pause=0.02))  # 4 writes
    turn, pieces = await _turn(llm, door)
    assert turn.text == "Hello there, how can I help?" and len(pieces) == 4
    assert turn.finish_reason == "stop" and turn.tool_calls == []


async def test_chunks_that_arrive_together_are_told_together_on_the_fast_path(
    llm: FakeLLM, door: str
) -> None:
    llm.script(Text("Hello there, how can I help?", pieces=4))  # one write
    turn, pieces = await _turn(llm, door)
    assert turn.text == "Hello there, how can I help?"
    assert "".join(pieces) == turn.text
    assert len(pieces) == (1 if door == "fast" else 4)  # litellm hands over chunk by chunk


async def test_both_paths_send_litellms_request(llm: FakeLLM, door: str) -> None:
    llm.script(Text("ok"))
    await _turn(llm, door, tools=TOOLS)
    body, headers = llm.requests[0], llm.headers[0]
    assert body["model"] == "fake-model" and body["stream"] is True
    assert body["messages"] == MESSAGES and body["tools"] == TOOLS
    assert headers["authorization"] == "Bearer door-key"
    assert headers["content-type"] == "application/json"


async def test_the_fast_path_keeps_its_connection_between_calls(llm: FakeLLM, door: str) -> None:
    llm.script(Text("one"), ToolCalls(Call("tasks", {"action": "list"})), Text("three"))
    for _ in range(3):
        await _turn(llm, door, tools=TOOLS)
    if door == "fast":  # each answer read to its end: the pooled connection is reused
        assert len(set(llm.peers)) == 1, llm.peers


async def test_both_paths_ask_for_structured_output_alike(llm: FakeLLM, door: str) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    wanted = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    llm.script(Text('{"a": "b"}'))
    turn, _ = await _turn(llm, door, response_format=wanted)
    assert json.loads(turn.text) == {"a": "b"}
    body = llm.requests[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["a"]
    assert "tools" not in body
    # the fast path sends with our aiohttp session, litellm in full with its own client
    sent_by = llm.headers[0]["user-agent"]
    assert ("aiohttp/" in sent_by) if door == "fast" else sent_by.startswith("litellm/")


async def test_arguments_split_across_chunks_and_parallel_calls(llm: FakeLLM, door: str) -> None:
    first = {"action": "create", "title": "Buy milk and bread"}
    second = {"action": "list"}
    llm.script(
        ToolCalls(Call("tasks", first, id="call_a"), Call("tasks", second, id="call_b"), pieces=7)
    )
    turn, _ = await _turn(llm, door, tools=TOOLS)
    assert turn.finish_reason == "tool_calls"
    assert [c["id"] for c in turn.tool_calls] == ["call_a", "call_b"]
    assert [c["function"]["name"] for c in turn.tool_calls] == ["tasks", "tasks"]
    assert [json.loads(c["function"]["arguments"]) for c in turn.tool_calls] == [first, second]
    assert all(c["type"] == "function" for c in turn.tool_calls)


async def test_text_before_tool_calls_is_kept(llm: FakeLLM, door: str) -> None:
    llm.script(ToolCalls(Call("tasks", {"action": "list"}), text="Let me look."))
    turn, pieces = await _turn(llm, door, tools=TOOLS)
    assert turn.text == "Let me look." and "".join(pieces) == "Let me look."
    assert len(turn.tool_calls) == 1


async def test_a_last_chunk_with_only_usage_ends_the_turn_cleanly(llm: FakeLLM, door: str) -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    llm.script(
        Text("Counted.", usage=usage),
        ToolCalls(Call("tasks", {"action": "list"}), usage=usage),
    )
    turn, pieces = await _turn(llm, door)
    assert turn.text == "Counted." and "".join(pieces) == "Counted."
    assert turn.finish_reason == "stop"
    turn, _ = await _turn(llm, door, tools=TOOLS)
    assert turn.finish_reason == "tool_calls" and len(turn.tool_calls) == 1


async def test_a_malformed_chunk_is_skipped(llm: FakeLLM, door: str) -> None:
    def chunk(delta: dict, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({"id": "x", "choices": [choice]}).encode() + b"\n\n"

    body = chunk({"content": "a"}) + b"data: {not json\n\n" + chunk({"content": "b"}, "stop")
    llm.script(Raw(body + b"data: [DONE]\n\n"))
    turn, _ = await _turn(llm, door)
    assert turn.text == "ab" and turn.finish_reason == "stop"


async def test_an_error_inside_the_stream_is_the_providers_error(llm: FakeLLM, door: str) -> None:
    llm.script(Raw(b'data: {"error": {"message": "overloaded", "code": 503}}\n\n'))
    with pytest.raises(LLMError) as caught:
        await _turn(llm, door)
    assert caught.value.kind == "provider_unavailable"
    assert "(503): overloaded" in caught.value.message


@pytest.mark.parametrize(
    ("error", "kind", "text"),
    [
        (Error(429, "slow down", {"retry-after": "7"}), "rate_limit", "rate limiting: slow down"),
        (Error(401, "bad key"), "auth", "authentication failed"),
        (Error(400, "bad thing"), "bad_request", "refused the request: bad thing"),
        (
            Error(400, "This model's maximum context length is 8192 tokens"),
            "context_window",
            "too long for the model: This model's maximum context length",
        ),
        (Error(404, "no such model"), "model_not_found", "not found: no such model"),
        (Error(500, "boom"), "provider_unavailable", "failed (500): boom"),
        (Error(503, "busy"), "provider_unavailable", "failed (503): busy"),
    ],
)
async def test_http_errors_map_alike(
    llm: FakeLLM, door: str, error: Error, kind: str, text: str
) -> None:
    llm.script(error)
    with pytest.raises(LLMError) as caught:
        await _turn(llm, door)
    assert caught.value.kind == kind
    assert text in caught.value.message
    if kind == "rate_limit":
        assert caught.value.retry_after == 7.0


async def test_transient_errors_are_retried_then_succeed(llm: FakeLLM, door: str) -> None:
    llm.script(Error(500), Error(429, "slow", {"retry-after": "0"}), Text("Finally."))
    turn, _ = await _turn(llm, door, retries=2)
    assert turn.text == "Finally." and len(llm.requests) == 3


async def test_a_dropped_stream_is_a_lost_connection(llm: FakeLLM, door: str) -> None:
    llm.script(Text("Half an answ", drop_after=True), Text("never reached"))
    with pytest.raises(LLMError) as caught:
        await _turn(llm, door, retries=2)
    assert caught.value.kind == "connection"
    assert caught.value.message == "The connection to the model provider was lost mid-answer."
    assert len(llm.requests) == 1  # text was shown: never retried


async def test_an_unreachable_provider_is_a_transient_error(door: str) -> None:
    target = ModelTarget(
        "openai/fake-model",
        api_base="http://127.0.0.1:9/v1",  # discard port: nothing listens
        api_key="k",
        timeout=2.0,
        max_retries=0,
        fast_stream=door == "fast",
    )

    async def on_text(_: str) -> None:
        return None

    with pytest.raises(LLMError) as caught:
        await stream_turn(target, MESSAGES, None, on_text)
    assert caught.value.transient and caught.value.kind in {"connection", "provider_unavailable"}


def test_openai_format_providers_take_the_fast_path_and_others_do_not() -> None:
    def request(model: str, base: str | None = "http://127.0.0.1:1/v1") -> Any:
        return llm_wire.build_request(model, base, "k", MESSAGES, None)

    fast = request("openai/fake-model")
    assert fast is not None and fast.url == "http://127.0.0.1:1/v1/chat/completions"
    assert json.loads(fast.body)["stream"] is True
    for model in ("hosted_vllm/m", "openrouter/a/b", "groq/llama-3", "deepseek/deepseek-chat"):
        assert request(model) is not None, model
    assert request("gpt-4o-mini", None).url.startswith("https://api.openai.com/")  # type: ignore[union-attr]
    for model in ("anthropic/claude-3-5-sonnet", "azure/gpt-4o", "ollama_chat/llama3", "demo/x"):
        assert request(model) is None, model
    assert request("hosted_vllm/m", None) is None  # litellm looks its URL up itself


def test_provider_message_is_extracted_from_a_raw_json_error_body() -> None:
    body = '{"error": {"message": "slow down", "type": "rate", "code": null}}'
    exc = litellm.RateLimitError(
        message=f"OpenAIException - {body}", llm_provider="openai", model="m"
    )
    error = map_error(exc)
    assert error.kind == "rate_limit"
    assert error.message == "The model provider is rate limiting: slow down"


def test_plain_error_text_is_kept() -> None:
    exc = litellm.BadRequestError(
        message="OpenAIException - bad param", llm_provider="openai", model="m"
    )
    assert map_error(exc).message == "The model provider refused the request: bad param"


def test_an_unmapped_model_gets_a_zero_price_but_keeps_the_fallback_window() -> None:
    model = "openai/door-test-unmapped-model"
    _price_unmapped_model(model)
    info = litellm.get_model_info(model)
    assert info["input_cost_per_token"] == 0.0
    assert context_window(model, 12345) == 12345


def test_a_mapped_model_keeps_its_real_price() -> None:
    before = litellm.get_model_info("openai/gpt-4o-mini")["input_cost_per_token"]
    _price_unmapped_model("openai/gpt-4o-mini")
    assert before and litellm.get_model_info("openai/gpt-4o-mini")["input_cost_per_token"] == before


def test_the_fast_path_takes_the_proxy_the_environment_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "models.internal")
    llm_wire._env_proxy.cache_clear()
    try:
        proxy, auth = llm_wire._env_proxy("https://api.example.com/v1/chat/completions")
        bypassed = llm_wire._env_proxy("https://models.internal/v1/chat/completions")
        plain = llm_wire._env_proxy("http://127.0.0.1:8000/v1/chat/completions")
    finally:
        llm_wire._env_proxy.cache_clear()
    assert str(proxy) == "http://proxy.internal:3128"
    assert auth is not None and (auth.login, auth.password) == ("user", "secret")
    assert bypassed == (None, None) and plain == (None, None)
