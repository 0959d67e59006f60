"""The model door, called directly against the fake OpenAI server over both of its paths:
`fast` reads OpenAI-format streams off the wire, `litellm` goes through litellm in full.
The same calls must give the same turns and the same errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import litellm
import pytest

from app.orchestrator.door import model_info, openai_client, profiles
from app.orchestrator.door.litellm_client import map_error
from app.orchestrator.door.llm import (
    LLMError,
    ModelTarget,
    ModelTurn,
    context_window,
    stream_turn,
)
from app.orchestrator.door.types import ModelCall, Prices, StreamedCall, Usage
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
    await openai_client.close_session()  # as the app does at shutdown


async def _turn(
    llm: FakeLLM,
    door: str,
    *,
    tools: Any = None,
    retries: int = 0,
    model: str = "fake-model",
    response_format: dict[str, Any] | None = None,
    on_calls: Any = None,
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
    turn = await stream_turn(
        target, messages, tools, on_text, response_format=response_format, on_calls=on_calls
    )
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
    # the fast path sends with our aiohttp session, litellm with its own client
    sent_by = llm.headers[0]["user-agent"]
    assert ("aiohttp/" in sent_by) == (door == "fast")


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


class _Told:
    """What `on_calls` heard: every batch's calls so far."""

    def __init__(self) -> None:
        self.batches: list[list[StreamedCall]] = []

    async def __call__(self, calls: list[StreamedCall]) -> None:
        self.batches.append(calls)


async def test_calls_are_told_as_they_are_written(llm: FakeLLM, door: str) -> None:
    """`on_calls` hears each call from its first delta on, its arguments growing, with
    the id and name the finished turn has; both paths stream the arguments alike."""
    first = {"action": "create", "title": "A title long enough to come in pieces"}
    second = {"action": "list"}
    llm.script(
        ToolCalls(
            Call("tasks", first, id="call_a"), Call("tasks", second, id="call_b"),
            text="Two calls.", pieces=4, pause=0.02,
        )
    )  # fmt: skip
    told = _Told()
    turn, _ = await _turn(llm, door, tools=TOOLS, on_calls=told)
    final = turn.tool_calls
    assert [c["id"] for c in final] == ["call_a", "call_b"]
    assert len(told.batches) >= 4, told.batches  # pieces written apart are told apart
    for batch in told.batches:
        assert [c.index for c in batch] == list(range(len(batch)))
        for call, done in zip(batch, final, strict=False):
            assert (call.id, call.name) == (done["id"], done["function"]["name"])
            assert done["function"]["arguments"].startswith(call.arguments)
    # told while the first was still being written, before the second began
    assert any(
        len(batch) == 1 and 0 < len(batch[0].arguments) < len(json.dumps(first))
        for batch in told.batches
    ), told.batches
    assert [c.arguments for c in told.batches[-1]] == [c["function"]["arguments"] for c in final]


async def test_a_turn_without_calls_tells_none(llm: FakeLLM, door: str) -> None:
    llm.script(Text("Just words.", pieces=4, pause=0.01))
    told = _Told()
    turn, _ = await _turn(llm, door, tools=TOOLS, on_calls=told)
    assert turn.text == "Just words." and told.batches == []


async def test_a_call_without_an_id_is_told_with_the_id_it_will_have(
    llm: FakeLLM, door: str
) -> None:
    def chunk(delta: dict, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({"id": "x", "choices": [choice]}).encode() + b"\n\n"

    def piece(arguments: str, name: str | None = None) -> bytes:
        function = {"arguments": arguments, **({"name": name} if name else {})}
        return chunk({"tool_calls": [{"index": 0, "type": "function", "function": function}]})

    body = piece("", "tasks") + piece('{"action": ') + piece('"list"}')
    llm.script(Raw(body + chunk({}, "tool_calls") + b"data: [DONE]\n\n"))
    told = _Told()
    turn, _ = await _turn(llm, door, tools=TOOLS, on_calls=told)
    [call] = turn.tool_calls
    assert json.loads(call["function"]["arguments"]) == {"action": "list"} and call["id"]
    assert told.batches and {batch[0].id for batch in told.batches} == {call["id"]}


async def test_a_call_told_is_not_retried(llm: FakeLLM, door: str) -> None:
    """Like text shown, a call told may be on the user's screen: a dropped stream after
    it fails the turn instead of asking again (without `on_calls`, it is retried)."""
    cut = ToolCalls(Call("tasks", {"action": "list"}), pieces=3, drop_after=True)
    whole = ToolCalls(Call("tasks", {"action": "list"}))
    llm.script(cut, whole)
    with pytest.raises(LLMError) as caught:
        await _turn(llm, door, tools=TOOLS, retries=2, on_calls=_Told())
    assert caught.value.kind == "connection" and len(llm.requests) == 1
    llm.reset()
    llm.script(cut, whole)
    turn, _ = await _turn(llm, door, tools=TOOLS, retries=2)
    assert len(turn.tool_calls) == 1 and len(llm.requests) == 2


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
    assert caught.value.kind == "overloaded"
    assert caught.value.message.startswith("The model provider is overloaded; try again")
    assert "overloaded)" in caught.value.message


@pytest.mark.parametrize(
    ("error", "kind", "lead"),
    [
        (Error(429, "slow down", {"retry-after": "7"}), "rate_limit", "is rate limiting"),
        (Error(401, "bad key"), "auth", "authentication failed"),
        (Error(400, "bad thing"), "bad_request", "refused the request"),
        (
            Error(400, "This model's maximum context length is 8192 tokens"),
            "context_window",
            "too long for the model",
        ),
        (Error(404, "no such model"), "model_not_found", "not found"),
        (Error(500, "boom"), "provider_unavailable", "provider failed"),
        (Error(503, "busy"), "overloaded", "overloaded; try again in a minute"),
    ],
)
async def test_http_errors_map_alike(
    llm: FakeLLM, door: str, error: Error, kind: str, lead: str
) -> None:
    """The provider's status and message are in the run's error, after a plain lead."""
    llm.script(error)
    with pytest.raises(LLMError) as caught:
        await _turn(llm, door)
    assert caught.value.kind == kind and caught.value.status == error.status
    assert lead in caught.value.message
    assert f"({error.status}" in caught.value.message and error.message in caught.value.message
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


def test_openai_format_providers_take_our_client_and_others_litellm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def resolved(model: str, base: str | None = "http://127.0.0.1:1/v1") -> ModelTarget:
        return profiles.default_target(ModelTarget(model, api_base=base, api_key="sk-door"))

    fast = resolved("openai/fake-model")
    assert fast.kind == "openai" and fast.wire_model == "fake-model"
    request = openai_client.build_request(ModelCall(fast, MESSAGES))
    assert request.url == "http://127.0.0.1:1/v1/chat/completions"
    body = json.loads(request.body)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "extra_body" not in body  # a strict server refuses unknown top-level keys
    for model in ("hosted_vllm/m", "openrouter/a/b", "groq/llama-3", "deepseek/deepseek-chat"):
        assert resolved(model).kind == "openai", model
    assert resolved("groq/llama-3", None).api_base == "https://api.groq.com/openai/v1"
    for model in ("anthropic/claude-3-5-sonnet", "azure/gpt-4o", "ollama_chat/llama3"):
        assert resolved(model).kind == "litellm", model
    assert resolved("demo/x").kind == "demo" and resolved("demo/x").api_key is None
    assert resolved("hosted_vllm/m", None).kind == "litellm"  # no URL of its own: litellm's
    assert "sk-door" not in repr(fast)  # keys stay out of logs


def test_provider_message_is_extracted_from_a_raw_json_error_body() -> None:
    body = '{"error": {"message": "slow down", "type": "rate", "code": null}}'
    exc = litellm.RateLimitError(
        message=f"OpenAIException - {body}", llm_provider="openai", model="m"
    )
    error = map_error(exc)
    assert error.kind == "rate_limit" and error.status == 429
    assert (
        error.message
        == "The model provider is rate limiting; try again shortly. (429 rate: slow down)"
    )


def test_a_bytes_repr_of_an_anthropic_body_is_read() -> None:
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    exc = litellm.InternalServerError(
        message=f"AnthropicException - {body!r}", llm_provider="anthropic", model="m"
    )
    error = map_error(exc)
    assert error.kind == "overloaded" and "b'" not in error.message
    assert error.message.endswith("(500 overloaded_error: Overloaded)")


def test_plain_error_text_is_kept() -> None:
    exc = litellm.BadRequestError(
        message="OpenAIException - bad param", llm_provider="openai", model="m"
    )
    assert map_error(exc).message == "The model provider refused the request. (400: bad param)"


def test_a_key_echoed_in_an_error_is_scrubbed() -> None:
    exc = litellm.AuthenticationError(
        message="OpenAIException - Incorrect API key provided: sk-secret-123",
        llm_provider="openai",
        model="m",
    )
    error = map_error(exc, "sk-secret-123")
    assert error.kind == "auth" and "sk-secret-123" not in error.message


def test_prices_come_from_the_profile_else_litellms_map() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_tokens=500_000)
    mapped = ModelTarget("openai/gpt-4o-mini")
    info = litellm.get_model_info("openai/gpt-4o-mini")
    expected = (
        500_000 * info["input_cost_per_token"]
        + 500_000 * info["cache_read_input_token_cost"]
        + 1_000_000 * info["output_cost_per_token"]
    )
    assert model_info.price(mapped, usage) == pytest.approx(expected)
    assert model_info.price(ModelTarget("openai/door-test-unmapped-model"), usage) is None
    own = ModelTarget("openai/door-test-unmapped-model", prices=Prices(1.0, 2.0, 0.5))
    assert model_info.price(own, usage) == pytest.approx(0.5 + 0.25 + 2.0)
    assert context_window("openai/door-test-unmapped-model", 12345) == 12345


def test_the_fast_path_takes_the_proxy_the_environment_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "models.internal")
    openai_client._env_proxy.cache_clear()
    try:
        proxy, auth = openai_client._env_proxy("https://api.example.com/v1/chat/completions")
        bypassed = openai_client._env_proxy("https://models.internal/v1/chat/completions")
        plain = openai_client._env_proxy("http://127.0.0.1:8000/v1/chat/completions")
    finally:
        openai_client._env_proxy.cache_clear()
    assert str(proxy) == "http://proxy.internal:3128"
    assert auth is not None and (auth.login, auth.password) == ("user", "secret")
    assert bypassed == (None, None) and plain == (None, None)


async def test_a_4xx_error_event_in_a_200_stream_is_not_retried(llm: FakeLLM, door: str) -> None:
    """Groq's shape: `code` is a word, the status is in `status_code`."""
    error = {
        "error": {
            "message": "Tool call validation failed: parameters did not match schema",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "status_code": 400,
        }
    }
    llm.script(Raw(b"data: " + json.dumps(error).encode() + b"\n\n"), Text("never reached"))
    with pytest.raises(LLMError) as caught:
        await _turn(llm, door, retries=2)
    assert "Tool call validation failed" in caught.value.message  # no int() ValueError
    # litellm reports it as a 500 of its own (below): its words decide there
    assert caught.value.kind == "bad_request" and len(llm.requests) == 1


async def test_an_overloaded_error_event_in_a_200_stream_is_retried(
    llm: FakeLLM, door: str
) -> None:
    error = {"error": {"message": "The server is overloaded, try again", "type": "overloaded"}}
    llm.script(Raw(b"data: " + json.dumps(error).encode() + b"\n\n"), Text("Second try."))
    turn, _ = await _turn(llm, door, retries=2)
    assert turn.text == "Second try." and len(llm.requests) == 2


async def test_litellm_still_loses_an_error_events_status(llm: FakeLLM) -> None:
    """Upstream check of the workaround in app/orchestrator/door/litellm_client.py
    (`_error_event`): through litellm an in-stream error event's 400 becomes a 500 with
    neither status nor type. When this fails, litellm keeps them: drop the workaround."""
    error = {"error": {"message": "bad call", "type": "invalid_request_error", "status_code": 400}}
    llm.script(Raw(b"data: " + json.dumps(error).encode() + b"\n\n"))
    with pytest.raises(Exception) as caught:
        stream = await litellm.acompletion(
            model="openai/fake-model", messages=MESSAGES, api_base=llm.base_url,
            api_key="k", stream=True, max_retries=0,
        )  # fmt: skip
        async for _ in stream:
            pass
    assert getattr(caught.value, "status_code", None) == 500
    assert getattr(caught.value, "type", None) is None
