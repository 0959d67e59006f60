"""Heartbeats: each runner process renews its `runner_heartbeats` row every
`runner_heartbeat_seconds` and watches its peers' rows.

A peer whose heartbeat stopped changing for `runner_heartbeat_timeout_seconds` is taken
for dead and handed to the reaper (reaper.py), which fails its runs at once instead of
after their lease (which stays the backstop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import runner_heartbeats
from app.lib.background import BackgroundService
from app.lib.time import utcnow
from app.orchestrator.scheduling.runner_db import RunnerDatabase
from app.settings import Settings

logger = logging.getLogger(__name__)


class Heartbeats:
    def __init__(
        self,
        settings: Settings,
        db: RunnerDatabase,
        owner: str,
        silent: Callable[[dict[str, datetime]], object],
    ) -> None:
        """`silent`: told the peers whose heartbeat stopped (owner -> its last beat); it
        must return at once (the reaper fails their runs in its own task: a lock held by a
        cut-off peer never stops this process's heartbeat)."""
        self.db, self.owner, self._silent = db, owner, silent
        self._peers = PeerWatch(settings.runner_heartbeat_timeout_seconds)
        self._service = BackgroundService(
            "run-heartbeat",
            self._beat_and_watch,
            period=settings.runner_heartbeat_seconds,
            logger=logger,
            failure="runner heartbeat failed",  # the database is unreachable: keep beating
            level=logging.WARNING,
        )

    async def start(self) -> None:
        """Our row exists before we hold any run; then beat every period."""
        await self.beat()
        self._service.start()

    async def stop(self) -> None:
        """Beat no more, and say so (peers would see us silent anyway)."""
        await self._service.stop()
        with contextlib.suppress(Exception):  # gone anyway once peers see it silent
            await self.db.write(lambda s: forget_heartbeat(s, self.owner))

    async def beat(self) -> dict[str, datetime]:
        """Renew our heartbeat and read everyone's: one short transaction."""

        async def work(session: AsyncSession) -> dict[str, datetime]:
            await beat(session, self.owner)
            return await read_heartbeats(session)

        return await self.db.write(work)

    async def _beat_and_watch(self) -> None:
        try:
            beats = await self.beat()
            beats.pop(self.owner, None)
            silent = self._peers.silent(beats, asyncio.get_running_loop().time())
            if silent:
                self._silent(silent)
        except Exception:
            # While we could not look, nobody's silence counts (they could not beat
            # either): every peer gets a full timeout again once we can look.
            self._peers.forget()
            raise


class PeerWatch:
    """Which peers' heartbeats stopped changing, by this process's own monotonic clock.

    Beats are compared for change only, never against our wall clock: hosts' clocks may
    disagree, our view of how long a beat stayed unchanged does not.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._seen: dict[str, tuple[datetime, float]] = {}  # owner -> (beat, first seen)

    def silent(self, beats: dict[str, datetime], now: float) -> dict[str, datetime]:
        seen: dict[str, tuple[datetime, float]] = {}
        for owner, beat in beats.items():
            previous = self._seen.get(owner)
            seen[owner] = previous if previous and previous[0] == beat else (beat, now)
        self._seen = seen
        return {o: beat for o, (beat, since) in seen.items() if now - since >= self.timeout}

    def forget(self) -> None:
        self._seen = {}


# -- the rows -----------------------------------------------------------------------------
async def beat(session: AsyncSession, owner: str) -> None:
    """Renew this process's heartbeat row (re-created if a peer took us for dead)."""
    now = utcnow()
    renewed = await session.execute(
        update(runner_heartbeats).where(runner_heartbeats.c.owner == owner).values(beat_at=now)
    )
    if not renewed.rowcount:
        await session.execute(insert(runner_heartbeats).values(owner=owner, beat_at=now))


async def read_heartbeats(session: AsyncSession) -> dict[str, datetime]:
    rows = await session.execute(select(runner_heartbeats.c.owner, runner_heartbeats.c.beat_at))
    return {owner: beat_at for owner, beat_at in rows}


async def forget_heartbeat(session: AsyncSession, owner: str) -> None:
    await session.execute(delete(runner_heartbeats).where(runner_heartbeats.c.owner == owner))
