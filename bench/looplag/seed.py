"""The heavy data: one thread of 5,000 messages (most of them tool cells) and 10,000
memories that one search matches in full, for the user of `bench.turn.setup`."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from app.db.models import Agent, Memory, Thread
from app.lib.time import utcnow
from app.threads.writer import create_messages
from bench.rest.seed import finished_cell

BATCH = 500
WORDS = ("milk", "bread", "garden", "invoice", "flight", "dentist", "birthday", "report")
QUERY = "plans for the week"  # every memory holds "plans" and "week": all match


def _batches(count: int) -> list[range]:
    return [range(start, min(count, start + BATCH)) for start in range(0, count, BATCH)]


def _message(i: int) -> dict:
    kind = i % 5
    if kind == 0:
        return {"role": "user", "content": f"Please look at item {i} and tell me more."}
    if kind == 4:
        return {"role": "assistant", "content": "Done. " * 30}
    return {"role": "tool", "tool_activity": finished_cell(i), "tool_call_id": f"call_{i:04d}"}


def _memory(owner_id: UUID, i: int) -> Memory:
    word = WORDS[i % len(WORDS)]
    content = f"Note {i}: plans for the week around {word}, and what to do about {word} next."
    return Memory(owner_id=owner_id, key=f"note-{i}", content=content, tags=[word])


async def seed_heavy(database_url: str, agent_id: str, messages: int, memories: int) -> str:
    """Add the thread and the memories; returns the thread's id."""
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with AsyncSession(engine, expire_on_commit=False) as session:
            agent = await session.scalar(select(Agent).where(Agent.id == UUID(agent_id)))
            assert agent is not None
            thread = Thread(
                owner_id=agent.owner_id, agent_id=agent.id, title="long", last_activity_at=utcnow()
            )
            session.add(thread)
            await session.flush()
            for batch in _batches(messages):
                await create_messages(session, thread.id, [_message(i) for i in batch])
                await session.commit()
            for batch in _batches(memories):
                session.add_all([_memory(agent.owner_id, i) for i in batch])
                await session.commit()
            return str(thread.id)
    finally:
        await engine.dispose()
