"""The one door to the model: with `llm_wire` (its fast path), the only modules that
import litellm.

`stream_turn` streams one model turn: text deltas go to a callback as they arrive, tool
calls whose arguments arrive in pieces are reassembled, provider errors become an
`LLMError` with a clear message, and transient failures (rate limits honouring
retry-after, 5xx, connection errors, timeouts) are retried a bounded number of times,
but only before anything was streamed (a retry would repeat text the user already saw).
`fit_to_context` trims history to the model's context window with litellm's counter.

Two paths, one behaviour: OpenAI-format streams (see `llm_wire`) are read off the wire by
the door itself with the request and the errors still litellm's; every other provider,
or all of them with `fast_stream=False` (LLM_FAST_STREAM=false), goes through
`litellm.acompletion` in full. Both yield chunks of the same shape to one loop.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import os
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import
# OpenAI-format calls go through litellm's own HTTP handler instead of the `openai` SDK: the
# SDK re-walks every request against its TypedDicts (~1 ms per call for a few messages) and
# builds pydantic objects per chunk that litellm then rebuilds again. Still litellm end to end
# (same transformation, streaming wrapper, exception mapping), ~2.5 ms less CPU per model call.
os.environ.setdefault("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", "True")

import aiohttp
import httpx
import litellm
import msgspec
from litellm.llms.custom_llm import CustomLLM

from app.observability import calls, metrics
from app.orchestrator import llm_wire
from app.orchestrator.demo_model import demo_plan, demo_reply, split_text

logger = logging.getLogger(__name__)
litellm.suppress_debug_info = True
logging.getLogger("LiteLLM").setLevel(logging.WARNING)  # no line per call
litellm.telemetry = False

TextCallback = Callable[[str], Awaitable[None]]
DEMO_PROVIDER = "demo"


@dataclass(frozen=True)
class ModelTarget:
    model: str
    api_base: str | None = None
    api_key: str | None = None
    timeout: float = 60.0  # longest silence while waiting for the next chunk
    max_retries: int = 2
    retry_base: float = 0.5  # first backoff; doubles per attempt unless retry-after says
    fast_stream: bool = True  # OpenAI-format streams read by the door (False: litellm in full)


@dataclass
class ModelTurn:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # OpenAI format
    finish_reason: str | None = None


class LLMError(Exception):
    """A model failure with a message fit for `run.error`."""

    def __init__(self, kind: str, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.retry_after = kind, message, retry_after

    @property
    def transient(self) -> bool:
        return self.kind in {"rate_limit", "provider_unavailable", "timeout", "connection"}


def _retry_after(exc: Exception) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None) or {}
    raw = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None


def _detail(exc: Exception) -> str:
    """The provider's own message: litellm's HTTP handler keeps the raw JSON error body."""
    detail = str(exc).split(" - ", 1)[-1]
    if detail.startswith("{"):
        try:
            body = json.loads(detail)
        except ValueError:
            return detail[:300]
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str) and message:
            return message[:300]
    return detail[:300]


def map_error(exc: Exception) -> LLMError:
    """Provider exceptions (litellm's OpenAI-style classes) to clear run errors."""
    name = type(exc).__name__
    detail = _detail(exc)
    if isinstance(exc, litellm.ContextWindowExceededError):
        return LLMError("context_window", f"The conversation is too long for the model: {detail}")
    if isinstance(exc, litellm.AuthenticationError):
        return LLMError("auth", "The model provider rejected the API key (authentication failed).")
    if isinstance(exc, litellm.RateLimitError):
        return LLMError(
            "rate_limit",
            f"The model provider is rate limiting: {detail}",
            retry_after=_retry_after(exc),
        )
    # a stalled stream surfaces as a connection/500 error mentioning a read timeout
    if isinstance(exc, litellm.Timeout | TimeoutError) or "timeout on reading" in str(exc).lower():
        return LLMError("timeout", "The model did not answer in time.")
    if isinstance(exc, litellm.APIConnectionError):
        return LLMError("connection", f"Could not reach the model provider: {detail}")
    if isinstance(exc, litellm.NotFoundError):
        return LLMError("model_not_found", f"The model was not found: {detail}")
    if isinstance(exc, litellm.BadRequestError):
        return LLMError("bad_request", f"The model provider refused the request: {detail}")
    status = getattr(exc, "status_code", None)
    if (isinstance(status, int) and status >= 500) or name in {
        "InternalServerError",
        "ServiceUnavailableError",
    }:
        return LLMError("provider_unavailable", f"The model provider failed ({status}): {detail}")
    return LLMError("provider_error", f"The model call failed: {name}: {detail}")


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
    """Did the connection itself fail (reset, closed mid-body), not the provider answer?"""
    return any(
        isinstance(cause, httpx.TransportError | aiohttp.ClientError | ConnectionError)
        and not isinstance(cause, httpx.TimeoutException | TimeoutError)
        for cause in _causes(exc)
    )


def stream_lost(exc: Exception) -> LLMError | None:
    """A stream that had begun and broke off on the connection: say so, whatever status
    litellm's wrapper gave it (it reports a dropped body as a 500)."""
    if isinstance(exc, LLMError) or not _transport_failed(exc):
        return None
    if map_error(exc).kind == "timeout":
        return None
    return LLMError("connection", "The connection to the model provider was lost mid-answer.")


class _ToolCallAssembler:
    """Joins tool-call deltas (by index) into complete OpenAI-format calls."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}

    def add(self, delta: Any) -> None:
        index = getattr(delta, "index", None) or 0
        call = self._calls.setdefault(
            index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if getattr(delta, "id", None):
            call["id"] = delta.id
        function = getattr(delta, "function", None)
        if function is not None:
            if function.name:
                call["function"]["name"] += function.name
            if function.arguments:
                call["function"]["arguments"] += function.arguments

    def calls(self) -> list[dict[str, Any]]:
        out = []
        for index in sorted(self._calls):
            call = self._calls[index]
            call["id"] = call["id"] or f"call_{index}_{random.getrandbits(48):x}"
            out.append(call)
        return out


_PRICE_KEYS = (
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_creation_input_token_cost",
    "cache_read_input_token_cost",
)


@functools.cache
def _price_unmapped_model(model: str) -> None:
    """Give a model missing from litellm's cost map an explicit zero price, once.

    litellm prices every call twice (response metadata, success logging) even with no
    callbacks. For an unmapped model (a self-hosted OpenAI-compatible server, the bench's
    fake model) each pricing misses its lru_caches and walks the name generalizations
    again: ~0.8 ms of CPU per call. Its price was unknown anyway (nothing to bill); now
    it is an explicit 0. Mapped models are untouched and keep their real prices.
    """
    try:
        litellm.get_model_info(model)
        return
    except Exception:
        pass
    try:
        provider = litellm.get_llm_provider(model)[1]
        zero = dict.fromkeys(_PRICE_KEYS, 0.0)
        litellm.register_model({model: {"litellm_provider": provider, "mode": "chat", **zero}})
    except Exception:  # pricing is litellm's bookkeeping, never a reason to fail a call
        logger.debug("could not register %s in litellm's cost map", model, exc_info=True)


async def _stream_once(
    target: ModelTarget,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    on_text: TextCallback,
    turn: ModelTurn,
    response_format: dict[str, Any] | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    assembler = _ToolCallAssembler()
    async with calls.model_call(target.model):
        # the request's own timeout: target.timeout
        stream = await _open(target, messages, tools, response_format)
        # The idle deadline is set by every read: a stream stalling after one ends as a timeout.
        # Until the first, the transport's read timeout (also target.timeout) watches the wire,
        # so litellm's own first-chunk work (imports on a first call) is not counted as silence.
        # Moved only once it is due within `timeout` (each time to `timeout` + a tenth
        # ahead): a read costs a clock read, not a timer; a stall still ends between
        # `timeout` and 1.1 x `timeout` after the last chunk.
        ahead = target.timeout * 1.1
        async with asyncio.timeout(None) as deadline:
            due = math.inf
            async for batch in _batches(stream):
                now = loop.time()
                if due - now < target.timeout:
                    due = now + ahead
                    deadline.reschedule(due)
                if text := _take(batch, turn, assembler):
                    await on_text(text)
    turn.tool_calls = assembler.calls()


def _take(batch: list[Any], turn: ModelTurn, assembler: _ToolCallAssembler) -> str:
    """Add a batch of chunks to the turn; the text they carried (told in one piece)."""
    text = ""
    for chunk in batch:
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta is not None and delta.content:
            text += delta.content
        for call_delta in (getattr(delta, "tool_calls", None) or ()) if delta else ():
            assembler.add(call_delta)
        if choice.finish_reason:
            turn.finish_reason = choice.finish_reason
    turn.text += text
    return text


async def _open(
    target: ModelTarget,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    response_format: dict[str, Any] | None = None,
) -> AsyncIterator[list[Any]]:
    """The call's stream of chunk batches: off the wire (a batch per read), or litellm's
    streaming wrapper (a batch per chunk)."""
    if target.fast_stream:
        request = _wire_request(target, messages, tools, response_format)
        if request is not None:
            response = await llm_wire.open_stream(request, target.timeout)
            return llm_wire.read_batches(request, response)
    params: dict[str, Any] = {"stream": True, "max_retries": 0, "timeout": target.timeout}
    if response_format is not None:
        params["response_format"] = response_format
    if target.api_base:
        params["api_base"] = target.api_base
    if target.api_key:
        params["api_key"] = target.api_key
    if tools:
        params["tools"] = tools
    _price_unmapped_model(target.model)
    return _one_by_one(await litellm.acompletion(model=target.model, messages=messages, **params))


async def _one_by_one(stream: Any) -> AsyncIterator[list[Any]]:
    async for chunk in stream:
        yield [chunk]


def _wire_request(
    target: ModelTarget,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    response_format: dict[str, Any] | None,
) -> llm_wire.WireRequest | None:
    """litellm's request for the fast path; errors building it are litellm's own types."""
    try:
        return llm_wire.build_request(
            target.model, target.api_base, target.api_key, messages, tools or None, response_format
        )
    except Exception as exc:
        provider = target.model.split("/", 1)[0]
        raise llm_wire.exception_type(
            model=target.model, original_exception=exc, custom_llm_provider=provider
        ) from exc


async def _batches(stream: AsyncIterator[list[Any]]) -> AsyncIterator[list[Any]]:
    """The stream's batches; a connection that breaks off mid-stream is said to be lost.

    Only the stream's own errors pass here (an error of the loop's body, e.g. a database
    write in `on_text`, is raised where it happens, not thrown into this generator).
    """
    try:
        async for batch in stream:
            yield batch
    except Exception as exc:
        if (lost := stream_lost(exc)) is not None:
            raise lost from exc
        raise


async def stream_turn(
    target: ModelTarget,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    on_text: TextCallback,
    *,
    response_format: dict[str, Any] | None = None,
) -> ModelTurn:
    """One streamed model turn; raises LLMError (after bounded retries) on failure.

    `response_format` (OpenAI's: json_schema or json_object) asks for structured output.
    """
    attempt = 0
    while True:
        turn = ModelTurn()
        try:
            await _stream_once(target, messages, tools, on_text, turn, response_format)
            return turn
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = exc if isinstance(exc, LLMError) else map_error(exc)
            metrics.model_error(error.kind)
            if not error.transient or turn.text or attempt >= target.max_retries:
                if attempt:
                    error.message += f" (after {attempt + 1} attempts)"
                raise error from exc
            delay = error.retry_after
            if delay is None:
                delay = target.retry_base * (2**attempt) * (0.8 + 0.4 * random.random())
            attempt += 1
            logger.warning("model call failed (%s), retry %d in %.2fs", error.kind, attempt, delay)
            await asyncio.sleep(min(delay, 60.0))


# -- context window -----------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def context_window(model: str, fallback: int) -> int:
    """The model's input window in tokens (litellm's model map), else `fallback`. Cached:
    the map is read once at import, and a model registered later for its price carries
    no window (the fallback, as before); looking it up cost ~0.3 ms on every run."""
    try:
        info = litellm.get_model_info(model)
    except Exception:
        return fallback
    return int(info.get("max_input_tokens") or info.get("max_tokens") or fallback)


def _groups(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """An assistant turn and its tool results are dropped together, never apart."""
    groups: list[list[dict[str, Any]]] = []
    for message in messages:
        if message.get("role") == "tool" and groups:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


def _rough_chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    """The prompt's size as JSON (keys and quotes included: an over-estimate). Encoded in
    C: `str()` of the tool schemas alone cost more than the rest of a model call's setup."""
    try:
        return len(_json(messages)) + len(_json(tools or []))
    except (TypeError, msgspec.EncodeError):  # not JSON (a provider object): repr it
        return len(str(messages)) + len(str(tools or ""))


_json = msgspec.json.Encoder().encode


def fit_to_context(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    window: int,
    reserve: int = 1024,
) -> list[dict[str, Any]]:
    """Drop the oldest turns until the prompt fits; system messages and the last turn stay."""
    budget = max(256, window - reserve)
    # Cheap bound first: ~1 token per 3 characters is generous for every tokenizer here.
    if _rough_chars(messages, tools) // 3 < budget:
        return messages
    system = [m for m in messages if m.get("role") == "system"]
    groups = _groups([m for m in messages if m.get("role") != "system"])
    while len(groups) > 1:
        kept = system + [m for g in groups for m in g]
        counted = litellm.token_counter(model=model, messages=kept, tools=tools)  # type: ignore[arg-type]
        if counted <= budget:
            return kept
        groups.pop(0)
        while len(groups) > 1 and groups[0][0].get("role") != "user":
            groups.pop(0)  # a conversation restarts at a user message
    return system + [m for g in groups for m in g]


# -- the offline demo provider --------------------------------------------------------
class DemoLLM(CustomLLM):
    """`demo/<anything>`: streams text or real tool calls for simple intents."""

    async def astreaming(  # type: ignore[override]  # litellm iterates what it returns
        self, model: str, messages: list, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        optional = kwargs.get("optional_params") or {}
        if optional.get("response_format"):
            reply = demo_plan(messages)
        else:
            reply = demo_reply(messages, optional.get("tools"))
        for piece in split_text(reply.text) if reply.text else ():
            yield {
                "text": piece,
                "tool_use": None,
                "is_finished": False,
                "finish_reason": "",
                "usage": None,
                "index": 0,
            }
        for index, call in enumerate(reply.tool_calls):
            tool_use = {
                "id": f"call_demo_{random.getrandbits(40):x}",
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
                "index": index,
            }
            yield {
                "text": "",
                "tool_use": tool_use,
                "is_finished": False,
                "finish_reason": "",
                "usage": None,
                "index": 0,
            }
        finish = "tool_calls" if reply.tool_calls else "stop"
        yield {
            "text": "",
            "tool_use": None,
            "is_finished": True,
            "finish_reason": finish,
            "usage": None,
            "index": 0,
        }


def register_demo_provider() -> None:
    if DEMO_PROVIDER not in litellm._custom_providers:
        litellm.custom_provider_map = [
            *litellm.custom_provider_map,
            {"provider": DEMO_PROVIDER, "custom_handler": DemoLLM()},
        ]
        litellm._custom_providers.append(DEMO_PROVIDER)
        from litellm.utils import custom_llm_setup

        custom_llm_setup()


register_demo_provider()


def is_demo_model(model: str) -> bool:
    return model.startswith(f"{DEMO_PROVIDER}/")
