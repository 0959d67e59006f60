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
import re
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any

from app.db.models import Agent
from app.orchestrator.context import LoopSpec
from app.orchestrator.history import DEFAULT_SYSTEM_PROMPT
from app.orchestrator.llm import LLMError
from app.settings import Settings
from app.tools.base import ToolResult
from app.tools.results import DelegationResult
from app.tools.toolsets import AgentTypeConfig, effective_tools, get_agent_type

FALLBACK_TYPE = AgentTypeConfig(name="default", tools=[])
PREFIX = "ask_"
Outcome = tuple[str | None, str | None]  # (final text, note when the loop was stopped)


def delegate_tool_name(agent_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", agent_name.lower()).strip("_") or "agent"
    return f"{PREFIX}{slug}"[:64]


def is_delegate_name(name: str) -> bool:
    return name.startswith(PREFIX)


def delegates_for(
    specialists: Iterable[Agent], *, exclude: Iterable[Any] = (), narrow: Any = None
) -> tuple[dict[str, Agent], frozenset[str]]:
    """(enabled specialists by tool name, names of the disabled ones), without `exclude`
    (the agents already in the chain) and, when given, only names in `narrow`."""
    excluded = set(exclude)
    offered: dict[str, Agent] = {}
    disabled: set[str] = set()
    for agent in specialists:
        name = delegate_tool_name(agent.name)
        if agent.id in excluded or (narrow is not None and name not in narrow):
            continue
        if agent.enabled:
            offered.setdefault(name, agent)
        else:
            disabled.add(name)
    return offered, frozenset(disabled - set(offered))


def _describe(agent: Agent) -> str:
    """The specialist's tool_description, else its description, else its system prompt."""
    own = (agent.tool_description or agent.description or "").strip()
    if own:
        return own
    about = (agent.system_prompt or "").strip().replace("\n", " ")[:300]
    description = f"Ask the specialist agent {agent.name!r} and get its answer."
    return f"{description} It is set up as: {about}" if about else description


def delegate_definition(name: str, agent: Agent) -> dict[str, Any]:
    description = _describe(agent)
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "What to ask, self-contained."}
                },
                "required": ["message"],
                "additionalProperties": False,
            },
        },
    }


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


def question_of(call_input: dict[str, Any] | None) -> str | ToolResult:
    """What an ask_* call asks, or the self-correcting error of a call that asks nothing."""
    question = (call_input or {}).get("message")
    if not isinstance(question, str) or not question.strip():
        return ToolResult.failure(
            "Missing required parameter 'message'.",
            "validation_error",
            suggestion='Call it as {"message": "your question"}.',
            required_param="message",
        )
    return question


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
        delegates, disabled = delegates_for(specialists, exclude=chain)
    spec = LoopSpec(
        agent=specialist,
        config=config,
        allowed=effective_tools(specialist.agent_type, specialist.enabled_tools),
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


async def answer(assignment: Assignment, outcome: Awaitable[Outcome]) -> ToolResult:
    """The delegating call's result: the specialist's answer, or why there is none."""
    name, timeout = assignment.specialist.name, assignment.timeout
    try:
        async with asyncio.timeout(timeout):
            text, note = await outcome
    except TimeoutError:
        return ToolResult.failure(f"{name} did not answer within {timeout:g} seconds.", "timeout")
    except LLMError as exc:
        return ToolResult.failure(f"{name} could not answer: {exc.message}", "system_error")
    return ToolResult.success(
        DelegationResult(answer=text or note or "", agent_name=name),
        display_message=f"{name} answered",
    )
