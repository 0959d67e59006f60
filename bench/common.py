"""What every benchmark seeds: a user with a bearer token and one agent."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent, ApiToken, User
from app.lib.security import token_digest
from app.lib.time import utcnow


async def add_user_with_agent(
    session: AsyncSession, *, email: str, password_hash: str, token: str, agent_type: str
) -> tuple[User, Agent]:
    """Flush a user, a day-long token for it and an agent named `bench`."""
    user = User(email=email, password_hash=password_hash)
    session.add(user)
    await session.flush()
    session.add(
        ApiToken(
            user_id=user.id, token_hash=token_digest(token), expires_at=utcnow() + timedelta(days=1)
        )
    )
    agent = Agent(owner_id=user.id, name="bench", agent_type=agent_type)
    session.add(agent)
    await session.flush()
    return user, agent
