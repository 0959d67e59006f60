"""How far behind the event loop is: how late it wakes a timer, smoothed.

One probe sleeps `PROBE_SECONDS` and tells each observer how much later than asked it
woke; the worker probes again and again (a background service, app/lib/background.py).
Two read it: the delta window (delta_pace.py: fewer, fuller frames on a busy loop) and
the busy-loop gate (scheduling/claims.py: no more runs claimed while the loop is late),
which reads `LoopLag`, the plain smoothed lag, also in /metrics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

SMOOTHING = 0.2  # weight of each new sample (~5 samples, a quarter second, to adapt)
PROBE_SECONDS = 0.05

Observer = Callable[[float], None]


def smoothed(previous: float, sample: float) -> float:
    return previous + SMOOTHING * (sample - previous)


class LoopLag:
    """The loop's lag in seconds, smoothed, however late a wake-up was."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def observe(self, lag: float) -> None:
        self.seconds = smoothed(self.seconds, max(0.0, lag))


class LagProbe:
    """Tells its observers how late the loop wakes a timer, every `interval` seconds.
    `clock` and `sleep` are the loop's by default (tests pass their own)."""

    def __init__(
        self,
        *observers: Observer,
        interval: float = PROBE_SECONDS,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.observers, self.interval = observers, interval
        self.clock, self.sleep = clock, sleep

    async def once(self) -> float:
        """One probe: sleep `interval`, tell the observers how late it woke. Run again and
        again by a background service (the worker's); answers 0, its next probe at once
        (this sleep is the one measured)."""
        clock = self.clock or asyncio.get_running_loop().time
        began = clock()
        await self.sleep(self.interval)
        lag = clock() - began - self.interval
        for observe in self.observers:
            observe(lag)
        return 0.0
