"""Agent queries: statement builders that services compose and execute."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Select, bindparam, or_, select

from app.db.models import Agent, User

MAX_AGENTS_LISTED = 200


def visible_to(user_id: Any) -> Any:
    """The user's own agents and the ones staff shared with everyone."""
    return or_(Agent.owner_id == user_id, Agent.is_shared.is_(True))


def visible_agents(user: User) -> Select[tuple[Agent]]:
    return (
        select(Agent)
        .where(visible_to(user.id))
        .order_by(Agent.name, Agent.id)
        .limit(MAX_AGENTS_LISTED)
    )


def visible_agent(user_id: Any, agent_id: Any) -> Select[tuple[Agent]]:
    return select(Agent).where(Agent.id == agent_id, visible_to(user_id))


# Built once (composing a statement costs more CPU than running it).
VISIBLE_AGENT = visible_agent(bindparam("user_id"), bindparam("agent_id"))


def owned_agent(owner_id: UUID, agent_id: UUID) -> Select[tuple[Agent]]:
    return select(Agent).where(Agent.id == agent_id, Agent.owner_id == owner_id)


def agent_named(owner_id: UUID, name: str, exclude_id: UUID | None = None) -> Select[tuple[UUID]]:
    """The id of the owner's agent with this name (names are unique per owner)."""
    query = select(Agent.id).where(Agent.owner_id == owner_id, Agent.name == name)
    return query if exclude_id is None else query.where(Agent.id != exclude_id)
