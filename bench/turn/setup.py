"""A user with a token and a `bench` agent, written through the app's own engine."""

from __future__ import annotations

from datetime import timedelta

from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent, ApiToken, User
from app.lib.security import token_digest
from app.lib.time import utcnow

TOKEN = "tc_bench_turn_token_not_secret"


async def make_user(app: Litestar) -> tuple[dict[str, str], str]:
    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    async with AsyncSession(engine, expire_on_commit=False) as session:
        user = User(email="bench-turn@example.com", password_hash="x")
        session.add(user)
        await session.flush()
        session.add(
            ApiToken(
                user_id=user.id,
                token_hash=token_digest(TOKEN),
                expires_at=utcnow() + timedelta(days=1),
            )
        )
        agent = Agent(owner_id=user.id, name="bench", agent_type="bench")
        session.add(agent)
        await session.commit()
    return {"Authorization": f"Bearer {TOKEN}"}, str(agent.id)
