"""A user, a token and one thread of 50 messages, most of them tool cells."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from app.db.models import Thread
from app.lib.security import hash_password
from app.lib.time import utcnow
from app.threads.writer import create_message
from bench.common import add_user_with_agent

MESSAGES = 50
TOKEN = "tc_bench_token_not_secret"


def finished_cell(i: int) -> dict:
    now = utcnow().isoformat()
    return {
        "id": f"call_{i:04d}",
        "name": "tasks",
        "status": "success",
        "input": {"action": "create", "title": f"Buy milk #{i}", "due": "tomorrow"},
        "data": {"task_id": f"00000000-0000-0000-0000-{i:012d}", "task_title": f"Buy milk #{i}"},
        "display_message": "Creating task…",
        "error": None,
        "error_type": None,
        "started_at": now,
        "finished_at": now,
        "expires_at": None,
    }


async def seed(database_url: str) -> UUID:
    """Seed an empty, migrated database; returns the thread id."""
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with AsyncSession(engine, expire_on_commit=False) as session:
            user, agent = await add_user_with_agent(
                session,
                email="bench@example.com",
                password_hash=hash_password("bench"),
                token=TOKEN,
                agent_type="assistant",
            )
            thread = Thread(
                owner_id=user.id, agent_id=agent.id, title="bench", last_activity_at=utcnow()
            )
            session.add(thread)
            await session.flush()
            for i in range(MESSAGES):
                kind = i % 5
                if kind == 0:
                    await create_message(session, thread.id, role="user", content=f"Please {i}")
                elif kind == 4:
                    await create_message(
                        session, thread.id, role="assistant", content="Done. " * 30
                    )
                else:
                    await create_message(
                        session,
                        thread.id,
                        role="tool",
                        tool_activity=finished_cell(i),
                        tool_call_id=f"call_{i:04d}",
                    )
            await session.commit()
            return thread.id
    finally:
        await engine.dispose()
