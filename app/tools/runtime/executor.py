"""Validate and run one tool call. Never raises (except the caller's own cancellation).

Order: known and allowed tool -> arguments (JSON, action, parameters) -> identical call
already made in this run? (answer from it, duplicate=True, no second side effect) ->
run under the tool's timeout -> typed result. Lifecycle events go through `events`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Collection, Mapping
from typing import Any

import msgspec

from app.observability import calls, metrics
from app.tools.base import Tool, ToolContext, ToolData, ToolResult
from app.tools.bounds import DEFAULT_MAX_BYTES, bounded_off_loop
from app.tools.events import LoggingToolEvents, ToolCall, ToolEvents
from app.tools.preview import clamp, generic_preview
from app.tools.runtime.registry import ToolRegistry
from app.tools.validation import (
    ParsedCall,
    decode_arguments,
    unknown_tool,
    validate_call,
    without_nul,
)

logger = logging.getLogger("app.tools")
SAFE_SYSTEM_ERROR = "The tool failed unexpectedly. The error was logged."


class ToolCallCache:
    """Per run: identical (tool, canonical arguments) calls share the first result.

    Concurrent identical calls (one model turn) wait for the first instead of running twice.
    A successful side-effecting action drops the tool's cached read-only results, so a
    `list` after a `create` sees the new row.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, bytes], asyncio.Future[ToolResult]] = {}
        self._first_call: dict[tuple[str, bytes], str] = {}  # the call that ran it
        self._read_only: dict[tuple[str, bytes], str] = {}

    @staticmethod
    def key(name: str, action: str, params: msgspec.Struct) -> tuple[str, bytes]:
        args = {"action": action, **msgspec.to_builtins(params)}
        return name, msgspec.json.encode(args, order="sorted")

    def holds(self, key: tuple[str, bytes]) -> bool:
        """An identical call was made (or is running) and its result is kept for repeats."""
        return key in self._entries

    def claim(self, key: tuple[str, bytes], call_id: str = "") -> asyncio.Future[ToolResult] | None:
        """The earlier call's future, or None after reserving the key for the call `call_id`."""
        existing = self._entries.get(key)
        if existing is not None:
            return existing
        self._entries[key] = asyncio.get_running_loop().create_future()
        self._first_call[key] = call_id
        return None

    def first_call(self, key: tuple[str, bytes]) -> str:
        """The id of the call whose result answers repeats of `key`."""
        return self._first_call.get(key, "")

    def settle(self, key: tuple[str, bytes], tool: Tool, action: str, result: ToolResult) -> None:
        future = self._entries[key]
        if not future.done():
            future.set_result(result)
        retryable = not result.ok and result.error_type in ("system_error", "timeout", "cancelled")
        if retryable:
            del self._entries[key]
        elif action in tool.read_only_actions:
            self._read_only[key] = tool.name
        elif result.ok:
            self._forget_reads(tool.name)

    def abandon(self, key: tuple[str, bytes]) -> None:
        future = self._entries.pop(key, None)
        if future is not None and not future.done():
            future.cancel()

    def _forget_reads(self, tool_name: str) -> None:
        for key, name in list(self._read_only.items()):
            if name == tool_name:
                self._read_only.pop(key)
                self._entries.pop(key, None)


def parse_call(
    registry: ToolRegistry,
    name: str,
    arguments: str | bytes | dict[str, Any] | None,
    *,
    allowed: Collection[str] | None = None,
    actions: Mapping[str, frozenset[str]] | None = None,
) -> ParsedCall | ToolResult:
    """Validation only (the orchestrator uses it to decide on confirmation before running).
    `actions`: per tool the agent may use for some actions only, those actions."""
    tool = registry.get(name)
    available = [n for n in registry.all_names() if allowed is None or n in allowed]
    if tool is None or name not in available:
        return unknown_tool(name, available)
    return validate_call(tool, arguments, (actions or {}).get(name))


def bare_call_arguments(registry: ToolRegistry, name: str) -> dict[str, Any] | ToolResult:
    """The arguments of a call given by the tool's name alone (a request's
    `tool_calls: ["tasks"]`): its no-argument action (`Tool.no_argument_action`), or a
    self-correcting error listing every action with what it needs. An unknown name gets
    no arguments: validating the call then answers with the available tools."""
    tool = registry.get(name)
    if tool is None:
        return {}
    action = tool.no_argument_action()
    if action is not None:
        return {"action": action}
    needs = {action: tool.required_params(action) for action in tool.actions}
    listing = ", ".join(
        f"{action} ({', '.join(params) or 'no parameters'})" for action, params in needs.items()
    )
    first = next(iter(tool.actions))
    return ToolResult.failure(
        f"{name} cannot be called by its name alone: it has no action that runs without "
        f"arguments. Its actions and their required parameters: {listing}.",
        "validation_error",
        suggestion=(
            f'Give the call with its arguments, e.g. {{"name": "{name}", "args": '
            f"{msgspec.json.encode(tool.example_call(first)).decode()}}}."
        ),
        allowed_actions=list(tool.actions),
        required_params=needs,
        example=tool.example_call(first),
    )


def parsed_input(action: str, params: msgspec.Struct) -> dict[str, Any]:
    """The call as the app shows it (`tool_activity.input`): the action and the parameters
    given, without the nulls of parameters left out."""
    given = {k: v for k, v in msgspec.to_builtins(params).items() if v is not None}
    return {"action": action, **given}


def _raw_input(arguments: str | bytes | dict[str, Any] | None) -> dict[str, Any]:
    decoded = decode_arguments(arguments)
    return decoded if isinstance(decoded, dict) else {}


async def _run_tool(
    ctx: ToolContext, tool: Tool, action: str, params: msgspec.Struct
) -> ToolResult:
    try:
        async with (
            asyncio.timeout(tool.timeout_seconds) as limit,
            calls.tool_call(tool.name, action),
        ):
            result = await tool.run(_timeout_paused_while_asking(ctx, limit), action, params)
    except TimeoutError:
        return ToolResult.failure(
            f"{tool.name}.{action} did not finish within {tool.timeout_seconds:g} seconds.",
            "timeout",
            suggestion="Try again later or with a smaller request.",
        )
    except asyncio.CancelledError:
        raise
    except Exception:
        # The log keeps the traceback; the model and the phone get a safe message only.
        logger.exception("tool %s.%s raised", tool.name, action)
        return ToolResult.failure(SAFE_SYSTEM_ERROR, "system_error")
    if not isinstance(result, ToolResult):
        logger.error("tool %s.%s returned %r", tool.name, action, type(result))
        return ToolResult.failure(SAFE_SYSTEM_ERROR, "system_error")
    limit = ctx.settings.tool_result_max_bytes if ctx.settings else DEFAULT_MAX_BYTES
    return await bounded_off_loop(result, limit)


def _timeout_paused_while_asking(ctx: ToolContext, limit: asyncio.Timeout) -> ToolContext:
    """The tool's limit measures the tool, not the user: it stops while `ctx.ask` waits
    for an answer and resumes with what was left."""
    asked = ctx.ask

    async def ask(request: dict[str, Any]) -> dict[str, Any] | None:
        loop = asyncio.get_running_loop()
        deadline = limit.when()
        left = None if deadline is None else max(0.0, deadline - loop.time())
        limit.reschedule(None)
        try:
            return await asked(request)
        finally:
            limit.reschedule(None if left is None else loop.time() + left)

    return dataclasses.replace(ctx, ask=ask)


def storable(result: ToolResult) -> ToolResult:
    """What a tool returns, with NUL characters replaced: a page or a search hit may hold
    them, and PostgreSQL refuses them in text and jsonb (the cell would never be written)."""
    return msgspec.structs.replace(
        result,
        data=without_nul(result.data),
        display_message=without_nul(result.display_message),
        error=without_nul(result.error),
        suggestion=without_nul(result.suggestion),
        details=without_nul(result.details),
    )


def _with_events(ctx: ToolContext, call: ToolCall, events: ToolEvents) -> ToolContext:
    """The tool's `ctx.progress` and `ctx.output` as lifecycle events (then passed on to
    whatever the caller put in the context)."""
    streamed = 0

    async def progress(
        display_message: str | None = None, data: ToolData | dict[str, Any] | None = None
    ) -> None:
        if isinstance(data, ToolData):  # ToolProgress (app/tools/results.py)
            data = msgspec.to_builtins(data)
        display_message, data = without_nul(display_message), without_nul(data)
        await events.on_progress(call, display_message, data)
        await ctx.progress(display_message=display_message, data=data)

    async def output(chunk: str) -> None:
        nonlocal streamed
        if not chunk:
            return
        chunk, offset = without_nul(str(chunk)), streamed
        streamed += len(chunk)
        await events.on_output(call, offset, chunk)
        await ctx.output(chunk)

    return dataclasses.replace(ctx, progress=progress, output=output)


def with_preview(result: ToolResult, tool: Tool | None = None, action: str = "") -> ToolResult:
    """The result with its preview lines: the tool's own, or derived from the result."""
    if result.preview:
        return msgspec.structs.replace(result, preview=clamp(result.preview))
    own = tool.result_preview(action, result) if tool is not None and result.ok else None
    preview = clamp(own) if own else generic_preview(result)
    first_call = (result.data or {}).get("duplicate_of") if result.ok else None
    said = f"Duplicate of {first_call}"
    if first_call and not (preview and preview[0].startswith(said)):
        # a repeat says so on its first line: its lines are not the first call's again
        preview = clamp([said, *(preview or [])])
    return msgspec.structs.replace(result, preview=preview)


async def _finish(
    events: ToolEvents, call: ToolCall, result: ToolResult, tool: Tool | None = None
) -> ToolResult:
    result = with_preview(storable(result), tool, call.action or "")
    metrics.tool_call(call.name, "success" if result.ok else str(result.error_type))
    if result.ok:
        await events.on_end(call, result)
    else:
        await events.on_error(call, result)
    return result


async def execute_tool_call(
    registry: ToolRegistry,
    ctx: ToolContext,
    name: str,
    arguments: str | bytes | dict[str, Any] | None,
    *,
    allowed: Collection[str],
    cache: ToolCallCache | None = None,
    events: ToolEvents | None = None,
    parsed: ParsedCall | ToolResult | None = None,
) -> ToolResult:
    """`parsed`: what `parse_call` gave for this very call, when the caller already has it
    (the orchestrator validates each call when planning it): not parsed a second time."""
    events = events or LoggingToolEvents()
    if parsed is None:
        parsed = parse_call(registry, name, arguments, allowed=allowed)
    if isinstance(parsed, ToolResult):
        raw = _raw_input(arguments)
        call = ToolCall(ctx.tool_call_id, name, raw.get("action"), raw, ctx.run_id, ctx.thread_id)
        await events.on_start(call)
        return await _finish(events, call, parsed)
    tool, action, params = parsed
    call_input = parsed_input(action, params)
    call = ToolCall(ctx.tool_call_id, name, action, call_input, ctx.run_id, ctx.thread_id)
    await events.on_start(call)
    if cache is None:
        result = await _run_tool(_with_events(ctx, call, events), tool, action, params)
        return await _finish(events, call, result, tool)
    key = ToolCallCache.key(name, action, params)
    while (earlier := cache.claim(key, ctx.tool_call_id)) is not None:
        try:
            first = await asyncio.shield(earlier)
        except asyncio.CancelledError:
            if not earlier.cancelled():
                raise  # this call itself is being cancelled
            continue  # the first call was abandoned: try to claim the key again
        return await _finish(events, call, first.as_duplicate(cache.first_call(key)), tool)
    try:
        result = await _run_tool(_with_events(ctx, call, events), tool, action, params)
    except BaseException:
        cache.abandon(key)
        raise
    cache.settle(key, tool, action, result)
    return await _finish(events, call, result, tool)
