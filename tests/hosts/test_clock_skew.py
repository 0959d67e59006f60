"""An app host whose clock is 60 s behind (libfaketime): leases must not misfire, and
every run's times read on one clock.

A third server joins on app2 with its wall clock 60 s behind and runs runs like the
others. Its leases, written by a clock a minute late, are judged by app1's reaper (whose
clock is a minute ahead of it) and its reaper judges theirs; runs last longer than a
lease (12 s: tests/hosts/deployment.py), so leases are renewed while the other watches;
none may be taken for expired, the phones on the skewed host see the turns end as
completed, and every run starts before it finishes, whichever host ran it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from email.utils import parsedate_to_datetime

import httpx
import pytest

from tests.hosts.deployment import FAKETIME_LIBRARY, AppHost
from tests.hosts.turns import Deployment, report

OFFSET_SECONDS = -60


@pytest.fixture
async def skewed(healed: Deployment) -> AsyncIterator[AppHost]:
    if not os.path.exists(FAKETIME_LIBRARY):  # noqa: ASYNC240 - once, at setup
        reason = f"libfaketime is not installed ({FAKETIME_LIBRARY}): apt-get install faketime"
        if os.environ.get("REQUIRE_NETNS"):
            pytest.fail(reason)
        pytest.skip(reason)
    app2 = healed.host("app2")
    host = dataclasses.replace(
        app2,
        port=app2.port + 10,
        clock_offset=f"{OFFSET_SECONDS:+d}s",
        log=app2.log.with_name("app2-skewed.log"),
        server=None,
    )
    host.start()
    try:
        await host.ready()
        yield host
    finally:
        host.stop()


# One transport: leases and run times are the database clock's, whichever wakes the hosts.
@pytest.mark.parametrize("deployment", ["wake-pg"], indirect=True)
async def test_a_host_60_s_behind_takes_no_live_lease_and_times_its_runs_right(
    healed: Deployment, skewed: AppHost
) -> None:
    async with httpx.AsyncClient(base_url=skewed.base_url) as http:
        said = parsedate_to_datetime((await http.get("/api/health")).headers["date"])
    assert said.timestamp() - time.time() < OFFSET_SECONDS + 5, "libfaketime did not apply"

    user = await healed.user()
    started = time.monotonic()
    turns = [await healed.start_turn(user, via, "slow 14") for via in (skewed, skewed)]
    turns.append(await healed.start_turn(user, healed.host("app1"), "slow 14"))
    owners = [await healed.lease_owner(turn) for turn in turns]
    async with AsyncExitStack() as stack:
        phones = [
            await stack.enter_async_context(healed.phone(turn, user, skewed)) for turn in turns
        ]
        await asyncio.gather(
            *(healed.settle(t, user, p, skewed) for t, p in zip(turns, phones, strict=True))
        )
        elapsed = time.monotonic() - started
        for turn, phone in zip(turns, phones, strict=True):
            await healed.assert_clean(turn, phone)
    for turn in turns:
        assert await healed.run_status(turn) == ("completed", None)
    assert any(skewed.owns(owner) for owner in owners), "the skewed host ran no run"
    times = await healed.sql(
        "SELECT started_at, finished_at FROM runs WHERE id = ANY(CAST(:ids AS uuid[]))",
        ids=[turn.run_id for turn in turns],
    )
    assert len(times) == len(turns) and all(start <= end for start, end in times), times
    ran = sum(skewed.owns(owner) for owner in owners)
    report(
        f"one host's clock {-OFFSET_SECONDS} s behind",
        healed.transport,
        elapsed,
        f"3 turns of 14 s, {ran} run by the skewed host",
    )
