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
`DeltaPace` is pure arithmetic on what it is told, so tests drive it with made-up lags.
"""

from __future__ import annotations

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
