"""A run queued behind its thread's running run is claimed when that run ends (the
runner remembers the runs it heard of and could not claim), not at the next poll."""

from __future__ import annotations

import pytest

from tests.orchestrator.claim_wakeups import LONG_POLL, waiting_run_starts_when_the_first_ends
from tests.orchestrator.support import OrchestratorApi


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return LONG_POLL


async def test_the_threads_next_run_starts_when_the_running_one_ends(
    api: OrchestratorApi,
) -> None:
    await waiting_run_starts_when_the_first_ends(api, same_thread=True)
