"""A specialist agent as a tool: its `ask_<slug>` name, its definition, and which of them
an agent is offered (delegation: app/orchestrator/loop/delegation.py runs the calls).

GET /api/tools and an agent's `tools` list them from here, so the app shows the same
ask_* tools the model is given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent, User
from app.settings import Settings
from app.tools.base import function_definition
from app.tools.runtime.toolsets import agent_types, get_agent_type
from app.tools.specialists import SpecialistTool

PREFIX = "ask_"
SPECIALIST_TYPE = "specialist"
ASK_PARAMS = ("message",)
ASK_EXAMPLE = {"message": "your question, self-contained"}
ASK_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "What to ask, self-contained."}},
    "required": ["message"],
    "additionalProperties": False,
}


def delegate_tool_name(agent_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", agent_name.lower()).strip("_") or "agent"
    return f"{PREFIX}{slug}"[:64]


def is_delegate_name(name: str) -> bool:
    return name.startswith(PREFIX)


def describe(agent: Agent) -> str:
    """The specialist's tool_description, else its description, else its system prompt."""
    own = (agent.tool_description or agent.description or "").strip()
    if own:
        return own
    about = (agent.system_prompt or "").strip().replace("\n", " ")[:300]
    description = f"Ask the specialist agent {agent.name!r} and get its answer."
    return f"{description} It is set up as: {about}" if about else description


def delegate_definition(name: str, agent: Agent) -> dict[str, Any]:
    return function_definition(name, describe(agent), ASK_PARAMETERS)


def delegates_for(
    specialists: Iterable[Agent],
    *,
    exclude: Iterable[Any] = (),
    narrow: Any = None,
    enabled_tools: list[str] | None = None,
) -> tuple[dict[str, Agent], frozenset[str]]:
    """(enabled specialists by tool name, names of the disabled ones), without `exclude`
    (the agents already in the chain) and, when given, only names in `narrow` (a
    message's allow-list) and in the delegating agent's `enabled_tools` (a list that
    names no `ask_*` tool gives no specialist: a restriction restricts)."""
    excluded = set(exclude)
    offered: dict[str, Agent] = {}
    disabled: set[str] = set()
    for agent in specialists:
        name = delegate_tool_name(agent.name)
        if agent.id in excluded or (narrow is not None and name not in narrow):
            continue
        if enabled_tools is not None and name not in enabled_tools:
            continue
        if agent.enabled:
            offered.setdefault(name, agent)
        else:
            disabled.add(name)
    return offered, frozenset(disabled - set(offered))


def owned_specialists(owner_id: Any) -> Select[tuple[Agent]]:
    """The owner's specialist agents, enabled or not, by name (delegation's targets)."""
    query = select(Agent).where(Agent.owner_id == owner_id, Agent.agent_type == SPECIALIST_TYPE)
    return query.order_by(Agent.name)


def offered_to(agent: Agent, specialists: Iterable[Agent]) -> list[str]:
    """The ask_* tools `agent` is given in a run of the owner of `specialists` (none when
    its type does not delegate; never itself)."""
    config = get_agent_type(agent.agent_type)
    if config is None or not config.delegation:
        return []
    offered, _ = delegates_for(specialists, exclude=[agent.id], enabled_tools=agent.enabled_tools)
    return list(offered)


async def provide_specialist_tools(
    db_session: AsyncSession, current_user: User, settings: Settings
) -> list[SpecialistTool]:
    """The ask_* tools of the user's enabled specialists (GET /api/tools lists them)."""
    specialists = await db_session.scalars(owned_specialists(current_user.id))
    delegating = [name for name, config in agent_types().items() if config.delegation]
    return [
        SpecialistTool(
            name=name,
            description=describe(agent),
            agent_id=agent.id,
            parameters=ASK_PARAMETERS,
            agent_types=delegating,
            timeout_seconds=settings.delegation_timeout_seconds,
        )
        for name, agent in delegates_for(specialists)[0].items()
    ]
