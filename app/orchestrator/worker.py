"""The embedded runner: claims queued runs and executes them in this process.

It is the composition of the scheduling pieces, each a background service of its own
(app/lib/background.py):

- claims (app/orchestrator/scheduling/claims.py): claim every eligible run for the free
  slots (a thread's runs one at a time, in order), at once when a run is queued or a slot
  frees, and otherwise every `runner_poll_seconds`;
- leases (scheduling/leases.py): renew the leases of the runs it holds, learning of
  cancel requests from other processes on the way;
- the reaper (scheduling/reaper.py): fail runs whose lease expired, and at start those of
  dead processes of this host;
- heartbeats (scheduling/heartbeats.py): renew this process's `runner_heartbeats` row and
  watch its peers'; a peer silent for `runner_heartbeat_timeout_seconds` has its runs
  failed at once (by the reaper) instead of after their lease;
- the loop-lag probe (loop/loop_lag.py), read by the claims' busy-loop gate.

The worker itself executes the runs claimed (loop/runner.py), routes wake-ups (notify.py)
to the pieces, and stops the runs a refused write fenced.
"""

from __future__ import annotations

import asyncio
import logging
from uuid import UUID

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.lib.background import BackgroundService
from app.observability import metrics
from app.orchestrator.loop.context import RunnerDeps
from app.orchestrator.loop.delta_pace import DeltaPace
from app.orchestrator.loop.loop_lag import LagProbe
from app.orchestrator.loop.runner import RunExecution
from app.orchestrator.scheduling import notify
from app.orchestrator.scheduling.claims import Claims
from app.orchestrator.scheduling.heartbeats import Heartbeats
from app.orchestrator.scheduling.leases import LeaseRenewal
from app.orchestrator.scheduling.reaper import Reaper, new_owner
from app.settings import Settings
from app.threads.fence import Lease
from app.threads.records import StoredRun

logger = logging.getLogger(__name__)
EXECUTIONS_STOP_SECONDS = 10.0  # on shutdown, how long the runs stopped may take to end


class RunWorker:
    def __init__(
        self, settings: Settings, session_factory: async_sessionmaker[AsyncSession]
    ) -> None:
        self.deps = RunnerDeps(
            settings=settings,
            session_factory=session_factory,
            owner=new_owner(),
            http=httpx.AsyncClient(timeout=30, follow_redirects=False),
            pace=DeltaPace(settings.stream_delta_seconds, settings.stream_delta_max_seconds),
        )
        self.settings = settings
        self.executions: dict[UUID, RunExecution] = {}
        owner = self.deps.owner
        self.claims = Claims(
            settings,
            self.deps,
            owner,
            busy=self._busy_runs,
            lag=lambda: self.deps.loop_lag.seconds,
            start=self._start,
        )
        self.leases = LeaseRenewal(settings, self.deps, owner, lambda: self.executions)
        self.reaper = Reaper(settings, self.deps)
        self.heartbeats = Heartbeats(settings, self.deps, owner, self.reaper.reap_silent)
        probe = LagProbe(self.deps.pace.observe, self.deps.loop_lag.observe)
        self._lag = BackgroundService(
            "run-lag", probe.once, period=None, logger=logger, immediately=True
        )
        self.deps.slot_freed = self.claims.slot_freed
        self.deps.fenced = self._fenced
        self.finished = asyncio.Condition()  # tests and benchmarks wait on it

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        notify.add_listener(self._on_notify)
        await self.heartbeats.start()  # our row exists before we hold any run
        await self.reaper.start()
        metrics.watch_runner(
            in_use=self._busy_runs,
            parked=self.deps.parked_runs,
            waiting=lambda: self.claims.waiting,
            limit=self.settings.runner_max_concurrent_runs,
        )
        metrics.watch_delta_window(lambda: self.deps.pace.window)
        metrics.watch_loop_lag(
            lambda: self.deps.loop_lag.seconds, self.settings.runner_busy_lag_seconds
        )
        self.claims.start()
        self.leases.start()
        self._lag.start()

    async def stop(self) -> None:
        notify.remove_listener(self._on_notify)
        await asyncio.gather(self.claims.stop(), self.leases.stop(), self.reaper.stop())
        for execution in list(self.executions.values()):
            execution.stop("shutdown")
        tasks = [e.task for e in self.executions.values() if e.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=EXECUTIONS_STOP_SECONDS)
        await asyncio.gather(self.heartbeats.stop(), self._lag.stop())
        await self.deps.http.aclose()

    def _on_notify(self, kind: notify.Kind, object_id: UUID, here: bool) -> None:
        if kind == "queued":
            self.claims.queued(object_id, here)
        elif kind == "cancel":
            if (execution := self.executions.get(object_id)) is not None:
                execution.stop("cancelled")
        elif kind == "approval":
            self.deps.approvals.wake(object_id)

    # -- the runs --------------------------------------------------------------------
    def _busy_runs(self) -> int:
        """Runs holding a slot: those waiting for the user (approval, device) do not."""
        return len(self.executions) - self.deps.parked_runs()

    def _start(self, run: StoredRun) -> None:
        """Execute a run just claimed."""
        execution = RunExecution(self.deps, run)
        self.executions[run.id] = execution
        execution.task = asyncio.create_task(self._execute(execution), name=f"run-{run.id}")

    async def _execute(self, execution: RunExecution) -> None:
        try:
            await execution.execute()
        finally:
            self.executions.pop(execution.run.id, None)
            self.claims.slot_freed()  # the thread's next run may now be eligible
            async with self.finished:
                self.finished.notify_all()

    def _fenced(self, lease: Lease) -> None:
        """A write under `lease` was refused: its run is no longer ours, stop it at once."""
        execution = self.executions.get(lease.run_id)
        if execution is not None and execution.lease == lease:
            execution.stop("fenced")
