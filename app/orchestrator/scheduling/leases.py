"""Leases: the runner renews the lease of every run it holds, and learns on the way which
of them another process asked to cancel or took from it.

A run is held under a lease (owner and epoch, app/threads/fence.py) that ends
`run_lease_seconds` after its last renewal; renewed every third of that (at most every
two polls), a live runner's lease never lapses, and a runner that stopped renewing has
its runs reaped (reaper.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Protocol
from uuid import UUID

from sqlalchemy import tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import Run, RunStatus
from app.lib.background import BackgroundService
from app.orchestrator.scheduling.runner_db import RunnerDatabase
from app.settings import Settings
from app.threads.fence import Lease

logger = logging.getLogger(__name__)
# On shutdown, a renewal under way finishes first; one that takes longer is cancelled.
STOP_GRACE_SECONDS = 10.0


class Held(Protocol):
    """A run this process executes, as the lease renewal sees it."""

    lease: Lease

    def stop(self, reason: str) -> None: ...


class LeaseRenewal:
    def __init__(
        self,
        settings: Settings,
        db: RunnerDatabase,
        owner: str,
        held: Callable[[], Mapping[UUID, Held]],
    ) -> None:
        """`held`: the runs this process executes now, by id."""
        self.db, self.owner, self._held = db, owner, held
        self.lease_seconds = settings.run_lease_seconds
        self._service = BackgroundService(
            "run-leases",
            self.renew,
            period=min(self.lease_seconds / 3, settings.runner_poll_seconds * 2),
            logger=logger,
            failure="lease renewal failed",
            grace=STOP_GRACE_SECONDS,
        )

    def start(self) -> None:
        self._service.start()

    async def stop(self) -> None:
        await self._service.stop()

    async def renew(self) -> None:
        """Renew every lease held; stop the runs no longer ours (fenced) or asked to cancel."""
        executions = self._held()
        if not executions:
            return
        held = [execution.lease for execution in executions.values()]
        alive = await self.db.write(lambda s: renew_leases(s, self.owner, held, self.lease_seconds))
        executions = self._held()
        for lease in held:
            execution = executions.get(lease.run_id)
            if execution is None or execution.lease != lease:
                continue
            if lease.run_id not in alive:
                execution.stop("fenced")  # reaped elsewhere: stop working on it
            elif alive[lease.run_id]:
                execution.stop("cancelled")


async def renew_leases(
    session: AsyncSession, owner: str, leases: list[Lease], lease_seconds: float
) -> dict[UUID, bool]:
    """Extend our leases (each only while it is current: owner and epoch, and not expired:
    a lease that lapsed while we were cut off is the reaper's, app/threads/fence.py);
    answers {run_id: cancel_requested} for the runs still ours."""
    if not leases:
        return {}
    held = [(lease.run_id, lease.epoch) for lease in leases]
    now = clock.now()
    rows = await session.execute(
        update(Run)
        .where(
            tuple_(Run.id, Run.lease_epoch).in_(held),
            Run.lease_owner == owner,
            Run.status == RunStatus.RUNNING.value,
            Run.lease_expires_at > now,
        )
        .values(lease_expires_at=now + timedelta(seconds=lease_seconds))
        .returning(Run.id, Run.cancel_requested)
        .execution_options(synchronize_session=False)
    )
    return {row[0]: bool(row[1]) for row in rows}
