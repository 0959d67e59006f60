"""The two small helpers every background loop and listener list of the app is made of:
app/lib/background.py (a periodic job: its rhythm, its failures, its bounded stop) and
app/lib/listeners.py (a registry told in order)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from prometheus_client import REGISTRY

from app.lib.background import DONE, Answer, BackgroundService, stop_all
from app.lib.listeners import Listeners
from app.observability import metrics  # noqa: F401  (registers the failure counter)

logger = logging.getLogger("tests.background")


def _errors(service: str) -> float:
    value = REGISTRY.get_sample_value("toolcells_background_errors_total", {"service": service})
    return value or 0.0


class Job:
    """Counts its runs; fails the runs whose number is in `failing`."""

    def __init__(self, failing: tuple[int, ...] = (), answer: Answer = None) -> None:
        self.runs, self.failing, self.answer = 0, failing, answer
        self.ran = asyncio.Event()

    async def __call__(self) -> Answer:
        self.runs += 1
        self.ran.set()
        if self.runs in self.failing:
            raise RuntimeError(f"run {self.runs} failed")
        return self.answer


async def _until(condition: Any, seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.005)):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("not within the time")


async def test_it_runs_every_period_and_at_once_when_woken() -> None:
    job = Job()
    service = BackgroundService("bg-period", job, period=0.02, logger=logger)
    service.start()
    try:
        await asyncio.sleep(0.01)
        assert job.runs == 0  # not `immediately`: the first run waits its period
        await _until(lambda: job.runs >= 3)
    finally:
        assert await service.stop()
    slow = Job()
    woken = BackgroundService("bg-wake", slow, period=60, logger=logger, immediately=True)
    woken.start()
    try:
        await _until(lambda: slow.runs == 1)  # at once
        woken.wake()
        await _until(lambda: slow.runs == 2)  # long before the period
    finally:
        assert await woken.stop()
    assert not woken.running


async def test_a_failed_run_is_logged_once_counted_and_the_service_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    job = Job(failing=(1, 2))
    before = _errors("bg-failing")
    service = BackgroundService(
        "bg-failing", job, period=0.01, logger=logger, failure="the job failed", immediately=True
    )
    caplog.set_level(logging.WARNING, logger="tests.background")
    service.start()
    try:
        await _until(lambda: job.runs >= 4)
    finally:
        await service.stop()
    failures = [r for r in caplog.records if r.name == "tests.background"]
    assert [(r.levelno, r.getMessage()) for r in failures] == [
        (logging.ERROR, "the job failed")
    ] * 2
    assert all(r.exc_info and "run " in str(r.exc_info[1]) for r in failures)  # with its error
    assert _errors("bg-failing") == before + 2


async def test_the_job_sets_its_next_wait_or_ends_the_service() -> None:
    again = Job(answer=0.0)  # at once, however long the period
    service = BackgroundService("bg-again", again, period=60, logger=logger, immediately=True)
    service.start()
    try:
        await _until(lambda: again.runs >= 5)
    finally:
        await service.stop()
    done = Job(answer=DONE)
    ending = BackgroundService("bg-done", done, period=0.001, logger=logger, immediately=True)
    ending.start()
    await _until(lambda: not ending.running)
    assert done.runs == 1
    assert await ending.stop()


async def test_a_delay_answered_is_waited_in_full_and_a_failure_waits_the_retry() -> None:
    held = Job(answer=0.2)  # a back-off: a wake-up meanwhile waits for its end
    service = BackgroundService("bg-held", held, period=None, logger=logger, immediately=True)
    service.start()
    try:
        await _until(lambda: held.runs == 1)
        service.wake()
        await asyncio.sleep(0.05)
        assert held.runs == 1
        await _until(lambda: held.runs == 2)
    finally:
        await service.stop()
    failing = Job(failing=(1,))
    retried = BackgroundService(
        "bg-retry", failing, period=None, logger=logger, immediately=True, retry=0.01
    )
    retried.start()
    try:  # without a wake-up (period None), only the retry runs it again
        await _until(lambda: failing.runs == 2)
    finally:
        await retried.stop()


async def test_stop_lets_a_run_under_way_finish_within_its_grace() -> None:
    finished = asyncio.Event()

    async def slow() -> None:
        await asyncio.sleep(0.05)
        finished.set()

    service = BackgroundService(
        "bg-grace", slow, period=60, logger=logger, immediately=True, grace=5
    )
    service.start()
    await asyncio.sleep(0.01)
    assert await service.stop()
    assert finished.is_set()  # not cancelled halfway


async def test_stop_is_bounded_even_when_the_job_ignores_its_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A job whose cleanup waits on something that never comes holds its cancellation
    (as a shielded cleanup does): the stop gives up after `stop_seconds`, says so, and
    returns; a second cancel ends the task."""
    holding = asyncio.Event()
    release = asyncio.Event()

    async def stubborn() -> None:
        holding.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await release.wait()  # a cleanup that does not end
            raise

    service = BackgroundService(
        "bg-stubborn", stubborn, period=None, logger=logger, immediately=True, stop_seconds=0.1
    )
    service.start()
    await holding.wait()
    caplog.set_level(logging.WARNING, logger="tests.background")
    async with asyncio.timeout(5):
        assert not await service.stop()
    assert "bg-stubborn: 1 background task(s) still ending" in caplog.text
    assert service.running
    release.set()
    await _until(lambda: not service.running)


async def test_stop_all_stops_them_together_with_one_line_for_those_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await release.wait()
            raise

    services = [
        BackgroundService(
            f"bg-all-{i}", stubborn, period=None, logger=logger, immediately=True, stop_seconds=0.2
        )
        for i in range(3)
    ]
    quiet = BackgroundService("bg-all-quiet", Job(), period=60, logger=logger)
    for service in [*services, quiet]:
        service.start()
    await asyncio.sleep(0.01)
    caplog.set_level(logging.WARNING, logger="tests.background")
    loop = asyncio.get_running_loop()
    began = loop.time()
    await stop_all([*services, quiet], label="group", logger=logger)
    assert loop.time() - began < 1.0  # together, not one bound after the other
    assert "group: 3 background task(s) still ending 0 s after shutdown asked" in caplog.text
    assert not quiet.running
    release.set()
    await _until(lambda: not any(s.running for s in services))


# -- listeners ----------------------------------------------------------------------------
class Sink:
    def __init__(self, name: str, told: list[str], fails: bool = False) -> None:
        self.name, self.told, self.fails = name, told, fails

    def changed(self, what: str) -> None:
        self.told.append(f"{self.name}:{what}")
        if self.fails:
            raise RuntimeError("broken sink")


def test_listeners_are_told_in_order_and_removed() -> None:
    told: list[str] = []
    listeners: Listeners[Any] = Listeners("listener")
    first, second = (lambda what: told.append(f"a:{what}")), (lambda what: told.append(f"b:{what}"))
    assert not listeners
    listeners.add(first)
    listeners.add(second)
    listeners.notify("x")
    listeners.remove(first)
    listeners.remove(first)  # not there: nothing
    listeners.notify("y")
    assert told == ["a:x", "b:x", "b:y"]
    assert len(listeners) == 1 and list(listeners) == [second]
    listeners.clear()
    assert not listeners


def test_with_a_logger_a_failing_listener_is_logged_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    told: list[str] = []
    sinks: Listeners[Sink] = Listeners("change sink", logger=logger)
    for sink in (Sink("a", told), Sink("b", told, fails=True), Sink("c", told)):
        sinks.add(sink)
    with caplog.at_level(logging.ERROR, logger="tests.background"):
        sinks.emit("changed", "x")
    assert told == ["a:x", "b:x", "c:x"]
    [record] = [r for r in caplog.records if r.name == "tests.background"]
    assert record.getMessage().startswith("change sink <") and record.exc_info


def test_without_a_logger_a_failure_propagates_and_stops_the_telling() -> None:
    told: list[str] = []
    sinks: Listeners[Sink] = Listeners("sink")
    for sink in (Sink("a", told), Sink("b", told, fails=True), Sink("c", told)):
        sinks.add(sink)
    with pytest.raises(RuntimeError, match="broken sink"):
        sinks.emit("changed", "x")
    assert told == ["a:x", "b:x"]


def test_a_listener_added_while_telling_hears_the_next_telling() -> None:
    told: list[str] = []
    listeners: Listeners[Any] = Listeners("listener")

    def late(what: str) -> None:
        told.append(f"late:{what}")

    def adding(what: str) -> None:
        told.append(f"adding:{what}")
        listeners.add(late)

    listeners.add(adding)
    listeners.notify("1")
    listeners.remove(adding)
    listeners.notify("2")
    assert told == ["adding:1", "late:2"]
