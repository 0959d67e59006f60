"""A user with a token and a `bench` agent, written through the app's own engine."""

from __future__ import annotations

from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy.ext.asyncio import AsyncSession

from bench.common import add_user_with_agent

TOKEN = "tc_bench_turn_token_not_secret"


async def make_user(app: Litestar) -> tuple[dict[str, str], str]:
    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    async with AsyncSession(engine, expire_on_commit=False) as session:
        _, agent = await add_user_with_agent(
            session,
            email="bench-turn@example.com",
            password_hash="x",
            token=TOKEN,
            agent_type="bench",
        )
        await session.commit()
    return {"Authorization": f"Bearer {TOKEN}"}, str(agent.id)
