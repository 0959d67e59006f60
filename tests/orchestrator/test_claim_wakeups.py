"""A run queued behind its thread's running run is claimed when that run ends (the
runner remembers the runs it heard of and could not claim), not at the next poll."""

from __future__ import annotations

from typing import Any

import pytest

from app.orchestrator.scheduling import claims, notify
from tests.orchestrator.claim_wakeups import LONG_POLL, waiting_run_starts_when_the_first_ends
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Text
from tests.support.statements import statements_everywhere


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return LONG_POLL


async def test_the_threads_next_run_starts_when_the_running_one_ends(
    api: OrchestratorApi,
) -> None:
    await waiting_run_starts_when_the_first_ends(api, same_thread=True)


async def test_a_run_posted_during_a_claim_is_taken_by_the_next_without_asking_about_it(
    api: OrchestratorApi, monkeypatch: pytest.MonkeyPatch, dialect: str
) -> None:
    """A busy process claims while new runs keep coming: a run heard of while a claim is
    under way is left to the next claim (its notice woke the loop), not looked up in the
    database after this one, nor handed on to the other processes."""
    if dialect == "sqlite":
        pytest.skip("SQLite writes one at a time: no post commits while a claim is under way")
    api.llm.script(Text("first answer"), Text("second answer"))
    threads = [await api.new_thread(), await api.new_thread()]
    posted: list[str] = []
    claim = claims.claim_runs

    async def claim_then_post(*args: Any, **kwargs: Any) -> list[Any]:
        claimed = await claim(*args, **kwargs)
        if len(posted) == 1:  # the first run's claim: the second run arrives meanwhile
            posted.append((await api.post(threads[1], "second")).json()["run"]["id"])
        return claimed

    monkeypatch.setattr(claims, "claim_runs", claim_then_post)
    relayed: list[str] = []
    notify.add_relay(relayed.append)
    try:
        with statements_everywhere() as seen:
            posted.append((await api.post(threads[0], "first")).json()["run"]["id"])
            for thread_id, run_id in zip(threads, posted, strict=True):
                assert (await api.wait_run(thread_id, run_id))["status"] == "completed"
    finally:
        notify.remove_relay(relayed.append)
    # still_queued's lookup, which a claim made after taking what it knew of
    asked = [s for s, _ in seen if s.split()[:4] == ["SELECT", "runs.id", "FROM", "runs"]]
    assert len(posted) == 2
    assert asked == []
    assert relayed == []
