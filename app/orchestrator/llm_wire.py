"""The model door's fast path: OpenAI-format streams read off the wire, chunk by chunk.

litellm still decides everything about the provider: which one a model name means, its
credentials and base URL, the request (URL, headers, body, through the provider's own
config: `validate_environment`, `get_complete_url`, `transform_request`) and the error
types (`get_error_class` + `exception_type`, so the door maps them as before). Only the
reading of the answer is ours: the SSE lines go straight from aiohttp into msgspec Structs
instead of litellm's CustomStreamWrapper, which builds and rebuilds pydantic objects per
chunk (~0.3 ms of CPU each, against ~10 µs here).

Only providers whose chat config is litellm's OpenAI one (or a subclass that neither signs
requests nor fakes streaming nor wraps the stream itself) take this path; any other, and
any target whose base URL litellm would look up elsewhere, returns None from
`build_request` and goes through `litellm.acompletion` in full.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import aiohttp
import certifi
import litellm
import msgspec
from aiohttp.helpers import get_env_proxy_for_url
from litellm.litellm_core_utils.exception_mapping_utils import exception_type
from litellm.llms.base_llm.chat.transformation import BaseConfig
from litellm.llms.openai.chat.gpt_transformation import OpenAIGPTConfig
from litellm.utils import ProviderConfigManager
from yarl import URL

logger = logging.getLogger(__name__)
DRAIN_SECONDS = 0.5

# Providers whose streamed chat answer is OpenAI's `chat.completion.chunk` SSE (litellm
# sends them through its OpenAI config or an OpenAI-like subclass of it). Azure is not
# here: deployments, api-version and Entra tokens are resolved in litellm's Azure client.
# Ollama is reached through its OpenAI endpoint (`openai/<model>` + `…/v1`); litellm's
# `ollama_chat` speaks Ollama's own NDJSON.
OPENAI_FORMAT_PROVIDERS = frozenset(
    {
        "openai",
        "custom_openai",
        "hosted_vllm",
        "lm_studio",
        "openrouter",
        "groq",
        "deepseek",
        "xai",
        "together_ai",
        "fireworks_ai",
        "deepinfra",
        "mistral",
    }
)


# -- the chunks ------------------------------------------------------------------------
# Only what the door reads; msgspec skips every other field without building it.
class FunctionDelta(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: FunctionDelta | None = None


class Delta(msgspec.Struct):
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class Choice(msgspec.Struct):
    delta: Delta | None = None
    finish_reason: str | None = None


class Chunk(msgspec.Struct):
    choices: list[Choice] = []  # empty in a last chunk carrying only usage
    error: Any = None  # vLLM and others may send an error inside a 200 stream


_decode_chunk = msgspec.json.Decoder(Chunk).decode
_encode = msgspec.json.Encoder().encode


# -- the request -----------------------------------------------------------------------
@dataclass(frozen=True)
class WireRequest:
    model: str  # the provider's own name for it (`fake-model` of `openai/fake-model`)
    provider: str
    config: BaseConfig
    url: str
    headers: dict[str, str]
    body: bytes


def _openai_format(config: Any, model: str, provider: str) -> bool:
    if not isinstance(config, OpenAIGPTConfig):
        return False
    if config.has_custom_stream_wrapper or config.uses_async_transform_request:
        return False
    if type(config).sign_request is not BaseConfig.sign_request:
        return False
    return not config.should_fake_stream(model=model, stream=True, custom_llm_provider=provider)


def build_request(
    target_model: str,
    api_base: str | None,
    api_key: str | None,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    response_format: dict[str, Any] | None = None,
) -> WireRequest | None:
    """litellm's request for this call, or None when the call is not for the fast path.

    What does not depend on the messages (the provider, URL, optional params, the tools
    and a structured-output `response_format` as litellm transforms them) is worked out
    once per model, credentials, toolset and format (`_target`); per call litellm
    transforms only the messages and the headers.
    """
    target = _target(
        target_model,
        api_base,
        api_key,
        _encode(tools) if tools else b"",
        _encode(response_format) if response_format else b"",
    )
    if target is None:
        return None
    config, params = target.config, dict(target.params)
    headers = config.validate_environment(
        headers={},
        model=target.model,
        messages=messages,  # type: ignore[arg-type]
        optional_params=dict(target.optional),
        litellm_params=params,
        api_key=target.key,
        api_base=target.base,
    )
    transformed = config.transform_request(target.model, messages, {}, params, headers)  # type: ignore[arg-type]
    body = {**target.body, "messages": transformed["messages"], "stream": True}
    return WireRequest(target.model, target.provider, config, target.url, headers, _encode(body))


@dataclass(frozen=True)
class _Target:
    model: str
    provider: str
    config: OpenAIGPTConfig
    key: str | None
    base: str
    params: dict[str, Any]
    optional: dict[str, Any]
    url: str
    body: dict[str, Any]  # the request body without its messages, each value encoded


@lru_cache(maxsize=64)
def _target(
    target_model: str,
    api_base: str | None,
    api_key: str | None,
    tools_json: bytes,
    format_json: bytes,
) -> _Target | None:
    """The fast path's target for a model, credentials and toolset, or None (litellm in
    full). Built once: litellm's provider resolution and tool transforms cost ~1 ms."""
    model, provider, dynamic_key, provider_base = litellm.get_llm_provider(
        target_model, api_base=api_base, api_key=api_key
    )
    if provider not in OPENAI_FORMAT_PROVIDERS:
        return None
    config = ProviderConfigManager.get_provider_chat_config(
        model=model, provider=litellm.LlmProviders(provider)
    )
    if not _openai_format(config, model, provider):
        return None
    assert isinstance(config, OpenAIGPTConfig)
    key, base = api_key or dynamic_key, api_base or provider_base
    if provider == "openai":  # litellm's own lookup: litellm.api_key, OPENAI_API_KEY, …
        key, base = OpenAIGPTConfig.get_api_key(key), OpenAIGPTConfig.get_api_base(base)
    if base is None:
        return None  # litellm resolves this provider's URL in its dispatcher: let it
    tools = msgspec.json.decode(tools_json) if tools_json else None
    response_format = msgspec.json.decode(format_json) if format_json else None
    optional = litellm.get_optional_params(
        model=model,
        custom_llm_provider=provider,
        stream=True,
        tools=tools,
        response_format=response_format,
    )
    params = {"api_base": base, "custom_llm_provider": provider}
    url = config.get_complete_url(
        api_base=base, api_key=key, model=model, optional_params=optional, litellm_params=params
    )
    body = config.transform_request(model, [], dict(optional), dict(params), {})
    body.pop("messages", None)
    # encoded once: a call's body then encodes only its messages (the tools' schemas were
    # most of the bytes encoded per call)
    static = {name: msgspec.Raw(_encode(value)) for name, value in body.items()}
    return _Target(model, provider, config, key, base, params, optional, url, static)


# -- errors: litellm's types, as its own HTTP handler raises them ------------------------
def provider_error(request: WireRequest, message: str, status: int, headers: Any = None) -> Any:
    """The exception litellm would raise for this answer (RateLimitError, …)."""
    raw = request.config.get_error_class(
        error_message=message, status_code=status, headers=dict(headers or {})
    )
    return exception_type(
        model=request.model, original_exception=raw, custom_llm_provider=request.provider
    )


# -- the stream ------------------------------------------------------------------------
# aiohttp, not httpx: a streamed call costs ~180 µs of CPU through aiohttp against ~650
# through httpx (measured here, same SSE), a third of a tool turn's model door.
_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = (
    weakref.WeakKeyDictionary()
)


def _session() -> aiohttp.ClientSession:
    """One pooled session per event loop (connections are bound to the loop that made
    them), with certifi's CAs as httpx had."""
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None or session.closed:
        tls = ssl.create_default_context(cafile=certifi.where())
        session = _sessions[loop] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls))
    return session


@lru_cache(maxsize=256)
def _env_proxy(url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy the environment names for `url` (HTTPS_PROXY, NO_PROXY, …), as httpx
    honoured them; looked up once per URL. (aiohttp's own `trust_env` looks it up, and
    ~/.netrc, on a thread for every request: two thread hops per model call.)"""
    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None


async def close_session() -> None:
    """Close this event loop's session and its connections (at shutdown)."""
    session = _sessions.pop(asyncio.get_running_loop(), None)
    if session is not None:
        await session.close()


async def open_stream(request: WireRequest, timeout: float) -> aiohttp.ClientResponse:  # noqa: ASYNC109
    """Send the request and wait for the answer's head (connecting and each read within
    `timeout`, as litellm's `timeout`); an error status or a failed connection raises
    litellm's type."""
    limits = aiohttp.ClientTimeout(total=None, connect=timeout, sock_read=timeout)
    proxy, proxy_auth = _env_proxy(request.url)
    try:
        response = await _session().post(
            request.url,
            data=request.body,
            headers=request.headers,
            timeout=limits,
            proxy=proxy,
            proxy_auth=proxy_auth,
            allow_redirects=False,  # as litellm's and httpx's clients: a redirect is not followed
        )
    except TimeoutError as exc:  # aiohttp's connect and read timeouts are TimeoutErrors
        raise litellm.Timeout(str(exc), model=request.model, llm_provider=request.provider) from exc
    except aiohttp.ClientError as exc:  # litellm's handler reports these as a 500 of the provider
        raise provider_error(request, str(exc), 500) from exc
    if response.status >= 400:
        try:
            text = (await response.read()).decode("utf-8", "replace")
        finally:
            response.release()
        headers = {name.lower(): value for name, value in response.headers.items()}
        raise provider_error(request, text, response.status, headers)
    return response


async def read_batches(
    request: WireRequest, response: aiohttp.ClientResponse
) -> AsyncIterator[list[Chunk]]:
    """The stream's chunks, decoded as they arrive: all those of one read of the socket
    together (a generator step per chunk cost more than decoding it), until `[DONE]` or
    the end of the body.

    A line that is not valid JSON is skipped (as litellm's own reader does); an error
    object inside the stream raises litellm's exception for its code.
    """
    reads = _data_lines(response)
    try:
        async for payloads in reads:
            batch, end = _decode_batch(request, payloads)
            if batch:
                yield batch
            if isinstance(end, Exception):  # after the chunks that came before it
                raise end
            if end is _DONE:
                await _finish_body(reads)
                return
    except TimeoutError as exc:  # a read waited `timeout`: the stream stalled
        raise TimeoutError(str(exc) or "the model's stream stalled") from exc
    finally:
        response.release()  # read to its end: back to the pool; else closed


_DONE = object()


def _decode_batch(request: WireRequest, payloads: list[bytes]) -> tuple[list[Chunk], Any]:
    """The chunks of one read's `data:` payloads, and what ended them: `_DONE` (the
    `[DONE]` line), the exception for an error object, or None (the stream goes on)."""
    batch: list[Chunk] = []
    for payload in payloads:
        if payload == b"[DONE]":
            return batch, _DONE
        try:
            chunk = _decode_chunk(payload)
        except msgspec.DecodeError:
            logger.debug("skipped a malformed stream chunk: %.200r", payload)
            continue
        if chunk.error is not None:
            return batch, _chunk_error(request, chunk.error)
        batch.append(chunk)
    return batch, None


async def _finish_body(reads: AsyncIterator[list[bytes]]) -> None:
    """Read what follows `[DONE]` (nothing, from a well-behaved server): a response read
    to its end gives its connection back to the pool, one closed early is torn down and
    the next call connects again. A server that keeps the stream open gets a moment."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in reads:
                pass


async def _data_lines(response: aiohttp.ClientResponse) -> AsyncIterator[list[bytes]]:
    """Per read of the body, the payloads of its complete SSE `data:` lines; blank
    separators, `event:` lines and `: keep-alive` comments are passed over."""
    pending = b""
    async for data in response.content.iter_any():
        lines = (pending + data).split(b"\n")
        pending = lines.pop()
        payloads = [line[5:].strip() for line in lines if line.startswith(b"data:")]
        if payloads:
            yield payloads
    if pending.startswith(b"data:"):  # a last line without its newline
        yield [pending[5:].strip()]


def _chunk_error(request: WireRequest, error: Any) -> Exception:
    if not isinstance(error, dict):
        return provider_error(request, str(error), 500)
    code, message = error.get("code"), error.get("message")
    status = code if isinstance(code, int) and 400 <= code < 600 else 500
    return provider_error(request, message if isinstance(message, str) else str(error), status)
