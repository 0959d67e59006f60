"""A process whose event loop runs late claims no run beyond RUNNER_BUSY_MIN_RUNS, though
it has slots free: the run stays queued (handed on to the other processes) and starts
once a run of this process ends. Here every lag counts as late (a limit far below any
real lag) and one run may always run."""

from __future__ import annotations

import pytest

from tests.orchestrator.claim_wakeups import LONG_POLL, waiting_run_starts_when_the_first_ends
from tests.orchestrator.support import OrchestratorApi


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
