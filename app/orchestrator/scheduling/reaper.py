"""Reaping: runs whose runner is gone are failed and their open cells closed.

Three ways to know a runner is gone: its lease expired (every `max(lease / 2, poll)`
seconds, judged on the database's clock: app/db/clock.py); its process, on this host,
no longer exists (once, at start: a crash or a restart need not wait out its lease); its
heartbeat stopped (heartbeats.py). Each reaping UPDATE … RETURNING fails a run for
exactly one reaper and raises its lease epoch, so its runner's later writes are refused.
A parked run (it only waits for the user or the phone) is put back in the queue instead,
under a new epoch too (parking.py).

Reaping never waits behind a lock a cut-off host holds. A host partitioned between a
fenced write and its COMMIT leaves that transaction open on the server, its run row locked
(FOR SHARE, app/threads/fence.py), until the server drops it
(`database_idle_in_transaction_timeout_seconds`). So the reaper skips locked runs (SKIP
LOCKED: the next round takes them), bounds every other lock wait (`lock_timeout`), and
runs in tasks of its own: this host's heartbeat and lease renewals never wait for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from datetime import datetime
from typing import Any
from uuid import uuid4

from sqlalchemy import Select, and_, delete, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import Run, RunStatus, runner_heartbeats
from app.lib.background import BackgroundService
from app.orchestrator.scheduling.parking import requeue_parked
from app.orchestrator.scheduling.runner_db import RunnerDatabase
from app.orchestrator.scheduling.runs import INTERRUPTED
from app.settings import Settings
from app.threads import changes
from app.threads.open_cells import close_open_activities
from app.threads.pending_switch import after_run_end

logger = logging.getLogger(__name__)
# On shutdown, a reaping under way finishes first; one that takes longer is cancelled.
STOP_GRACE_SECONDS = 10.0

# Longest wait for a row lock in a reaping transaction (PostgreSQL): past it the round
# fails and the next one tries again.
LOCK_WAIT_MS = 2000

LEASE_EXPIRED = "Interrupted: the process running this run stopped renewing its lease."
OWNER_STOPPED = "Interrupted: the process running this run stopped."
OWNER_SILENT = "Interrupted: the process running this run stopped responding."


class Reaper:
    def __init__(self, settings: Settings, db: RunnerDatabase) -> None:
        self.db = db
        self._postgres = not settings.is_sqlite
        lease, poll = settings.run_lease_seconds, settings.runner_poll_seconds
        self._service = BackgroundService(
            "run-reaper",
            self.reap,
            period=max(lease / 2, poll),
            logger=logger,
            failure="reaping runs failed",
            immediately=True,
            grace=STOP_GRACE_SECONDS,
        )
        self._silent: dict[str, datetime] = {}
        self._silent_service = BackgroundService(
            "run-reaper-silent",
            self._reap_silent,
            period=None,  # only when the heartbeat tells of silent peers
            logger=logger,
            failure="reaping silent peers' runs failed",
            grace=STOP_GRACE_SECONDS,
        )

    async def _write(self, work: Any) -> Any:
        """One reaping transaction, its lock waits bounded (see the module's doc)."""

        async def bounded(session: AsyncSession) -> Any:
            if self._postgres:
                await session.execute(text(f"SET LOCAL lock_timeout = {LOCK_WAIT_MS}"))
            return await work(session)

        return await self.db.write(bounded)

    async def start(self) -> None:
        """Reap what dead runners left (now: failures raise), then every period."""
        await self.expire_dead_local_owners()
        await self.reap()
        self._service.start()
        self._silent_service.start()

    async def stop(self) -> None:
        await asyncio.gather(self._service.stop(), self._silent_service.stop())

    async def reap(self) -> None:
        """Fail the runs whose lease expired."""
        if self._postgres:  # judge leases on the database's clock (app/db/clock.py)
            await self.db.write(clock.synchronize)
        reaped = await self._write(reap_expired_runs)
        for run in reaped:
            logger.warning("run %s: lease expired, marked failed (interrupted)", run.id)

    async def expire_dead_local_owners(self) -> None:
        """A process of this host (same PID namespace) that died (crash, SIGKILL,
        restart) need not wait out its lease: its runs are reaped at once. Other hosts'
        and containers' leases simply expire."""
        host = local_identity()
        owners = await self.db.write(running_lease_owners)
        dead = [owner for owner in owners if _is_dead_local_owner(owner, host)]
        if dead:
            reaped = await self._write(lambda s: reap_owners(s, dead, OWNER_STOPPED))
            for run in reaped:
                logger.warning("run %s: its process is gone, marked failed", run.id)

    def reap_silent(self, silent: dict[str, datetime]) -> None:
        """Fail, soon and in the reaper's own task, the runs of peers whose heartbeat
        stopped at the beat seen (heartbeats.py: the heartbeat goes on meanwhile)."""
        self._silent.update(silent)
        self._silent_service.wake()

    async def _reap_silent(self) -> None:
        silent, self._silent = self._silent, {}
        if not silent:
            return

        async def work(session: AsyncSession) -> list[Run]:
            dead = await claim_silent_owners(session, silent)
            return await reap_owners(session, dead, OWNER_SILENT)

        for run in await self._write(work):
            logger.warning("run %s: its process stopped responding, marked failed", run.id)


# -- who runs where ---------------------------------------------------------------------
def new_owner() -> str:
    """A name for this process on the leases and heartbeats it holds:
    `<local_identity>:<pid>:<random>` (read back by `_is_dead_local_owner`)."""
    return f"{local_identity()}:{os.getpid()}:{uuid4().hex[:8]}"


def local_identity() -> str:
    """Host name plus PID namespace: where a PID means the same process."""
    try:
        namespace = os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()[:40]}/{namespace}"


def _is_dead_local_owner(owner: str, host: str) -> bool:
    """Whether `owner` (`new_owner`) is a process of this host that no longer exists."""
    parts = owner.rsplit(":", 2)
    if host.endswith("/") or len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False  # a run of this very process would be ours (not possible at start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, someone else's
    return False


# -- the statements ---------------------------------------------------------------------
async def running_lease_owners(session: AsyncSession) -> list[str]:
    rows = await session.scalars(
        select(Run.lease_owner).where(Run.status == RunStatus.RUNNING.value).distinct()
    )
    return [owner for owner in rows if owner]


async def expire_leases(session: AsyncSession, owners: list[str]) -> None:
    """Owners known to be dead: their leases end now, for the reaper to take."""
    await session.execute(
        update(Run)
        .where(Run.status == RunStatus.RUNNING.value, Run.lease_owner.in_(owners))
        .values(lease_expires_at=clock.now())
        .execution_options(synchronize_session=False)
    )


async def reap_expired_runs(session: AsyncSession) -> list[Run]:
    """Fail runs whose lease expired and close their open activities.

    An expired lease only says its runner stopped renewing it (it may have stopped, hung
    or lost the database), and the error says no more. The UPDATE … RETURNING claims each
    run for exactly one reaper.
    """
    return await _fail_running(
        session, Run.lease_expires_at <= clock.now(), LEASE_EXPIRED, INTERRUPTED
    )


async def _fail_running(
    session: AsyncSession, condition: Any, error: str, activity_error: str
) -> list[Run]:
    """Fail the running runs matching `condition` (one UPDATE … RETURNING: each run is
    failed by exactly one caller) and close their open activities. A parked run (it only
    waits for the user or the phone) goes back to the queue instead (parking.py)."""
    condition = Run.id.in_(unlocked_running(condition))
    for run in await requeue_parked(session, condition):
        logger.info("run %s: parked when its process went, back in the queue", run.id)
    failed = list(
        await session.scalars(
            update(Run)
            .where(Run.status == RunStatus.RUNNING.value, condition)
            .values(
                status=RunStatus.FAILED.value,
                error=error,
                finished_at=clock.now(),  # the claim stamped started_at on it
                lease_expires_at=None,
                lease_epoch=Run.lease_epoch + 1,  # its runner's writes are refused from now
                **changes.run_end_values(),
            )
            .returning(Run)
            .execution_options(synchronize_session=False, populate_existing=True)
        )
    )
    for run in failed:
        await close_open_activities(
            session, run.id, error_type="system_error", error=activity_error
        )
        changes.run_changed(session, run)
        await after_run_end(session, run)  # a branch switch it kept
    return failed


def unlocked_running(condition: Any) -> Select[Any]:
    """The running runs matching `condition` that no transaction holds locked, locked now
    for us (PostgreSQL; SQLite renders no lock: its writer holds the database). A run a
    cut-off host's open write still locks is left for a later round (the module's doc)."""
    running = select(Run.id).where(Run.status == RunStatus.RUNNING.value, condition)
    return running.with_for_update(skip_locked=True)


async def reap_owners(session: AsyncSession, owners: list[str], error: str) -> list[Run]:
    """Fail the runs of owners known to be dead, lease or not, and forget their heartbeats."""
    if not owners:
        return []
    await session.execute(delete(runner_heartbeats).where(runner_heartbeats.c.owner.in_(owners)))
    return await _fail_running(session, Run.lease_owner.in_(owners), error, INTERRUPTED)


async def claim_silent_owners(session: AsyncSession, silent: dict[str, datetime]) -> list[str]:
    """Of the owners whose heartbeat was seen stuck at the given beat, those still stuck.

    Their rows are deleted only if the beat is still the one seen (an owner that beat
    meanwhile is alive after all), and each dead owner is claimed by exactly one caller.
    """
    if not silent:
        return []
    stuck = or_(
        *(
            and_(runner_heartbeats.c.owner == owner, runner_heartbeats.c.beat_at == beat_at)
            for owner, beat_at in silent.items()
        )
    )
    rows = await session.execute(
        delete(runner_heartbeats).where(stuck).returning(runner_heartbeats.c.owner)
    )
    return [owner for (owner,) in rows]
