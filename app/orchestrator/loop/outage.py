"""Database outages seen by the runner: recognise them, and retry a run's last write.

When the database is unreachable, a run cannot record its progress; it ends saying so
(not as "interrupted", which would claim a process stopped) once its last write lands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.errors import is_database_unavailable
from app.orchestrator.loop.context import RunnerDeps

T = TypeVar("T")
logger = logging.getLogger(__name__)

DB_UNREACHABLE = "The database was unreachable, so the run could not continue."
DB_UNREACHABLE_CELL = "The database was unreachable."


def database_unreachable(exc: BaseException) -> bool:
    """A lost or refused database connection somewhere in the exception's chain (the same
    judgement as the HTTP side's 503s, app/db/errors.py)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        # A plain TimeoutError here is the run's own deadline, not the database.
        if not isinstance(current, TimeoutError) and (
            isinstance(current, sa_exc.InterfaceError) or is_database_unavailable(current)
        ):
            return True
        if type(current).__module__.startswith("asyncpg") and "connection" in str(current).lower():
            return True
        current = current.__cause__ or current.__context__
    return False


async def write_retrying(
    deps: RunnerDeps, work: Callable[[AsyncSession], Awaitable[T]], *, seconds: float
) -> T:
    """`deps.write`, retried with backoff (capped at 1 s) while the database is unreachable,
    for up to `seconds`; other errors and the last failure are raised."""
    loop = asyncio.get_running_loop()
    give_up, delay = loop.time() + seconds, 0.1
    while True:
        try:
            return await deps.write(work)
        except Exception as exc:
            if not database_unreachable(exc) or loop.time() + delay > give_up:
                raise
            logger.warning("database unreachable, retrying a run's last write in %.1fs", delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)
