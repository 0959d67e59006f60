"""litellm through its public API (`litellm.acompletion`, streaming) for the providers
that do not speak OpenAI's format: Anthropic, Gemini, Bedrock, Azure, Vertex…

Its chunks already have OpenAI's shape; its exceptions are reduced to the provider's
status, type and message (errors.from_status), never shown as litellm's own text.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx

# OpenAI-format calls that do go through litellm (LLM_FAST_STREAM=false) use its own HTTP
# handler, not the `openai` SDK: same as our client on malformed lines (skipped) and
# error objects in the stream (the provider's error), and ~2.5 ms less CPU per call.
os.environ.setdefault("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", "True")

import litellm  # after the switch above: litellm reads it at import

from app.orchestrator.door import model_info  # noqa: F401  (it sets litellm's switches)
from app.orchestrator.door.errors import (
    LLMError,
    body_in_text,
    from_status,
    retry_after_seconds,
    scrub,
)
from app.orchestrator.door.types import ModelCall, ModelTarget

LOST = "The connection to the model provider was lost mid-answer."


class LiteLLMClient:
    """`ModelClient` through `litellm.acompletion`."""

    async def open(self, call: ModelCall) -> AsyncIterator[list[Any]]:
        target = call.target
        params: dict[str, Any] = {
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_retries": 0,  # the door retries, with its own backoff
            "timeout": target.timeout,
        }
        if call.response_format is not None:
            params["response_format"] = call.response_format
        if target.api_base:
            params["api_base"] = target.api_base
        if target.api_key:
            params["api_key"] = target.api_key
        if target.headers:
            params["extra_headers"] = dict(target.headers)
        if call.tools:
            params["tools"] = call.tools
        model = target.wire_model or target.model
        try:
            stream = await litellm.acompletion(model=model, messages=call.messages, **params)
        except Exception as exc:
            raise map_error(exc, target.api_key) from exc
        return _batches(stream, target.api_key)


async def _batches(stream: Any, key: str | None) -> AsyncIterator[list[Any]]:
    """A batch per chunk; a failure mid-stream is mapped like one at the start."""
    try:
        async for chunk in stream:
            yield [chunk]
    except Exception as exc:
        raise map_error(exc, key) from exc


def map_error(exc: Exception, key: str | None = None) -> LLMError:
    """A litellm exception as the provider's error (status, type, message)."""
    if isinstance(exc, LLMError):
        return exc
    if _transport_failed(exc):
        return LLMError("connection", LOST if _mid_stream(exc) else _unreachable(exc, key))
    if isinstance(exc, litellm.Timeout | TimeoutError) or "timeout" in type(exc).__name__.lower():
        return LLMError("timeout", "The model did not answer in time.")
    status = _status(exc)
    text = scrub(str(getattr(exc, "message", None) or exc), key)
    found = body_in_text(text)
    if found is not None:
        error_type, message, body_status = found
        status = status if status not in {None, 500} or not body_status else body_status
    else:
        error_type, message = None, text.split(" - ", 1)[-1]
    if isinstance(exc, litellm.ContextWindowExceededError):
        message = "context length exceeded: " + message
    if isinstance(exc, litellm.APIConnectionError) and status in {None, 500} and not found:
        return LLMError("connection", _unreachable(exc, key))
    if status in {None, 500} and not found and _error_event(exc):
        return _event_error(message)
    retry_after = retry_after_seconds(_answer_headers(exc))
    return from_status(status, error_type, message, retry_after=retry_after)


# Words of an error event that is worth another try (the provider's own trouble).
_TRANSIENT_WORDS = ("overload", "rate limit", "server error", "internal", "unavailable",
                    "try again", "capacity")  # fmt: skip


def _error_event(exc: Exception) -> bool:
    """An error event inside a 200 stream: litellm raises it as a 500 of its own whose
    public attributes keep the provider's message only (no status, no type), where our
    OpenAI-wire client reads the event's `status_code` (Groq: 400 `tool_use_failed`).
    Workaround until litellm keeps them: tests/orchestrator/test_llm_door.py checks it
    still loses them."""
    chain = _causes(exc)
    return any(_mid_stream_fallback(c) for c in chain) and not any(
        isinstance(c, httpx.HTTPStatusError)
        for c in chain  # a real HTTP 500 has this
    )


def _mid_stream_fallback(exc: BaseException) -> bool:
    """litellm's MidStreamFallbackError, known by its public attribute: the class is not
    among litellm's top-level names (only those are used here)."""
    return isinstance(exc, litellm.ServiceUnavailableError) and hasattr(exc, "is_pre_first_chunk")


def _event_error(message: str) -> LLMError:
    """Retried only when its words say the provider is in trouble: another try of a
    request the provider judged (a malformed tool call) fails the same way."""
    if any(word in message.lower() for word in _TRANSIENT_WORDS):
        return from_status(500, None, message)
    return LLMError("bad_request", f"The model provider refused the request. ({message[:300]})")


def _status(exc: Exception) -> int | None:
    """The HTTP status the provider answered: the wrapped httpx error's (litellm reports
    some, e.g. Anthropic's 529, as a 500 of its own), else litellm's `status_code`."""
    for cause in _causes(exc):
        if isinstance(cause, httpx.HTTPStatusError):
            return cause.response.status_code
    response = getattr(exc, "response", None)
    for value in (getattr(response, "status_code", None), getattr(exc, "status_code", None)):
        if isinstance(value, int) and 100 <= value < 600:
            return value
    return None


def _answer_headers(exc: Exception) -> Any:
    """The provider's response headers (for retry-after), wherever litellm kept them."""
    for cause in _causes(exc):
        if isinstance(cause, httpx.HTTPStatusError):
            return cause.response.headers
    return getattr(exc, "litellm_response_headers", None) or getattr(
        getattr(exc, "response", None), "headers", None
    )


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and what it wraps (litellm keeps the original on `original_exception`)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 20:
        chain.append(current)
        wrapped = getattr(current, "original_exception", None)
        if not isinstance(wrapped, BaseException):
            wrapped = current.__cause__ or current.__context__
        current = wrapped
    return chain


def _transport_failed(exc: BaseException) -> bool:
    """Did the connection itself fail (refused, reset, closed mid-body)?"""
    return any(
        isinstance(cause, httpx.TransportError | aiohttp.ClientError | ConnectionError)
        and not isinstance(cause, httpx.TimeoutException | TimeoutError)
        for cause in _causes(exc)
    )


def _mid_stream(exc: BaseException) -> bool:
    """A body that broke off (not a connection never made)."""
    return any(
        isinstance(cause, httpx.RemoteProtocolError | httpx.ReadError | aiohttp.ClientPayloadError)
        for cause in _causes(exc)
    )


def _unreachable(exc: BaseException, key: str | None) -> str:
    return "Could not reach the model provider: " + scrub(str(exc).split(" - ", 1)[-1], key)[:300]


async def embed(target: ModelTarget, texts: list[str]) -> tuple[list[list[float]], int]:
    """Embeddings through litellm's public `aembedding` (providers not on the OpenAI
    wire): the vectors in order and the input tokens."""
    try:
        answer = await litellm.aembedding(
            model=target.wire_model or target.model, input=texts, api_base=target.api_base,
            api_key=target.api_key, timeout=target.timeout,
        )  # fmt: skip
    except Exception as exc:  # litellm's provider errors: the caller retries later
        raise LLMError("provider", f"Embedding failed: {type(exc).__name__}") from exc
    vectors = [item["embedding"] for item in answer.data]
    usage = getattr(answer, "usage", None)
    return vectors, getattr(usage, "prompt_tokens", 0) or 0
