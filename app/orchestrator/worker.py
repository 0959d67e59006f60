"""The embedded runner: claims queued runs and executes them in this process.

One loop: claim every eligible run (a thread's runs one at a time, in order), renew the
leases of the runs it holds (learning of cancel requests from other processes on the
way), and reap runs whose lease expired. It wakes at once when this process queues a
run or asks a cancel (after commit), and otherwise every `runner_poll_seconds`.

Beside it, a heartbeat task renews this process's `runner_heartbeats` row every
`runner_heartbeat_seconds` and watches its peers' rows: a peer whose heartbeat stopped changing for
`runner_heartbeat_timeout_seconds` is taken for dead and its runs are failed at once,
instead of after their lease (which stays the backstop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from datetime import datetime
from uuid import UUID, uuid4

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.db.models import Run
from app.observability import metrics
from app.orchestrator.loop.context import RunnerDeps
from app.orchestrator.loop.delta_pace import DeltaPace
from app.orchestrator.loop.loop_lag import LagProbe
from app.orchestrator.loop.runner import RunExecution
from app.orchestrator.scheduling import notify, runs
from app.orchestrator.scheduling.queue_places import QueuePlaces
from app.settings import Settings
from app.threads.fence import Lease

logger = logging.getLogger(__name__)


# Between two steps of claims on a busy loop: a few lag probes (loop_lag.PROBE_SECONDS).
STEP_PAUSE_SECONDS = 0.15


class RunWorker:
    def __init__(
        self, settings: Settings, session_factory: async_sessionmaker[AsyncSession]
    ) -> None:
        owner = f"{_local_identity()}:{os.getpid()}:{uuid4().hex[:8]}"
        self.deps = RunnerDeps(
            settings=settings,
            session_factory=session_factory,
            owner=owner,
            http=httpx.AsyncClient(timeout=30, follow_redirects=False),
            pace=DeltaPace(settings.stream_delta_seconds, settings.stream_delta_max_seconds),
        )
        self.deps.slot_freed = self._slot_freed
        self.deps.fenced = self._fenced
        self.settings = settings
        self.executions: dict[UUID, RunExecution] = {}
        self._wake = asyncio.Event()
        # Queued runs this process heard of and has not claimed (one may wait behind a
        # running run of its thread), and whether the last claim stopped at a full
        # house: a freed slot claims again only then, not after every run.
        self._awaited: set[UUID] = set()
        # Of those, the runs queued in this process: handed on to the other processes
        # (notify.relay) if this one cannot claim them at once.
        self._queued_here: set[UUID] = set()
        self._saturated = False
        # Whether the last claim stopped at a step (worker._free_slots): runs may be left
        # waiting though slots are free, and are told their place like on a full house.
        self._stepping = False
        self._places = QueuePlaces(self.deps.read_sessions)  # told to runs queued here
        self._loop_task: asyncio.Task[None] | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._lag_task: asyncio.Task[None] | None = None
        self._peers = PeerWatch(settings.runner_heartbeat_timeout_seconds)
        self._stopping = False
        self._postgres = not settings.is_sqlite
        self.finished = asyncio.Condition()  # tests and benchmarks wait on it

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        notify.add_listener(self._on_notify)
        await self._beat()  # our row exists before we hold any run
        await self._expire_dead_local_owners()
        await self._reap()
        metrics.watch_runner(
            in_use=self._busy_runs,
            parked=self.deps.parked_runs,
            waiting=lambda: len(self._awaited),
            limit=self.settings.runner_max_concurrent_runs,
        )
        metrics.watch_delta_window(lambda: self.deps.pace.window)
        metrics.watch_loop_lag(
            lambda: self.deps.loop_lag.seconds, self.settings.runner_busy_lag_seconds
        )
        self._loop_task = asyncio.create_task(self._run_loop(), name="run-worker")
        self._heartbeat_task = asyncio.create_task(self._heartbeat_loop(), name="run-heartbeat")
        probe = LagProbe(self.deps.pace.observe, self.deps.loop_lag.observe)
        self._lag_task = asyncio.create_task(probe.run(), name="run-lag")

    async def stop(self) -> None:
        self._stopping = True
        notify.remove_listener(self._on_notify)
        self._hand_on(set(self._queued_here))
        self._wake.set()
        if self._loop_task is not None:
            await self._loop_task
        for execution in list(self.executions.values()):
            execution.stop("shutdown")
        tasks = [e.task for e in self.executions.values() if e.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=10)
        for task in (self._heartbeat_task, self._lag_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        with contextlib.suppress(Exception):  # gone anyway once peers see it silent
            await self.deps.write(lambda s: runs.forget_heartbeat(s, self.deps.owner))
        await self.deps.http.aclose()

    def _on_notify(self, kind: notify.Kind, object_id: UUID, here: bool) -> None:
        if kind == "queued":
            self._awaited.add(object_id)
            if here:
                self._queued_here.add(object_id)
                self._places.queued(object_id)
            self._wake.set()
        elif kind == "cancel":
            if (execution := self.executions.get(object_id)) is not None:
                execution.stop("cancelled")
        elif kind == "approval":
            self.deps.approvals.wake(object_id)

    # -- the loop --------------------------------------------------------------------
    async def _run_loop(self) -> None:
        loop = asyncio.get_running_loop()
        poll = self.settings.runner_poll_seconds
        lease = self.settings.run_lease_seconds
        next_renew = next_reap = loop.time()
        while not self._stopping:
            self._wake.clear()
            try:
                await self._claim_all()
                waiting = self._saturated or self._stepping
                if waiting and self._places.due(loop.time()):
                    await self._places.tell()
                now = loop.time()
                if self.executions and now >= next_renew - poll:
                    await self._renew()
                    next_renew = now + min(lease / 3, poll * 2)
                if now >= next_reap:
                    await self._reap()
                    next_reap = now + max(lease / 2, poll)
            except Exception:  # a database hiccup must not kill the runner
                logger.exception("run worker iteration failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=poll)

    def _slot_freed(self) -> None:
        """A run ended or parked: claim again if a run may be waiting for it."""
        if self._saturated or self._awaited:
            self._wake.set()

    def _busy_runs(self) -> int:
        """Runs holding a slot: those waiting for the user (approval, device) do not."""
        return len(self.executions) - self.deps.parked_runs()

    def _free_slots(self) -> tuple[int, bool]:
        """Runs this process may claim now, and whether that is a step (look again at the
        next wake-up before claiming more). Its free slots; while its event loop is late
        (RUNNER_BUSY_LAG_SECONDS) none beyond RUNNER_BUSY_MIN_RUNS, and while it is half
        that late, RUNNER_BUSY_MIN_RUNS at a time. A process short of CPU that started
        every queued run would slow every one of them together (at some load, all past
        any deadline), and a burst claimed in one round makes the loop late for seconds
        before the lag shows it; left queued, runs wait their turn in the fair order, are
        told their place, and another process may take them."""
        busy = self._busy_runs()
        free = self.settings.runner_max_concurrent_runs - busy
        limit = self.settings.runner_busy_lag_seconds
        if free <= 0 or limit <= 0:
            return free, False
        lag, least = self.deps.loop_lag.seconds, self.settings.runner_busy_min_runs
        if lag >= limit:
            return min(free, least - busy), False
        if lag >= limit / 2 and free > least:
            return least, True
        return free, False

    async def _claim_all(self) -> None:
        """Claim runs for every free slot, one statement per round."""
        self._stepping = False
        while True:
            slots, step = self._free_slots()
            self._saturated = slots <= 0
            if self._saturated:
                self._hand_on(set(self._queued_here))
                return
            # More runs wait than slots are free: fairest first (queue_order.py), else
            # the cheaper oldest first (all of them get a slot anyway).
            fair = len(self._awaited) > slots
            known = set(self._awaited)  # committed before the claim: it sees them
            claimed = await self.deps.write_alone(  # one UPDATE … RETURNING
                lambda s, slots=slots, fair=fair: runs.claim_runs(
                    s,
                    self.deps.owner,
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
                execution = RunExecution(self.deps, run)
                self.executions[run.id] = execution
                execution.task = asyncio.create_task(self._execute(execution), name=f"run-{run.id}")
            if len(claimed) < slots:  # nothing more is eligible now
                await self._forget_taken_runs(known)
                return
            if step:  # the next step once the lag probe has seen this one's load
                self._stepping = True
                asyncio.get_running_loop().call_later(STEP_PAUSE_SECONDS, self._wake.set)
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
        async with self.deps.read_sessions() as session:
            queued = await runs.still_queued(session, list(asked))
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

    async def _execute(self, execution: RunExecution) -> None:
        try:
            await execution.execute()
        finally:
            self.executions.pop(execution.run.id, None)
            self._slot_freed()  # the thread's next run may now be eligible
            async with self.finished:
                self.finished.notify_all()

    def _fenced(self, lease: Lease) -> None:
        """A write under `lease` was refused: its run is no longer ours, stop it at once."""
        execution = self.executions.get(lease.run_id)
        if execution is not None and execution.lease == lease:
            execution.stop("fenced")

    async def _renew(self) -> None:
        held = [execution.lease for execution in self.executions.values()]
        alive = await self.deps.write(
            lambda s: runs.renew_leases(s, self.deps.owner, held, self.settings.run_lease_seconds)
        )
        for lease in held:
            execution = self.executions.get(lease.run_id)
            if execution is None or execution.lease != lease:
                continue
            if lease.run_id not in alive:
                execution.stop("fenced")  # reaped elsewhere: stop working on it
            elif alive[lease.run_id]:
                execution.stop("cancelled")

    async def _expire_dead_local_owners(self) -> None:
        """A process of this host (same PID namespace) that died (crash, SIGKILL,
        restart) need not wait out its lease: its runs are reaped at once. Other hosts'
        and containers' leases simply expire."""
        host = _local_identity()
        owners = await self.deps.write(runs.running_lease_owners)
        dead = [owner for owner in owners if _is_dead_local_owner(owner, host)]
        if dead:
            reaped = await self.deps.write(lambda s: runs.reap_owners(s, dead, runs.OWNER_STOPPED))
            for run in reaped:
                logger.warning("run %s: its process is gone, marked failed", run.id)

    # -- the heartbeat ---------------------------------------------------------------
    async def _beat(self) -> dict[str, datetime]:
        """Renew our heartbeat and read everyone's: one short transaction."""

        async def work(session: AsyncSession) -> dict[str, datetime]:
            await runs.beat(session, self.deps.owner)
            return await runs.read_heartbeats(session)

        return await self.deps.write(work)

    async def _heartbeat_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.settings.runner_heartbeat_seconds)
            try:
                beats = await self._beat()
                beats.pop(self.deps.owner, None)
                silent = self._peers.silent(beats, loop.time())
                if silent:
                    await self._reap_silent(silent)
            except Exception:  # the database is unreachable: keep beating
                # While we could not look, nobody's silence counts (they could not beat
                # either): every peer gets a full timeout again once we can look.
                self._peers.forget()
                logger.warning("runner heartbeat failed", exc_info=True)

    async def _reap_silent(self, silent: dict[str, datetime]) -> None:
        async def work(session: AsyncSession) -> list[Run]:
            dead = await runs.claim_silent_owners(session, silent)
            return await runs.reap_owners(session, dead, runs.OWNER_SILENT)

        for run in await self.deps.write(work):
            logger.warning("run %s: its process stopped responding, marked failed", run.id)

    async def _reap(self) -> None:
        if self._postgres:  # judge leases on the database's clock (app/db/clock.py)
            await self.deps.write(clock.synchronize)
        reaped = await self.deps.write(runs.reap_expired_runs)
        for run in reaped:
            logger.warning("run %s: lease expired, marked failed (interrupted)", run.id)


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


def _local_identity() -> str:
    """Host name plus PID namespace: where a PID means the same process."""
    try:
        namespace = os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()[:40]}/{namespace}"


def _is_dead_local_owner(owner: str, host: str) -> bool:
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
