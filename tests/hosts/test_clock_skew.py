"""An app host whose clock is 30 s ahead (libfaketime): leases must not misfire.

A third server joins on app2 with its wall clock 30 s ahead and claims no runs
(`RUNNER_MAX_CONCURRENT_RUNS=0`: its heartbeat and its reaper still run), so every run
is app1's and the skewed process only judges app1's leases. Runs last longer than a
lease (12 s: tests/hosts/deployment.py), so their leases are renewed while the skewed reaper watches; none may be
taken for expired, and the phones on the skewed host see the turns end as completed.
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

OFFSET_SECONDS = 30


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
        clock_offset=f"+{OFFSET_SECONDS}s",
        env={**app2.env, "RUNNER_MAX_CONCURRENT_RUNS": "0"},
        log=app2.log.with_name("app2-skewed.log"),
        server=None,
    )
    host.start()
    try:
        await host.ready()
        yield host
    finally:
        host.stop()


async def test_a_host_30_s_ahead_takes_no_live_lease_for_expired(
    healed: Deployment, skewed: AppHost
) -> None:
    async with httpx.AsyncClient(base_url=skewed.base_url) as http:
        said = parsedate_to_datetime((await http.get("/api/health")).headers["date"])
    assert said.timestamp() - time.time() > OFFSET_SECONDS - 5, "libfaketime did not apply"

    user = await healed.user()
    started = time.monotonic()
    turns = [await healed.start_turn(user, via, "slow 14") for via in (skewed, healed.host("app1"))]
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
    report(
        f"one host's clock {OFFSET_SECONDS} s ahead", healed.transport, elapsed, "2 turns of 14 s"
    )
