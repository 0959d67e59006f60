"""A full process tells the runs queued in it their place in line: a `run` frame `queued`
with `position` (1: next), again when it moves, in the order every process claims
(queue_order.py). Never a silent wait.

A new run is told at once (within `NEW_TOLD_SECONDS`), moves at most every
`MOVES_TOLD_SECONDS`: each telling reads the whole line, and a full process wakes on
every run's end. Places are told up to `PLACES_TOLD`.
"""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import Run, RunStatus
from app.orchestrator.scheduling import queue_order
from app.threads import changes
from app.threads.records import StoredRun, stored_runs

PLACES_TOLD = 1000
NEW_TOLD_SECONDS = 0.1
MOVES_TOLD_SECONDS = 0.5


class QueuePlaces:
    def __init__(self, read_sessions: async_sessionmaker[AsyncSession]) -> None:
        self.read_sessions = read_sessions
        self.told: dict[UUID, int] = {}  # run queued here -> the place last told (0: none)
        self._told_at = -MOVES_TOLD_SECONDS

    def queued(self, run_id: UUID) -> None:
        """A run was queued in this process."""
        self.told.setdefault(run_id, 0)

    def gone(self, run_id: UUID) -> None:
        """A run left the line (claimed, cancelled)."""
        self.told.pop(run_id, None)

    def due(self, now: float) -> bool:
        """Whether to tell now (and if so, the telling's time is taken)."""
        if not self.told:
            return False
        waited = now - self._told_at
        if waited < (NEW_TOLD_SECONDS if 0 in self.told.values() else MOVES_TOLD_SECONDS):
            return False
        self._told_at = now
        return True

    async def tell(self) -> None:
        """Tell each run queued here whose place changed (one read of the line)."""
        async with self.read_sessions() as session:
            order = await queue_positions(session, PLACES_TOLD)
            place = {run_id: index + 1 for index, run_id in enumerate(order)}
            moved = {r: place[r] for r, told in self.told.items() if place.get(r, told) != told}
            waiting = await queued_runs(session, list(moved)) if moved else []
        if len(order) < PLACES_TOLD:  # the others are not in line (claimed, cancelled,
            for run_id in set(self.told) - set(place):  # or behind their thread's run)
                del self.told[run_id]
        for run in waiting:
            self.told[run.id] = moved[run.id]
            changes.run_waiting(run, moved[run.id])


async def queue_positions(session: AsyncSession, most: int) -> list[UUID]:
    """The first `most` eligible queued runs, in the order the fair claim takes them."""
    rows = await session.execute(queue_order.positions_statement(), {"most": most})
    return [run_id for (run_id,) in rows]


async def queued_runs(session: AsyncSession, run_ids: list[UUID]) -> list[StoredRun]:
    """These runs as stored, those still queued."""
    runs = Run.__table__
    rows = await session.execute(
        select(*runs.c).where(runs.c.id.in_(run_ids), runs.c.status == RunStatus.QUEUED.value)
    )
    return stored_runs(rows.mappings())
