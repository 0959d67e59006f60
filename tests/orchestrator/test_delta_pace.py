"""The delta window widens smoothly with the event loop's lag, between its bounds, and the
probe measures lag as a timer's lateness (driven by a made-up clock: no timings)."""

from __future__ import annotations

import itertools

import pytest

from app.orchestrator.loop.delta_pace import LAG_HIGH, LAG_LOW, DeltaPace
from app.orchestrator.loop.loop_lag import LagProbe, LoopLag


def settled(pace: DeltaPace, lag: float, rounds: int = 200) -> float:
    for _ in range(rounds):
        pace.observe(lag)
    return pace.window


def test_an_idle_loop_keeps_the_least_window() -> None:
    pace = DeltaPace(0.05, 0.15)
    assert pace.window == 0.05
    assert settled(pace, 0.001) == pytest.approx(0.05)


def test_the_window_widens_with_lag_up_to_the_most() -> None:
    pace = DeltaPace(0.05, 0.15)
    windows = [settled(pace, lag) for lag in (LAG_LOW, 0.01, 0.02, 0.03, LAG_HIGH, 1.0)]
    assert windows[0] == pytest.approx(0.05)
    assert all(a < b for a, b in itertools.pairwise(windows[:5]))
    assert windows[4] == pytest.approx(windows[5])  # capped
    midway = (LAG_LOW + LAG_HIGH) / 2
    assert settled(pace, midway) == pytest.approx(0.10)
    assert settled(pace, LAG_HIGH) == pytest.approx(0.15)
    assert settled(pace, 5.0) == pytest.approx(0.15)  # never beyond the bound


def test_one_late_wake_moves_it_a_little_and_recovery_narrows_it_again() -> None:
    pace = DeltaPace(0.05, 0.15)
    pace.observe(1.0)  # a single stall (a GC pause) does not throw the window wide open
    assert 0.05 < pace.window < 0.15
    assert settled(pace, 0.0) == pytest.approx(0.05)


def test_bounds_given_upside_down_keep_the_least() -> None:
    assert settled(DeltaPace(0.1, 0.05), 1.0) == pytest.approx(0.1)


class FakeClock:
    """A loop clock whose every sleep wakes `late` seconds after it should."""

    def __init__(self, late: float) -> None:
        self.now, self.late = 100.0, late

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds + self.late


async def _probe(probe: LagProbe, rounds: int) -> None:
    for _ in range(rounds):
        assert await probe.once() == 0.0  # the next probe at once


async def test_the_probe_feeds_the_timer_lateness_to_the_pace_and_the_loop_lag() -> None:
    pace, loop_lag = DeltaPace(0.05, 0.15), LoopLag()
    clock = FakeClock(late=LAG_HIGH)
    probe = LagProbe(pace.observe, loop_lag.observe, interval=0.05, clock=clock, sleep=clock.sleep)
    await _probe(probe, rounds=200)
    assert pace.lag == pytest.approx(LAG_HIGH)
    assert pace.window == pytest.approx(0.15)
    assert loop_lag.seconds == pytest.approx(LAG_HIGH)
    clock.late = 0.0
    await _probe(probe, rounds=200)
    assert pace.window == pytest.approx(0.05)
    assert loop_lag.seconds == pytest.approx(0.0)


def test_the_loop_lag_follows_the_loop_however_late() -> None:
    """What the runner reads to stop claiming (RUNNER_BUSY_LAG_SECONDS) is not capped
    where the window stops widening: a loop a second behind reads as a second."""
    pace, loop_lag = DeltaPace(0.05, 0.15), LoopLag()
    assert loop_lag.seconds == 0.0
    for _ in range(200):
        pace.observe(1.0)
        loop_lag.observe(1.0)
    assert loop_lag.seconds == pytest.approx(1.0)
    assert pace.lag == pytest.approx(LAG_HIGH)
    for _ in range(200):
        loop_lag.observe(0.001)
    assert loop_lag.seconds == pytest.approx(0.001)
