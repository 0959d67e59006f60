"""Delegation: a specialist agent offered to the run's agent as a tool.

When the agent type has `delegation`, each of the owner's enabled `specialist` agents
becomes a tool `ask_<slug>` taking {message}, described by the specialist's
`tool_description` (or `description`). The specialist runs the same loop with its own
toolset and timeout; its tool activities land in the same thread marked with
`input.delegated_by`, and its answer is the tool result. A specialist whose type has
`delegation` may ask further specialists (never one already asking), up to
DELEGATION_MAX_DEPTH levels. Asking a disabled, unknown or too deep specialist is a
self-correcting error naming the `ask_*` tools that are available.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from app.agents.delegates import ASK_EXAMPLE, ASK_PARAMS, delegates_for
from app.db.models import Agent, ThreadMessage
from app.orchestrator.door.llm import LLMError
from app.orchestrator.loop import deadlines
from app.orchestrator.loop.context import LoopSpec
from app.orchestrator.loop.history import DEFAULT_SYSTEM_PROMPT
from app.settings import Settings
from app.threads import activity as cell
from app.tools.base import ToolResult
from app.tools.results import DelegationResult
from app.tools.runtime.toolsets import (
    AgentTypeConfig,
    action_limits,
    effective_tools,
    get_agent_type,
)
from app.tools.validation import decode_arguments

FALLBACK_TYPE = AgentTypeConfig(name="default", tools=[])
Outcome = tuple[str | None, str | None]  # (final text, note when the loop was stopped)


def refusal(name: str, spec: LoopSpec, max_depth: int) -> ToolResult:
    """Why `name` cannot be asked from this loop, naming the ask_* tools that can."""
    available = sorted(spec.delegates)
    listed = ", ".join(available) or "none"
    details: dict[str, Any] = {"available_tools": available}
    if spec.depth >= max_depth:
        return ToolResult.failure(
            f"{name} is not available: delegation is limited to {max_depth} level(s) and "
            f"{spec.agent.name} is already at that depth.",
            "user_error",
            suggestion="Answer with what you have instead of asking another specialist.",
            **details,
        )
    if name in spec.disabled_delegates:
        return ToolResult.failure(
            f"{name} is currently disabled. Available specialist tools: {listed}.",
            "user_error",
            suggestion="Use one of the available ask_* tools, or answer yourself.",
            **details,
        )
    return ToolResult.failure(
        f"{name} is not available. Available specialist tools: {listed}.",
        "validation_error",
        suggestion="Use one of the available ask_* tools, or answer yourself.",
        **details,
    )


@dataclass
class Assignment:
    """A specialist's loop for one delegated call: the runner runs it in its own state."""

    specialist: Agent
    spec: LoopSpec
    history: list[dict[str, Any]]
    timeout: float


def question_of(name: str, arguments: str | dict[str, Any] | None) -> str | ToolResult:
    """What the ask_* call `name` asks, or the self-correcting error of a call that is not
    `{"message": "…"}`, worded like every other tool's (app/tools/validation.py): invalid
    JSON, a parameter the schema does not have (additionalProperties: false), a message
    that is missing or not text."""
    args = decode_arguments(arguments, example=msgspec.json.encode(ASK_EXAMPLE).decode())
    if isinstance(args, ToolResult):
        args.details = {**(args.details or {}), "example": ASK_EXAMPLE}
        return args
    question = args.get("message")
    if question is None or (isinstance(question, str) and not question.strip()):
        return ToolResult.failure(
            "message is required.",
            "validation_error",
            suggestion="Call again with message.",
            required_param="message",
            missing_params=["message"],
            example=ASK_EXAMPLE,
        )
    errors = [{"field": k, "message": "unknown parameter"} for k in args if k not in ASK_PARAMS]
    try:
        msgspec.convert(question, str, strict=True)
    except msgspec.ValidationError as exc:
        errors.insert(0, {"field": "message", "message": str(exc)})
    if not errors:
        return question
    listing = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return ToolResult.failure(
        f"Invalid parameters for {name}: {listing}.",
        "validation_error",
        suggestion="Fix the listed fields. Parameters: message.",
        errors=errors,
        allowed_params=list(ASK_PARAMS),
        example=ASK_EXAMPLE,
    )


def assign(
    call_id: str,
    question: str,
    specialist: Agent,
    settings: Settings,
    parent: LoopSpec,
    specialists: list[Agent],
) -> Assignment:
    """The specialist's loop answering `question` for the call `call_id` of `parent`."""
    config = get_agent_type(specialist.agent_type) or FALLBACK_TYPE
    depth, chain = parent.depth + 1, (*parent.chain, parent.agent.id, specialist.id)
    delegates, disabled = {}, frozenset[str]()
    if config.delegation and depth < settings.delegation_max_depth:
        delegates, disabled = delegates_for(
            specialists, exclude=chain, enabled_tools=specialist.enabled_tools
        )
    spec = LoopSpec(
        agent=specialist,
        config=config,
        allowed=effective_tools(specialist.agent_type, specialist.enabled_tools),
        actions=action_limits(specialist.agent_type, specialist.enabled_tools),
        delegates=delegates,
        disabled_delegates=disabled,
        delegated_by={
            "call_id": call_id,
            "agent_id": str(specialist.id),
            "agent_name": specialist.name,
        },
        depth=depth,
        chain=chain,
    )
    history = [
        {"role": "system", "content": specialist.system_prompt or DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    timeout = min(config.run_timeout_seconds, settings.delegation_timeout_seconds)
    return Assignment(specialist=specialist, spec=spec, history=history, timeout=timeout)


async def answer(
    assignment: Assignment,
    outcome: Awaitable[Outcome],
    close_cells: Callable[[list[ThreadMessage], str, str], Awaitable[None]],
) -> ToolResult:
    """The delegating call's result: the specialist's answer, or why there is none. Its
    clock stops while a call of the specialist waits for the user; when it ends, however
    it ends, no cell the specialist opened stays open."""
    name, timeout = assignment.specialist.name, assignment.timeout
    scope = deadlines.Scope()
    with deadlines.entered(scope):
        try:
            async with asyncio.timeout(timeout) as limit:
                scope.timeout = limit
                text, note = await outcome
        except TimeoutError:
            result = ToolResult.failure(
                f"{name} did not answer within {timeout:g} seconds.", "timeout"
            )
        except LLMError as exc:
            result = ToolResult.failure(f"{name} could not answer: {exc.message}", "system_error")
        else:
            result = ToolResult.success(
                DelegationResult(answer=text or note or "", agent_name=name),
                display_message=f"{name} answered",
            )
    if left_open := scope.unended():
        error_type = result.error_type if not result.ok else "system_error"
        await close_cells(left_open, error_type or "system_error", cell.DELEGATION_ENDED)
    return result
