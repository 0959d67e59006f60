"""A tool call's unit of work, committed together with the call's outcome.

Run by the orchestrator, a call's domain change (the task it creates) and its cell's final
state (`success` with the task's data) are one transaction: the change is stored exactly
when the cell says it was made, never one without the other (a crash in between used to
leave a created task behind a cell the reaper then failed), and the call costs one commit
instead of two. So `ToolContext.transaction` hands out a session from here and, when the
block ends, keeps it open instead of committing; the caller writes the cell in it and
commits (`take`). A block that raises still rolls back at once. A second block of the same
call commits the first one's work before it starts (they stay separate units of work).

The held session keeps its locks (on SQLite the write lock) until the cell is written,
which follows right after; progress the call reports meanwhile goes into the same session
(`held`) instead of waiting for that lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker


class CallUnit:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._session: AsyncSession | None = None
        # One user of the call's sessions at a time: the tool's block, or a progress write
        # (which waits for the block, then joins what it holds: it never queues behind
        # this call's own SQLite write lock).
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """The tool's block: rolled back when it raises, else held for the outcome."""
        async with self._lock:
            await self._commit_held()
            session = self._sessions()
            try:
                yield session
            except BaseException:
                await session.close()  # rolls back
                raise
            self._session = session

    @asynccontextmanager
    async def held(self) -> AsyncIterator[AsyncSession | None]:
        """The held session (None when nothing is held), for a write that joins it."""
        async with self._lock:
            yield self._session

    def take(self) -> AsyncSession | None:
        """The held session, now the caller's to commit (or close) with the outcome. Call
        it once the call is over (no block or progress write running)."""
        session, self._session = self._session, None
        return session

    async def discard(self) -> None:
        """Roll back what is held (a cancelled call), once no one is using it."""
        async with self._lock:
            session = self.take()
            if session is not None:
                await session.close()

    async def _commit_held(self) -> None:
        session = self.take()
        if session is not None:
            async with session:
                await session.commit()
