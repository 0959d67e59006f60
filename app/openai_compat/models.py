"""The caller's agents as OpenAI models.

A model's `id` is the agent's id: stable for the agent's life (an agent may rename itself
through `self_authoring`, so a name-based id would change under a client). Clients that
let the user type a model may send the agent's `name` instead (case-insensitive; the
caller's own agent wins over a shared one of the same name).
"""

from __future__ import annotations

from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.agents.services import list_agents
from app.db.models import Agent, User
from app.lib.problems import ProblemException
from app.openai_compat.schemas import AgentModel


def agent_model(agent: Agent, user: User) -> AgentModel:
    return AgentModel(
        id=str(agent.id),
        created=int(agent.created_at.timestamp()),
        owned_by="you" if agent.owner_id == user.id else "shared",
        name=agent.name,
        agent_type=agent.agent_type,
    )


def _as_uuid(value: str) -> UUID | None:
    try:
        return UUID(value)
    except ValueError:
        return None


async def resolve_model(
    session: AsyncSession, user: User, model: str, field: str = "model"
) -> Agent:
    """The visible agent `model` names (id or name); 404 `{field}_not_found` otherwise."""
    agents = await list_agents(session, user)
    wanted = _as_uuid(model)
    if wanted is not None:
        matches = [a for a in agents if a.id == wanted]
    else:
        named = [a for a in agents if a.name.casefold() == model.strip().casefold()]
        matches = sorted(named, key=lambda a: a.owner_id != user.id)[:1]
    if not matches:
        raise ProblemException(
            404,
            f"The {field} {model!r} does not exist: use an agent's id from GET /v1/models.",
            code=f"{field}_not_found",
        )
    return matches[0]
