"""Agents: a user's own, plus those staff shared with everyone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from app.agents import repository
from app.agents.delegates import is_delegate_name, owned_specialists
from app.agents.schemas import AgentUpdate
from app.db.models import Agent, User
from app.lib.lookup import one_or_404
from app.lib.problems import ProblemException
from app.tools.runtime.toolsets import (
    agent_type_names,
    is_enableable_tool_name,
    is_known_agent_type,
    known_tool_names,
)

# Why a model name cannot be routed (None: it can). The model door knows, and sits above
# this layer: the orchestrator plugin installs its check (app/orchestrator/door/routes.py).
_model_check: Callable[[str], str | None] | None = None


def set_model_check(check: Callable[[str], str | None] | None) -> None:
    global _model_check
    _model_check = check


def check_model(model: str | None) -> None:
    """400 naming a model no provider profile can route (None: the LLM_MODEL default)."""
    why = _model_check(model) if model and _model_check is not None else None
    if why is not None:
        raise ProblemException(
            400,
            f"Unknown model {model!r}: {why}.",
            errors=[{"field": "model", "message": why, "source": "body"}],
        )


async def list_agents(session: AsyncSession, user: User) -> list[Agent]:
    return list(await session.scalars(repository.visible_agents(user)))


async def specialists_of(session: AsyncSession, user: User) -> list[Agent]:
    """The user's specialist agents: what their delegating agents may ask (ask_* tools)."""
    return list(await session.scalars(owned_specialists(user.id)))


async def get_visible_agent(session: AsyncSession, user: User, agent_id: UUID) -> Agent:
    params = {"user_id": user.id, "agent_id": agent_id}
    return await one_or_404(session, repository.VISIBLE_AGENT, "Agent", params)


async def find_agent(session: AsyncSession, agent_id: UUID) -> Agent | None:
    """The agent by id whoever owns it (a tool acting as the agent checks ownership itself)."""
    return await session.get(Agent, agent_id)


async def get_owned_agent(session: AsyncSession, user: User, agent_id: UUID) -> Agent:
    return await one_or_404(session, repository.owned_agent(user.id, agent_id), "Agent")


def check_agent_type(agent_type: str) -> None:
    if not is_known_agent_type(agent_type):
        raise ProblemException(
            400,
            f"Unknown agent_type {agent_type!r}: one of {', '.join(agent_type_names())}.",
            errors=[
                {
                    "field": "agent_type",
                    "message": f"must be one of {agent_type_names()}",
                    "source": "body",
                }
            ],
        )


def check_enabled_tools(enabled_tools: list[str] | None) -> None:
    """Every name must be a registered tool, a legacy name of one (what
    `litestar tools consolidate --reverse` writes) or a specialist's `ask_<name>`: a typo
    would silently disable a tool."""
    check_tool_names(enabled_tools or [], "enabled_tools", specialists=True)


def check_tool_names(names: list[str], field: str, *, specialists: bool = False) -> None:
    """400 naming each unknown tool of `names` (the body's `field`); with `specialists`,
    `ask_<name>` names pass too (whose specialist exists is the run's to judge)."""
    known = known_tool_names()

    def fine(name: str) -> bool:
        return is_enableable_tool_name(name) or (specialists and is_delegate_name(name))

    unknown = [(index, name) for index, name in enumerate(names) if not fine(name)]
    if unknown:
        raise ProblemException(
            400,
            f"Unknown tool(s) in {field}: {', '.join(name for _, name in unknown)}.",
            errors=[
                {
                    "field": f"{field}[{index}]",
                    "message": f"unknown tool {name!r}; must be one of {known}",
                    "source": "body",
                }
                for index, name in unknown
            ],
        )


async def name_taken(
    session: AsyncSession, owner_id: UUID, name: str, exclude_id: UUID | None = None
) -> bool:
    return (await session.scalar(repository.agent_named(owner_id, name, exclude_id))) is not None


def _name_conflict(name: str) -> ProblemException:
    return ProblemException(
        409,
        f"You already have an agent named {name!r}: the name has already been taken.",
        errors=[{"field": "name", "message": "has already been taken", "source": "body"}],
    )


def check_changes(changes: dict[str, Any]) -> None:
    """The rules of PATCH /api/agents/{id} (AgentUpdate), for every caller: the API has
    checked them while decoding, a tool or the CLI has not."""
    try:
        msgspec.convert(changes, AgentUpdate)
    except msgspec.ValidationError as exc:
        message, _, at = str(exc).partition(" - at `$.")
        field = at.rstrip("`").split(".")[0] or None
        raise ProblemException(
            400,
            f"Invalid {field or 'change'}: {message}.",
            errors=[{"field": field, "message": message, "source": "body"}],
        ) from None


async def create_agent(session: AsyncSession, owner: User, **fields: Any) -> Agent:
    if fields.get("is_shared") and not owner.is_staff:
        # A shared agent is offered to every user: only staff publish one.
        raise ProblemException(403, "Only a staff user's agent can be shared with every user.")
    check_agent_type(fields.get("agent_type", "assistant"))
    check_enabled_tools(fields.get("enabled_tools"))
    check_model(fields.get("model"))
    if await name_taken(session, owner.id, fields["name"]):
        raise _name_conflict(fields["name"])
    agent = Agent(owner_id=owner.id, **fields)
    session.add(agent)
    await session.flush()
    return agent


async def update_agent(session: AsyncSession, agent: Agent, changes: dict[str, Any]) -> Agent:
    """Change only the given fields; refuses (ProblemException) before changing anything."""
    check_changes(changes)
    if "enabled_tools" in changes:
        check_enabled_tools(changes["enabled_tools"])
    if "model" in changes:
        check_model(changes["model"])
    name = changes.get("name")
    if name is not None and await name_taken(session, agent.owner_id, name, exclude_id=agent.id):
        raise _name_conflict(name)
    for field, value in changes.items():
        setattr(agent, field, value)
    await session.flush()
    return agent
