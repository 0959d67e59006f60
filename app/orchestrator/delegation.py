"""Delegation: a specialist agent offered to the run's agent as a tool.

When the agent type has `delegation`, each of the owner's `specialist` agents becomes a
tool `ask_<slug>` taking {message}. The specialist runs the same loop with its own
toolset and timeout; its tool activities land in the same thread marked with
`input.delegated_by`, and its answer is the tool result.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from app.db.models import Agent
from app.orchestrator.context import LoopSpec
from app.orchestrator.history import DEFAULT_SYSTEM_PROMPT
from app.orchestrator.llm import LLMError
from app.orchestrator.tool_calls import PlannedCall
from app.settings import Settings
from app.tools.base import ToolResult
from app.tools.toolsets import AgentTypeConfig, effective_tools, get_agent_type

FALLBACK_TYPE = AgentTypeConfig(name="default", tools=[])
Outcome = tuple[str | None, str | None]  # (final text, note when the loop was stopped)


def delegate_tool_name(agent_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", agent_name.lower()).strip("_") or "agent"
    return f"ask_{slug}"[:64]


def delegate_definition(name: str, agent: Agent) -> dict[str, Any]:
    about = (agent.system_prompt or "").strip().replace("\n", " ")[:300]
    description = f"Ask the specialist agent {agent.name!r} and get its answer."
    if about:
        description += f" It is set up as: {about}"
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


@dataclass
class Assignment:
    """A specialist's loop for one delegated call: the runner runs it in its own state."""

    specialist: Agent
    spec: LoopSpec
    history: list[dict[str, Any]]
    timeout: float


def assign(planned: PlannedCall, specialist: Agent, settings: Settings) -> Assignment | ToolResult:
    """The specialist's loop for this call, or the self-correcting error of a bad call."""
    question = (planned.input or {}).get("message")
    if not isinstance(question, str) or not question.strip():
        return ToolResult.failure(
            "Missing required parameter 'message'.",
            "validation_error",
            suggestion='Call it as {"message": "your question"}.',
            required_param="message",
        )
    config = get_agent_type(specialist.agent_type) or FALLBACK_TYPE
    spec = LoopSpec(
        agent=specialist,
        config=config,
        allowed=effective_tools(specialist.agent_type, specialist.enabled_tools),
        delegated_by={
            "call_id": planned.id,
            "agent_id": str(specialist.id),
            "agent_name": specialist.name,
        },
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
        {"answer": text or note or "", "agent_name": name}, display_message=f"{name} answered"
    )
