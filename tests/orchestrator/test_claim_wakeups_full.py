"""A run that found every runner slot taken is claimed when a slot frees, not at the
next poll (one slot here)."""

from __future__ import annotations

import pytest

from tests.orchestrator.claim_wakeups import LONG_POLL, waiting_run_starts_when_the_first_ends
from tests.orchestrator.support import OrchestratorApi


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {**LONG_POLL, "runner_max_concurrent_runs": 1}


async def test_a_run_waiting_for_a_slot_starts_when_one_frees(api: OrchestratorApi) -> None:
    await waiting_run_starts_when_the_first_ends(api, same_thread=False)
