"""What the runner's scheduling pieces (claims, leases, heartbeats, reaper) need of the
database: the runner's own transactions. `RunnerDeps` (app/orchestrator/loop/context.py)
is one; the pieces take it by this shape, below the run loop that defines it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

T = TypeVar("T")
Work = Callable[[AsyncSession], Awaitable[T]]


class RunnerDatabase(Protocol):
    # Sessions for work that only reads (no BEGIN/COMMIT on PostgreSQL: app/db/reads.py).
    read_sessions: async_sessionmaker[AsyncSession]

    async def write(self, work: Work[T]) -> T:
        """One short transaction, committed (shielded from the caller's cancellation)."""
        ...

    async def write_alone(self, work: Work[T]) -> T:
        """`write` for work of one statement (atomic by itself)."""
        ...
