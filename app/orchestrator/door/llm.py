"""The one door to the model: every model call of the app passes `stream_turn`.

`stream_turn` streams one model turn through the client its target names (the registry
`CLIENTS`: our OpenAI-compatible client, litellm's public `acompletion`, the offline
demo; see app/orchestrator/door/): text deltas go to a callback as they arrive, tool
calls whose arguments arrive in pieces are reassembled, usage is read off the stream and
priced, provider errors become an `LLMError` saying what the provider said, and
transient failures (rate limits honouring retry-after, overload, 5xx, connection errors,
timeouts) are retried with backoff, but only before anything was streamed (a retry
would repeat text the user already saw).

Tool calls are told as they are written too, when the caller asks (`on_calls`): after
each batch that carried tool-call deltas, the calls so far (`StreamedCall`: index, id,
name, arguments text), whichever client streamed them (ours and litellm's stream the
arguments in pieces; the demo gives whole calls). A turn without tool calls pays nothing
for it.

Usage is summed into the run's `UsageTally` (a context variable the runner sets, so the
planner's and delegated specialists' calls count too, without passing it around).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from app.observability import calls, metrics
from app.orchestrator.door import images, model_info
from app.orchestrator.door.demo_client import DemoClient
from app.orchestrator.door.errors import LLMError
from app.orchestrator.door.litellm_client import LiteLLMClient
from app.orchestrator.door.openai_client import OpenAIClient
from app.orchestrator.door.profiles import DEMO_PREFIX, ProviderProfile, resolve
from app.orchestrator.door.types import (
    ModelCall,
    ModelClient,
    ModelTarget,
    StreamedCall,
    Usage,
    usage_of,
)

__all__ = [
    "LLMError",
    "ModelTarget",
    "ModelTurn",
    "StreamedCall",
    "Usage",
    "stream_turn",
    "target_for",
]

logger = logging.getLogger(__name__)
TextCallback = Callable[[str], Awaitable[None]]
# The turn's tool calls so far, after each batch that carried tool-call deltas.
CallsCallback = Callable[[list[StreamedCall]], Awaitable[None]]

# The provider seam: a client per wire format (openai-agents' MultiProvider, as a dict).
CLIENTS: dict[str, ModelClient] = {
    "openai": OpenAIClient(),
    "litellm": LiteLLMClient(),
    "demo": DemoClient(),
}


@dataclass
class ModelTurn:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # OpenAI format
    finish_reason: str | None = None
    usage: Usage | None = None


# The run's usage so far: set by the runner for the run's task (and inherited by the
# tasks it starts); None outside a run (then nothing is summed).
run_usage: contextvars.ContextVar[Usage | None] = contextvars.ContextVar("run_usage", default=None)


def target_for(base: ModelTarget, profiles: dict[str, ProviderProfile]) -> ModelTarget:
    """`base` resolved to its client, base URL and key (see door/profiles.py)."""
    return resolve(base, profiles)


def is_demo_model(model: str) -> bool:
    return model.startswith(f"{DEMO_PREFIX}/")


class _ToolCallAssembler:
    """Joins tool-call deltas into complete OpenAI-format calls: by `index`, or, from
    servers that leave it out, by `id` (a new id starts a call, a repeated or missing
    one continues the last). A call without an id gets one, the same in `streamed` and
    `calls`."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}
        self._last = -1
        self._made_up: dict[int, str] = {}  # ids given to calls the server sent without
        self.changed = False  # deltas were added since `streamed` was last read
        self.told = False  # `streamed` was read: the caller has seen calls

    def add(self, delta: Any) -> None:
        self.changed = True
        index = getattr(delta, "index", None)
        call_id = getattr(delta, "id", None)
        if index is None:
            last = self._calls.get(self._last)
            new = last is None or (call_id and last["id"] and call_id != last["id"])
            index = self._last + 1 if new else self._last
        self._last = index
        call = self._calls.setdefault(
            index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if call_id:
            call["id"] = call_id
        function = getattr(delta, "function", None)
        if function is not None:
            name = getattr(function, "name", None)
            if name and not call["function"]["name"].endswith(name):  # a repeated name
                call["function"]["name"] += name
            if arguments := getattr(function, "arguments", None):
                call["function"]["arguments"] += arguments

    def _id(self, index: int) -> str:
        given = self._calls[index]["id"]
        if given:
            return str(given)
        made_up = self._made_up.get(index)
        if made_up is None:
            made_up = self._made_up[index] = f"call_{index}_{random.getrandbits(48):x}"
        return made_up

    def streamed(self) -> list[StreamedCall]:
        """The calls so far, in the order of `calls`."""
        self.changed, self.told = False, True
        return [
            StreamedCall(
                index, self._id(index), call["function"]["name"], call["function"]["arguments"]
            )
            for index, call in sorted(self._calls.items())
        ]

    def calls(self) -> list[dict[str, Any]]:
        out = []
        for index in sorted(self._calls):
            call = self._calls[index]
            call["id"] = self._id(index)
            out.append(call)
        return out


async def _stream_once(
    call: ModelCall,
    on_text: TextCallback,
    turn: ModelTurn,
    assembler: _ToolCallAssembler,
    on_calls: CallsCallback | None = None,
) -> None:
    target = call.target
    loop = asyncio.get_running_loop()
    async with calls.model_call(target.model):
        stream = await CLIENTS[target.kind or "litellm"].open(call)
        # The idle deadline is set by every read: a stream stalling after one ends as a
        # timeout. Until the first, the transport's read timeout watches the wire. Moved
        # only once it is due within `timeout` (then to `timeout` + a tenth ahead): a read
        # costs a clock read, not a timer; a stall still ends between `timeout` and
        # 1.1 x `timeout` after the last chunk.
        ahead = target.timeout * 1.1
        try:
            async with asyncio.timeout(None) as deadline:
                due = math.inf
                async for batch in stream:
                    now = loop.time()
                    if due - now < target.timeout:
                        due = now + ahead
                        deadline.reschedule(due)
                    if text := _take(batch, turn, assembler):
                        await on_text(text)
                    if on_calls is not None and assembler.changed:
                        await on_calls(assembler.streamed())
        except TimeoutError as exc:
            raise LLMError("timeout", "The model did not answer in time.") from exc
    turn.tool_calls = assembler.calls()


def _take(batch: list[Any], turn: ModelTurn, assembler: _ToolCallAssembler) -> str:
    """Add a batch of chunks to the turn; the text they carried (told in one piece)."""
    text = ""
    for chunk in batch:
        if (raw := getattr(chunk, "usage", None)) is not None:
            turn.usage = usage_of(raw)  # the last report wins (a total, not a delta)
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta is not None:
            if delta.content:
                text += delta.content
            for call_delta in getattr(delta, "tool_calls", None) or ():
                assembler.add(call_delta)
        if choice.finish_reason:
            turn.finish_reason = choice.finish_reason
    turn.text += text
    return text


def _account(target: ModelTarget, turn: ModelTurn) -> None:
    """Price the call's usage, count it in the metrics and the run's tally."""
    usage = turn.usage or Usage(calls=1)
    usage.calls = 1
    if turn.usage is not None:
        usage.cost = model_info.price(target, usage)
    turn.usage = usage
    metrics.model_usage(target.model, target.agent_type, usage)
    if (tally := run_usage.get()) is not None:
        tally.add(usage)


async def stream_turn(
    target: ModelTarget,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    on_text: TextCallback,
    *,
    response_format: dict[str, Any] | None = None,
    on_calls: CallsCallback | None = None,
) -> ModelTurn:
    """One streamed model turn; raises LLMError (after bounded retries) on failure.

    `response_format` (OpenAI's: json_schema or json_object) asks for structured output.
    `on_calls` hears the tool calls as they are written (after each batch that carried
    tool-call deltas: every call so far); once it heard one, a failure is not retried
    (as once text was streamed: the user saw the call).
    """
    if target.kind is None:
        target = resolve(target, {})
    call = ModelCall(target, await images.resolved(target, messages), tools, response_format)
    attempt = 0
    while True:
        turn, assembler = ModelTurn(), _ToolCallAssembler()
        try:
            await _stream_once(call, on_text, turn, assembler, on_calls)
            _account(target, turn)
            return turn
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = exc if isinstance(exc, LLMError) else _unexpected(exc)
            metrics.model_error(error.kind)
            shown = turn.text or assembler.told
            if not error.transient or shown or attempt >= target.max_retries:
                if attempt:
                    error.message += f" (after {attempt + 1} attempts)"
                raise error from exc
            delay = error.retry_after
            if delay is None:
                delay = target.retry_base * (2**attempt) * (0.8 + 0.4 * random.random())
            attempt += 1
            logger.warning("model call failed (%s), retry %d in %.2fs", error.kind, attempt, delay)
            await asyncio.sleep(min(delay, 60.0))


def _unexpected(exc: Exception) -> LLMError:
    """A failure no client mapped (a bug, a library's surprise): said plainly, not retried."""
    logger.warning("unexpected model call failure", exc_info=exc)
    return LLMError("provider_error", f"The model call failed: {type(exc).__name__}.")


# -- context window -----------------------------------------------------------------
def context_window(model: str, fallback: int) -> int:
    """The model's input window in tokens (litellm's model map), else `fallback`."""
    return model_info.context_window(model, fallback)


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
    C: `str()` of the tool schemas alone cost more than the rest of a model call's setup.
    An image reference weighs what the image will (images.IMAGE_CHARS), not its URL."""
    try:
        encoded = _json(messages)
        images_weight = encoded.count(images.MARK) * images.IMAGE_CHARS
        return len(encoded) + images_weight + len(_json(tools or []))
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
    """The prompt within the window: tool results are cut first (the longest halved, in
    turn), then the oldest turns dropped; system messages and the turn of the user's latest
    message always stay. CPU-bound on a long prompt: `fitted` runs it off the event loop."""
    budget = max(256, window - reserve)
    # Cheap bound first: ~1 token per 3 characters is generous for every tokenizer here.
    if _rough_chars(messages, tools) // 3 < budget:
        return messages
    system = [m for m in messages if m.get("role") == "system"]
    rest = _results_cut(system, [m for m in messages if m.get("role") != "system"], tools, budget)
    groups = _groups(rest)
    latest = max((i for i, g in enumerate(groups) if g[0].get("role") == "user"), default=0)
    while latest > 0:
        kept = system + [m for g in groups for m in g]
        if model_info.count_tokens(model, kept, tools) <= budget:
            return kept
        groups.pop(0)
        latest -= 1
        while latest > 0 and groups[0][0].get("role") != "user":
            groups.pop(0)  # a conversation restarts at a user message
            latest -= 1
    return system + [m for g in groups for m in g]


async def fitted(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    window: int,
) -> list[dict[str, Any]]:
    """`fit_to_context`; past the cheap bound, on a worker thread (counting tokens of a long
    prompt would hold every other user's turn)."""
    if _rough_chars(messages, tools) // 3 < max(256, window - 1024):
        return messages
    return await asyncio.to_thread(fit_to_context, model, messages, tools, window=window)


RESULT_FLOOR_CHARS = 512  # a cut tool result keeps at least its start


def _results_cut(
    system: list[dict[str, Any]],
    rest: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    budget: int,
) -> list[dict[str, Any]]:
    """`rest` with its longest tool results halved, in turn, until the rough size fits
    (or every result is at the floor)."""
    rest = list(rest)
    while _rough_chars(system + rest, tools) // 3 >= budget:
        index, longest = max(
            (
                (i, len(m.get("content") or ""))
                for i, m in enumerate(rest)
                if m.get("role") == "tool"
            ),
            key=lambda pair: pair[1],
            default=(-1, 0),
        )
        if longest <= RESULT_FLOOR_CHARS:
            return rest
        content = rest[index]["content"]
        keep = max(RESULT_FLOOR_CHARS, longest // 2)
        rest[index] = {**rest[index], "content": cut_text(content, keep)}
    return rest


def cut_text(text: str, keep: int) -> str:
    """The first `keep` characters of `text`, saying how much was cut."""
    if len(text) <= keep:
        return text
    return f"{text[:keep]}… [cut: {len(text) - keep} more characters]"
