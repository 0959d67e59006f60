"""A database lane: reads run on a thread of their own, with its own event loop and pool.

Whichever loop runs a statement also runs SQLAlchemy's compile and result steps and the
driver's protocol for it. Most requests' statements are small; a memory recall's are
not (three statements, and for a user whose vectors are not kept, thousands of rows and
megabytes through the driver): twenty users recalling at once on the server's loop queue
that work between every other request's steps. On a lane, the server's loop only hands
the work over and takes its answer; the two threads share the GIL, which Python hands
from one to the other at least every switch interval, so the server's loop is never held
for a whole burst (figures: docs/benchmarks.md, bench.recall --users).

A lane reads the database its engine names; `serving(session)` finds the lane of a
session's database, None where there is none (work then runs on the caller's loop with
the caller's session). An in-memory SQLite database lives in one connection: it has no
lane. The lane's pool is its share of `database_max_connections` (app/db/config.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from litestar import Litestar
from sqlalchemy import URL
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.db.config import build_lane_engine
from app.settings import Settings

T = TypeVar("T")
Sessions = async_sessionmaker[AsyncSession]

# Lanes by the database they read (the engine's URL), the latest started serving: tests
# run several apps at once, on one database or on databases of their own.
_lanes: dict[URL, list[DatabaseLane]] = {}


class DatabaseLane:
    def __init__(self, name: str, engine: AsyncEngine) -> None:
        self.engine = engine
        self.sessions: Sessions = async_sessionmaker(engine, expire_on_commit=False)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()
        _lanes.setdefault(self.engine.url, []).append(self)

    async def run(self, work: Callable[[Sessions], Coroutine[Any, Any, T]]) -> T:
        """`work`, given the lane's sessions, on the lane's loop; cancelling the caller
        cancels it there (its connection goes back to the lane's pool)."""
        return await on_loop(self.loop, work(self.sessions))

    async def stop(self) -> None:
        running = _lanes.get(self.engine.url, [])
        if self in running:
            running.remove(self)
        if not self.thread.is_alive():
            self.loop.close()
            return
        await on_loop(self.loop, self._wind_down())
        self.loop.call_soon_threadsafe(self.loop.stop)
        await asyncio.to_thread(self.thread.join)
        self.loop.close()

    async def _wind_down(self) -> None:
        current = asyncio.current_task()
        left = [task for task in asyncio.all_tasks() if task is not current]
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        await self.engine.dispose()
        await self.loop.shutdown_default_executor()


def serving(session: AsyncSession) -> DatabaseLane | None:
    """The lane reading `session`'s database, if one runs."""
    running = _lanes.get(session.get_bind().engine.url)
    return running[-1] if running else None


def lane_for(settings: Settings) -> DatabaseLane | None:
    """The lane a server with `settings` runs, not started; None: its budget has none."""
    engine = build_lane_engine(settings)
    return None if engine is None else DatabaseLane("database-lane", engine)


def lane_lifespan(settings: Settings) -> Callable[[Litestar], AbstractAsyncContextManager[None]]:
    """The app's database lane while it runs (none where the budget has no share for it)."""

    @asynccontextmanager
    async def run_lane(_app: Litestar) -> AsyncIterator[None]:
        lane = lane_for(settings)
        if lane is None:
            yield
            return
        lane.start()
        try:
            yield
        finally:
            await lane.stop()

    return run_lane


async def on_loop(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, T]) -> T:
    """`work` run on `loop` (the server's, from a lane: what lives there, such as an
    HTTP client's connections or a batcher's queue, stays there)."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, loop))
