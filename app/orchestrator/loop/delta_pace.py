"""How long a streaming reply gathers text before its next `delta` frame: 50 ms when the
process is idle, widened under load up to 150 ms (`STREAM_DELTA_SECONDS`,
`STREAM_DELTA_MAX_SECONDS`).

A delta frame costs the server about the same whatever text it carries (encoding, fan-out,
a socket write, the phone's wake-up): with hundreds of replies streaming at once, frames
and not tokens are the load. So when the process falls behind, each frame carries more
text and there are fewer of them: the text arrives in bigger pieces, a little later,
instead of everything (first tokens of new turns included) queueing behind a flood.

Load is read as the event loop's lag: how late a timer wakes (loop_lag.py), smoothed.
Below `LAG_LOW` the window is the least, from `LAG_HIGH` on the most, linear in between.
`DeltaPace` is pure arithmetic on what it is told, so tests drive it with made-up lags;
`Paced` sends one kind of frame (a reply's text, the arguments of the calls being written)
at that pace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.orchestrator.loop.loop_lag import smoothed

LAG_LOW = 0.005  # a loop this late is busy but keeping up
LAG_HIGH = 0.05  # this late: every frame saved matters


class DeltaPace:
    def __init__(self, least: float, most: float) -> None:
        self.least, self.most = least, max(least, most)
        self.lag = 0.0  # smoothed, seconds, each sample capped at LAG_HIGH

    def observe(self, lag: float) -> None:
        """One measured lag of the event loop (seconds a timer woke late). A sample counts
        at most `LAG_HIGH`: one long stall (a GC pause) moves the window a little, and
        the window narrows as soon as the loop keeps up again."""
        self.lag = smoothed(self.lag, min(max(0.0, lag), LAG_HIGH))

    @property
    def window(self) -> float:
        """Seconds between two delta frames of one reply, now."""
        share = (self.lag - LAG_LOW) / (LAG_HIGH - LAG_LOW)
        share = min(1.0, max(0.0, share))
        return self.least + share * (self.most - self.least)


class Paced:
    """Frames of one stream, at most one per window: `soon()` sends what is unsent now when
    a window has passed since the last frame, else once it has (one timer at a time).
    `send` sends what is unsent and says whether it sent anything."""

    def __init__(self, window: Callable[[], float], send: Callable[[], bool]) -> None:
        self._window, self._send = window, send
        self._sent_at = -1.0
        self._timer: asyncio.TimerHandle | None = None

    def soon(self) -> None:
        if self._timer is not None:
            return  # what is unsent goes with the frame already due
        loop = asyncio.get_running_loop()
        wait = self._sent_at + self._window() - loop.time()
        if wait <= 0:
            self.now()
        else:
            self._timer = loop.call_later(wait, self.now)

    def now(self) -> None:
        """Send what is unsent at once (the stream ends): a frame due later is not."""
        self.cancel()
        if self._send():
            self._sent_at = asyncio.get_running_loop().time()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def reset(self) -> None:
        """A new stream: nothing due, no frame sent yet."""
        self.cancel()
        self._sent_at = -1.0
