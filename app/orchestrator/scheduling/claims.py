"""Admission: which queued runs this process takes, and when; and the claim itself.

`Claims` hears of queued runs (after their commit, queued here or in another process:
notify.py) and claims runs for every free slot, one statement a round, on such a wake-up
and otherwise every `runner_poll_seconds`. Runs queued here that it cannot take at once
(all its slots busy, or behind a running run of their thread) are handed on to the
other processes; while it holds runs back it tells those queued here their place in line
(queue_places.py). While its event loop runs late it claims fewer runs, or in steps
(`free_slots`).

The claim is one UPDATE … RETURNING that moves eligible runs to running under this
process's lease: a thread's runs one at a time, in order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta
from functools import lru_cache
from uuid import UUID

from sqlalchemy import any_, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock, direct
from app.db.models import Run, RunStatus
from app.lib.background import BackgroundService
from app.orchestrator.scheduling import notify, queue_order
from app.orchestrator.scheduling.queue_places import QueuePlaces
from app.orchestrator.scheduling.runner_db import RunnerDatabase
from app.settings import Settings
from app.threads import changes
from app.threads.records import StoredRun, stored_runs

logger = logging.getLogger(__name__)
_runs = Run.__table__

# Between two steps of claims on a busy loop: a few lag probes (loop_lag.PROBE_SECONDS).
STEP_PAUSE_SECONDS = 0.15
# On shutdown, a claim round under way finishes first (the runs it claims are started,
# not left to their lease); one that takes longer than this is cancelled.
STOP_GRACE_SECONDS = 10.0


class Claims:
    def __init__(
        self,
        settings: Settings,
        db: RunnerDatabase,
        owner: str,
        *,
        busy: Callable[[], int],
        lag: Callable[[], float],
        start: Callable[[StoredRun], None],
    ) -> None:
        """`busy`: runs holding a slot now; `lag`: how late the event loop is (seconds);
        `start`: execute a run just claimed."""
        self.settings, self.db, self.owner = settings, db, owner
        self._busy, self._lag, self._start = busy, lag, start
        self._postgres = not settings.is_sqlite
        # Queued runs this process heard of and has not claimed (one may wait behind a
        # running run of its thread), and whether the last claim stopped at a full
        # house: a freed slot claims again only then, not after every run.
        self._awaited: set[UUID] = set()
        # Of those, the runs queued in this process: handed on to the other processes
        # (notify.relay) if this one cannot claim them at once.
        self._queued_here: set[UUID] = set()
        self._saturated = False
        # Whether the last claim stopped at a step (`free_slots`): runs may be left
        # waiting though slots are free, and are told their place like on a full house.
        self._stepping = False
        self._places = QueuePlaces(db.read_sessions)  # told to runs queued here
        self._service = BackgroundService(
            "run-claims",
            self._round,
            period=settings.runner_poll_seconds,
            logger=logger,
            failure="run claims failed",  # a database hiccup must not stop the claims
            immediately=True,
            grace=STOP_GRACE_SECONDS,
        )

    @property
    def waiting(self) -> int:
        """Queued runs this process heard of and has not claimed."""
        return len(self._awaited)

    def start(self) -> None:
        self._service.start()

    async def stop(self) -> None:
        self._hand_on(set(self._queued_here))
        await self._service.stop()

    def queued(self, run_id: UUID, here: bool) -> None:
        """A run was queued (`here`: in this process): claim now."""
        self._awaited.add(run_id)
        if here:
            self._queued_here.add(run_id)
            self._places.queued(run_id)
        self._service.wake()

    def slot_freed(self) -> None:
        """A run ended or parked: claim again if a run may be waiting for it."""
        if self._saturated or self._awaited:
            self._service.wake()

    def free_slots(self) -> tuple[int, bool]:
        """Runs this process may claim now, and whether that is a step (look again at the
        next wake-up before claiming more). Its free slots; while its event loop is late
        (RUNNER_BUSY_LAG_SECONDS) none beyond RUNNER_BUSY_MIN_RUNS, and while it is half
        that late, RUNNER_BUSY_MIN_RUNS at a time. A process short of CPU that started
        every queued run would slow every one of them together (at some load, all past
        any deadline), and a burst claimed in one round makes the loop late for seconds
        before the lag shows it; left queued, runs wait their turn in the fair order, are
        told their place, and another process may take them."""
        busy = self._busy()
        free = self.settings.runner_max_concurrent_runs - busy
        limit = self.settings.runner_busy_lag_seconds
        if free <= 0 or limit <= 0:
            return free, False
        lag, least = self._lag(), self.settings.runner_busy_min_runs
        if lag >= limit:
            return min(free, least - busy), False
        if lag >= limit / 2 and free > least:
            return least, True
        return free, False

    async def _round(self) -> None:
        await self._claim_all()
        waiting = self._saturated or self._stepping
        if waiting and self._places.due(asyncio.get_running_loop().time()):
            await self._places.tell()

    async def _claim_all(self) -> None:
        """Claim runs for every free slot, one statement per round."""
        self._stepping = False
        while True:
            slots, step = self.free_slots()
            self._saturated = slots <= 0
            if self._saturated:
                self._hand_on(set(self._queued_here))
                return
            # More runs wait than slots are free: fairest first (queue_order.py), else
            # the cheaper oldest first (all of them get a slot anyway).
            fair = len(self._awaited) > slots
            known = set(self._awaited)  # committed before the claim: it sees them
            claimed = await self.db.write_alone(  # one UPDATE … RETURNING
                lambda s, slots=slots, fair=fair: claim_runs(
                    s,
                    self.owner,
                    self.settings.run_lease_seconds,
                    postgres=self._postgres,
                    slots=slots,
                    fair=fair,
                )
            )
            for run in claimed:
                self._awaited.discard(run.id)
                self._queued_here.discard(run.id)
                self._places.gone(run.id)
                self._start(run)
            if len(claimed) < slots:  # nothing more is eligible now
                await self._forget_taken_runs(known)
                return
            if step:  # the next step once the lag probe has seen this one's load
                self._stepping = True
                asyncio.get_running_loop().call_later(STEP_PAUSE_SECONDS, self._service.wake)
                return

    async def _forget_taken_runs(self, known: set[UUID]) -> None:
        """Of the runs heard of before the last claim that it did not take (it saw them:
        each is announced after its commit), keep those still queued (waiting behind a
        running run of their thread); the rest were claimed elsewhere or cancelled. Runs
        heard of during the claim are left to the next one, which their notice woke: a
        busy process asks nothing more per claim, and hands none of them on."""
        asked = known & self._awaited
        if not asked:
            return
        async with self.db.read_sessions() as session:
            queued = await still_queued(session, list(asked))
        self._awaited -= asked - queued
        self._queued_here -= asked - queued
        for run_id in asked - queued:
            self._places.gone(run_id)
        self._hand_on(asked & self._queued_here)

    def _hand_on(self, run_ids: set[UUID]) -> None:
        """Wake the other processes for runs queued here that this one could not claim:
        one of them may have a free slot, or run the thread's run they wait for."""
        for run_id in run_ids:
            notify.relay("queued", run_id)
        self._queued_here -= run_ids


# -- the claim ----------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _claim_statement(postgres: bool, fair: bool = False):
    """Built once: composing this statement costs more than running it. Core, on the
    table's own columns: an ORM attribute anywhere in it makes the session run it as an
    ORM bulk UPDATE (2.5 times the CPU, and its cache key worked out again each time).
    `fair`: fairest first across users (queue_order.py), else oldest first."""
    if fair:
        candidates = queue_order.fairest_first(postgres=postgres)
    else:
        candidates = queue_order.oldest_first().limit(bindparam("slots"))
        if postgres:
            candidates = candidates.with_for_update(skip_locked=True)
    if postgres:
        # ANY(ARRAY(…)): the candidates are picked once, before the UPDATE, as a scalar
        # subquery would be (an IN semi-join is re-planned and, under concurrent
        # claimers, let all but one come back empty)
        chosen = _runs.c.id == any_(func.array(candidates.scalar_subquery()))
    else:
        chosen = _runs.c.id.in_(candidates.scalar_subquery())
    return (
        update(_runs)
        .where(chosen, _runs.c.status == RunStatus.QUEUED.value)
        .values(
            status=RunStatus.RUNNING.value,
            lease_owner=bindparam("owner"),
            lease_expires_at=bindparam("expires"),
            lease_epoch=_runs.c.lease_epoch + 1,  # the new lease's fencing token
            # a parked run taken up again keeps the time it first started
            started_at=func.coalesce(_runs.c.started_at, bindparam("now")),
            updated_at=bindparam("now"),  # the claim's own time, as started_at
        )
        .returning(*_runs.c)
    )


async def claim_runs(
    session: AsyncSession,
    owner: str,
    lease_seconds: float,
    *,
    postgres: bool,
    slots: int,
    fair: bool = False,
) -> list[StoredRun]:
    """Atomically move up to `slots` eligible runs to running under our lease, oldest
    first, or with `fair` fairest first across users (app/orchestrator/scheduling/queue_order.py).

    One UPDATE … WHERE status='queued' … RETURNING: on SQLite it holds the write lock; on
    PostgreSQL the candidates are picked FOR UPDATE SKIP LOCKED, so concurrent runners
    never claim one run twice, and a thread's later run is never eligible while an earlier
    one is queued or running (nor claimed beside it: eligibility is judged on the rows as
    they were before this statement). Fewer than `slots` back: nothing more is eligible.
    """
    now = clock.now()
    expires = now + timedelta(seconds=lease_seconds)
    params = {"owner": owner, "expires": expires, "now": now, "slots": slots}
    rows = await direct.execute(session, _claim_statement(postgres, fair), params)
    claimed = stored_runs(rows.mappings())
    claimed.sort(key=lambda run: (run.created_at, run.id))
    for run in claimed:
        changes.run_changed(session, run)
    return claimed


async def claim_next_run(
    session: AsyncSession, owner: str, lease_seconds: float, *, postgres: bool
) -> StoredRun | None:
    """The next eligible run, claimed (or None): `claim_runs` for one slot."""
    claimed = await claim_runs(session, owner, lease_seconds, postgres=postgres, slots=1)
    return claimed[0] if claimed else None


async def still_queued(session: AsyncSession, run_ids: list[UUID]) -> set[UUID]:
    """Which of these runs still wait in the queue (not claimed, not cancelled)."""
    rows = await session.scalars(
        select(Run.id).where(Run.id.in_(run_ids), Run.status == RunStatus.QUEUED.value)
    )
    return set(rows)
