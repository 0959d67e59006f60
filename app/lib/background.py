"""A background service: one job run again and again in a task of its own, until stopped.

Every periodic loop of the app is one (the runner's claims, leases, reaper, heartbeat and
loop-lag probe, the push sender, presence and Live Activities, the MCP catalog's
refreshes and listeners, the PostgreSQL wake-ups, the sockets' token check). The service owns what each loop used
to write by hand:

- the rhythm: the job runs, then the service waits its `period` (a number, or computed
  before each wait; None: only a wake-up) or less if `wake()` is called meanwhile. The
  job may instead answer how long to wait before its next run: that wait is slept in
  full (a back-off; a wake-up meanwhile is kept for after it), 0 runs it again at once
  (after one turn of the event loop), and `DONE` ends the service;
- failures: an exception of the job is logged (one record, with its traceback, at the
  service's level), counted in `toolcells_background_errors_total{service=…}`, and the
  loop goes on after `retry` seconds (None: the period). A job that must undo something
  on failure does so itself and raises again;
- the stop, within a bound: a job under way may finish for `grace` seconds, then it is
  cancelled; a task still not ended `stop_seconds` later (its cleanup ignoring the
  cancellation) is left behind with a warning, and the stop returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Final, final

from app.lib.listeners import Listeners

STOP_SECONDS = 5.0
_logger = logging.getLogger(__name__)
# Told the service's name at each failure of its job: app/observability/metrics.py adds
# its counter (`toolcells_background_errors_total`) when imported (observability stands
# above this library).
failure_counters: Listeners[Callable[[str], None]] = Listeners(
    "background failure counter", logger=_logger
)


@final
class _Done:
    def __repr__(self) -> str:
        return "DONE"


DONE: Final = _Done()  # a job answers it to end its service

Answer = float | None | _Done
Job = Callable[[], Awaitable[Answer]]


class BackgroundService:
    def __init__(
        self,
        name: str,
        job: Job,
        *,
        period: float | Callable[[], float | None] | None,
        logger: logging.Logger,
        failure: str | None = None,
        level: int = logging.ERROR,
        immediately: bool = False,
        retry: float | None = None,
        grace: float = 0.0,
        stop_seconds: float = STOP_SECONDS,
    ) -> None:
        """`name` names the task and the metric's label; `failure` is the line logged for
        a failed run (default "<name> failed"); `immediately`: the first run does not
        wait the period."""
        self.name, self._job, self._period = name, job, period
        self._logger, self._level = logger, level
        self._failure = failure or f"{name} failed"
        self._immediately, self._retry = immediately, retry
        self.grace, self.stop_seconds = grace, stop_seconds
        self._woken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._busy = False  # the job is under way (not waiting)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        self._stopping = False
        self._task = asyncio.create_task(self._loop(), name=self.name)
        self._task.add_done_callback(_retrieve)

    def wake(self) -> None:
        """Run the job now (or once its run under way is over) rather than after the period."""
        self._woken.set()

    async def stop(self) -> bool:
        """Stop within the bound; whether the task ended (else a warning said it did not)."""
        ended = await self.halt()
        if not ended:
            _left_behind(self._logger, self.name, 1, self.stop_seconds)
        return ended

    async def halt(self) -> bool:
        """`stop` without the warning: whether the task ended within the bound."""
        task, self._stopping = self._task, True
        self._woken.set()
        if task is None or task.done():
            return True
        if self._busy and self.grace > 0:
            done, _ = await asyncio.wait({task}, timeout=self.grace)
            if done:
                return True
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=self.stop_seconds)
        return bool(done)

    async def _loop(self) -> None:
        delay: Answer = 0.0 if self._immediately else None
        while not self._stopping:
            if delay is None:
                await self._pause()
            else:  # 0 too: a job that never awaits must not hold the event loop
                await asyncio.sleep(delay if isinstance(delay, float | int) else 0)
            if self._stopping:
                return
            self._woken.clear()
            self._busy = True
            try:
                delay = await self._job()
            except Exception:  # one failed run must not end the service
                failure_counters.notify(self.name)
                self._logger.log(self._level, self._failure, exc_info=True)
                delay = self._retry
            finally:
                self._busy = False
            if delay is DONE:
                return

    async def _pause(self) -> None:
        """The period, cut short by a wake-up."""
        period = self._period() if callable(self._period) else self._period
        if self._woken.is_set():
            return
        if period is None:
            await self._woken.wait()
            return
        if period <= 0:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(period):
                await self._woken.wait()


async def stop_all(
    services: Iterable[BackgroundService], *, label: str, logger: logging.Logger
) -> None:
    """Stop several services at once, within their bound; one warning for those left."""
    services = list(services)
    ended = await asyncio.gather(*(service.halt() for service in services))
    left = [service for service, done in zip(services, ended, strict=True) if not done]
    if left:
        _left_behind(logger, label, len(left), max(service.stop_seconds for service in left))


def _left_behind(logger: logging.Logger, label: str, count: int, seconds: float) -> None:
    logger.warning(
        "%s: %d background task(s) still ending %.0f s after shutdown asked; "
        "shutting down without them",
        label,
        count,
        seconds,
    )


def _retrieve(task: asyncio.Task[None]) -> None:
    """A task left behind by `stop` may end later: its outcome is taken, never reported."""
    if not task.cancelled():
        task.exception()
