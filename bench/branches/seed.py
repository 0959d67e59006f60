"""Two threads of one user, each showing a branch of `messages` messages: `linear` (no
message has a sibling: a thread as every thread was before branches) and `branched`
(every `fork_every`-th message of the branch shown has an older version beside it, with a
few messages below it: the "‹ 1/2 ›" of an edit or a regenerate)."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from app.db.models import Thread
from app.lib.security import hash_password
from app.lib.time import utcnow
from app.threads.writer import create_message, move_leaf
from bench.common import add_user_with_agent
from bench.rest.seed import finished_cell

TOKEN = "tc_bench_token_not_secret"
SIDE_BRANCH = 3  # messages below each older version


def _fields(i: int) -> dict:
    """The i-th message of a turn-like rhythm: a question, tool cells, an answer."""
    kind = i % 5
    if kind == 0:
        return {"role": "user", "content": f"Please {i}"}
    if kind == 4:
        return {"role": "assistant", "content": "Done. " * 30}
    return {"role": "tool", "tool_activity": finished_cell(i), "tool_call_id": f"call_{i:05d}"}


async def _thread(session: AsyncSession, owner_id: UUID, agent_id: UUID, title: str) -> Thread:
    thread = Thread(owner_id=owner_id, agent_id=agent_id, title=title, last_activity_at=utcnow())
    session.add(thread)
    await session.flush()
    return thread


async def _fill(session: AsyncSession, thread: Thread, messages: int, fork_every: int) -> None:
    """`messages` messages on the branch shown; with `fork_every`, an older version (and a
    side branch below it) beside every `fork_every`-th of them."""
    parent = None
    for i in range(messages):
        if fork_every and i and i % fork_every == 0:
            old = await create_message(session, thread.id, parent_id=parent, **_fields(i))
            await move_leaf(session, thread.id, old.id)
            for j in range(SIDE_BRANCH):
                await create_message(session, thread.id, **_fields(i + j + 1))
            await move_leaf(session, thread.id, parent)
        shown = await create_message(session, thread.id, **_fields(i))
        parent = shown.id
        if i % 500 == 499:
            await session.commit()


async def seed(database_url: str, messages: int, fork_every: int) -> dict[str, UUID]:
    """Seed an empty, migrated database: the thread ids by name."""
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
            threads = {}
            for name, forks in (("linear", 0), ("branched", fork_every)):
                thread = await _thread(session, user.id, agent.id, name)
                await _fill(session, thread, messages, forks)
                threads[name] = thread.id
            await session.commit()
            return threads
    finally:
        await engine.dispose()
