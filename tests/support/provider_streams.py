"""Responses shaped as each provider sends them, built from their public API references:
OpenAI's chat completions streaming (`chat.completion.chunk`, `stream_options`),
Anthropic's Messages streaming (`event:` + `data:` SSE, content blocks, `input_json_delta`,
thinking blocks, `error` events), Gemini's `streamGenerateContent?alt=sse`
(`candidates[].content.parts[]`, `functionCall`, `usageMetadata`), and the quirks of
OpenAI-compatible servers (vLLM, Ollama, Groq, LM Studio…)."""

from __future__ import annotations

import json
from typing import Any

from tests.support.fake_llm import Raw


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(data).encode() + b"\n\n"


# -- OpenAI --------------------------------------------------------------------------------
def openai_chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
    """A chunk with OpenAI's explicit nulls (`logprobs`, `finish_reason`, `usage`)."""
    choices = [] if delta is None else [
        {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    ]  # fmt: skip
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4o-mini", "system_fingerprint": None, "choices": choices,
            "usage": None, **extra}  # fmt: skip
    return sse(body)


def openai_parallel_calls() -> Raw:
    """Two calls in one turn, arguments split, then a usage-only last chunk."""
    first, second = (
        json.dumps({"action": "create", "title": "milk"}),
        json.dumps({"action": "list"}),
    )
    chunks = [
        openai_chunk({"role": "assistant", "content": None, "refusal": None}),
        openai_chunk({"tool_calls": [{"index": 0, "id": "call_A", "type": "function",
                                      "function": {"name": "tasks", "arguments": ""}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": first[:10]}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": first[10:]}}]}),
        openai_chunk({"tool_calls": [{"index": 1, "id": "call_B", "type": "function",
                                      "function": {"name": "tasks", "arguments": ""}}]}),
        openai_chunk({"tool_calls": [{"index": 1, "function": {"arguments": second}}]}),
        openai_chunk({}, "tool_calls"),
        openai_chunk(None, usage={
            "prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
            "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 10, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0},
        }),
    ]  # fmt: skip
    return Raw(b"".join(chunks) + b"data: [DONE]\n\n")


# -- OpenAI-compatible quirks -----------------------------------------------------------------
def compatible_quirks() -> Raw:
    """`content: ""` beside calls, a call whole in one chunk without `index`, and a second
    call whose `id` (and name) is repeated on every chunk, also without `index`; usage
    under Groq's `x_groq`."""
    chunks = [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "", "tool_calls": [{"id": "call_1", "type": "function",
                      "function": {"name": "tasks", "arguments": '{"action": "list"}'}}]}),
        openai_chunk({"content": "", "tool_calls": [{"id": "call_2", "type": "function",
                      "function": {"name": "tasks", "arguments": '{"action": '}}]}),
        openai_chunk({"content": "", "tool_calls": [{"id": "call_2", "type": "function",
                      "function": {"name": "tasks", "arguments": '"create"}'}}]}),
        openai_chunk({"content": ""}, "tool_calls"),
        openai_chunk(None, x_groq={"id": "req_1", "usage": {"prompt_tokens": 50,
                                                           "completion_tokens": 7}}),
    ]  # fmt: skip
    return Raw(b"".join(chunks) + b"data: [DONE]\n\n")


def groq_error_in_stream() -> Raw:
    """Groq's tool validation failure: an error object inside a 200 stream."""
    error = {"error": {"message": "Tool call validation failed: tool call validation failed: "
                       "parameters for tool tasks did not match schema",
                       "type": "invalid_request_error", "code": "tool_use_failed",
                       "status_code": 400}}  # fmt: skip
    return Raw(openai_chunk({"role": "assistant", "content": ""}) + sse(error))


# -- Anthropic -------------------------------------------------------------------------------------
def anthropic_tool_use() -> Raw:
    """A thinking block, text, then a tool_use whose input arrives as input_json_delta."""
    parts = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 472, "output_tokens": 2, "cache_read_input_tokens": 100,
                      "cache_creation_input_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "thinking", "thinking": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "thinking_delta", "thinking": "The user wants a task."}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "text_delta", "text": "Adding it."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("content_block_start", {"type": "content_block_start", "index": 2, "content_block": {
            "type": "tool_use", "id": "toolu_01", "name": "tasks", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2,
                                 "delta": {"type": "input_json_delta", "partial_json": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2,
                                 "delta": {"type": "input_json_delta", "partial_json": '{"action": "cre'}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2,
                                 "delta": {"type": "input_json_delta", "partial_json": 'ate", "title": "milk"}'}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use",
                           "stop_sequence": None}, "usage": {"output_tokens": 89}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return Raw(b"".join(sse(data, event) for event, data in parts))


def anthropic_text(text: str = "Done.") -> Raw:
    """A plain text answer (the turn after a tool call)."""
    parts = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_2", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 600, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                           "stop_sequence": None}, "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return Raw(b"".join(sse(data, event) for event, data in parts))


ANTHROPIC_OVERLOADED = {
    "type": "error",
    "error": {"type": "overloaded_error", "message": "Overloaded"},
}


def anthropic_overloaded() -> Raw:
    """HTTP 529 with Anthropic's error body."""
    return Raw(json.dumps(ANTHROPIC_OVERLOADED).encode(), status=529,
               content_type="application/json")  # fmt: skip


# -- Gemini ----------------------------------------------------------------------------------------
def gemini_function_call() -> Raw:
    """Text, then a functionCall (whole: Gemini never splits arguments), usageMetadata."""
    chunks = [
        {"candidates": [{"content": {"parts": [{"text": "Let me check."}], "role": "model"},
                         "index": 0}],
         "usageMetadata": {"promptTokenCount": 40, "totalTokenCount": 40},
         "modelVersion": "gemini-2.5-flash"},
        {"candidates": [{"content": {"parts": [{"functionCall": {
            "name": "tasks", "args": {"action": "list"}}}], "role": "model"},
            "finishReason": "STOP", "index": 0}],
         "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 12,
                           "totalTokenCount": 60, "cachedContentTokenCount": 16,
                           "thoughtsTokenCount": 8},
         "modelVersion": "gemini-2.5-flash"},
    ]  # fmt: skip
    return Raw(b"".join(sse(chunk) for chunk in chunks))
