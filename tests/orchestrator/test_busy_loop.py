"""A process whose event loop runs late claims no run beyond RUNNER_BUSY_MIN_RUNS, though
it has slots free: the run stays queued (handed on to the other processes) and starts
once a run of this process ends. Here every lag counts as late (a limit far below any
real lag) and one run may always run. Half as late, it claims in steps, and a run left
between two steps is told its place like on a full house."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.orchestrator.scheduling import claims, notify
from app.orchestrator.worker import RunWorker
from app.realtime.events import RunFrame
from app.settings import Settings
from tests.orchestrator.claim_wakeups import LONG_POLL, waiting_run_starts_when_the_first_ends
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, ToolCalls


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {
        **LONG_POLL,
        "runner_max_concurrent_runs": 1000,  # slots are not what holds the second run
        "runner_busy_lag_seconds": 1e-9,
        "runner_busy_min_runs": 1,
    }


async def test_a_late_loop_leaves_new_runs_queued_until_a_run_ends(api: OrchestratorApi) -> None:
    await waiting_run_starts_when_the_first_ends(api, same_thread=False)


class HalfLate:
    """A loop lag held at three quarters of RUNNER_BUSY_LAG_SECONDS: claims go in steps."""

    def __init__(self, limit: float) -> None:
        self.seconds = limit * 0.75


async def test_a_run_left_between_two_steps_is_told_its_place(
    api: OrchestratorApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner: RunWorker = api.app.state.run_worker
    monkeypatch.setattr(runner.deps, "loop_lag", HalfLate(runner.settings.runner_busy_lag_seconds))
    monkeypatch.setattr(claims, "STEP_PAUSE_SECONDS", 30.0)  # no next step during the test
    api.llm.script(ToolCalls(Call("test_slow", {"action": "wait", "seconds": 60})))
    threads = [await api.new_thread(), await api.new_thread()]
    # Both runs reach the runner in one wake-up, as in a burst of posts.
    notify.remove_listener(runner._on_notify)
    try:
        posted = [(await api.post(t, "go")).json()["run"]["id"] for t in threads]
    finally:
        notify.add_listener(runner._on_notify)
    for run_id in posted:
        runner._on_notify("queued", UUID(run_id), True)

    def told(frame: object) -> bool:
        return isinstance(frame, RunFrame) and frame.position is not None

    frame = await api.frames.wait_for(told, timeout=3)
    assert isinstance(frame, RunFrame)
    claimed = [run_id for run_id in posted if UUID(run_id) in runner.executions]
    assert len(claimed) == 1  # one step: one run
    [left] = set(posted) - set(claimed)
    assert (str(frame.run.id), frame.run.status, frame.position) == (left, "queued", 1)


def _worker(**settings: object) -> RunWorker:
    values = {"database_url": "sqlite+aiosqlite:///:memory:", "runner_busy_min_runs": 4}
    return RunWorker(Settings(**(values | settings)), async_sessionmaker())


def _busy(worker: RunWorker, runs: int, lag: float) -> tuple[int, bool]:
    """`free_slots` with `runs` runs holding slots and the loop `lag` seconds late."""
    worker.executions = {uuid4(): None for _ in range(runs)}  # type: ignore[misc]
    worker.deps.loop_lag.seconds = lag
    return worker.claims.free_slots()


async def test_claims_shrink_to_steps_then_stop_as_the_loop_falls_behind() -> None:
    worker = _worker(runner_max_concurrent_runs=100, runner_busy_lag_seconds=0.05)
    try:
        assert _busy(worker, 10, 0.0) == (90, False)  # keeping up: every free slot
        assert _busy(worker, 10, 0.03) == (4, True)  # half late: a step, then look again
        assert _busy(worker, 2, 0.05) == (2, False)  # late: up to RUNNER_BUSY_MIN_RUNS
        assert _busy(worker, 4, 0.2)[0] <= 0  # late, with that many under way: none
        assert _busy(worker, 99, 0.03) == (1, False)  # fewer free than a step
    finally:
        await worker.deps.http.aclose()


async def test_with_the_gate_off_only_the_slots_count() -> None:
    worker = _worker(runner_max_concurrent_runs=8, runner_busy_lag_seconds=0)
    try:
        assert _busy(worker, 3, 5.0) == (5, False)
        assert _busy(worker, 8, 5.0) == (0, False)
    finally:
        await worker.deps.http.aclose()
