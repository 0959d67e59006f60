"""Database blips far shorter than the lease cost a few seconds, never a run.

The runner's host loses PostgreSQL for 1 s, then 2 s, then 4 s, mid-turn (the tool runs
through all three, a few seconds apart: cuts closer together compound their backoffs).
TCP's retransmission backoff stretches each cut into a longer silence
of the host's heartbeat and lease renewals; the liveness margin
(`RUNNER_HEARTBEAT_TIMEOUT_SECONDS` and `RUN_LEASE_SECONDS` of tests/hosts/deployment.py)
is larger than that, so the other host takes nothing for dead: the run completes, a few
seconds late, and the other host's heartbeat never stops meanwhile.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.hosts.deployment import SERVER_SETTINGS
from tests.hosts.turns import Deployment, HeartbeatWatch, report

BLIPS = (1, 2, 4)
BETWEEN_SECONDS = 4.0
POSTGRES_PORT = 5432


# On the LISTEN/NOTIFY transport: its wake-ups blip with the database too.
@pytest.mark.parametrize("deployment", ["wake-pg"], indirect=True)
async def test_blips_of_1_2_and_4_s_fail_no_run(healed: Deployment) -> None:
    user = await healed.user()
    turn = await healed.start_turn(user, healed.host("app1"), "slow 20")
    runner = await healed.runner_of(turn)
    survivor = healed.other(runner)
    async with (
        healed.phone(turn, user, runner) as phone,
        HeartbeatWatch(healed, survivor) as beats,
        HeartbeatWatch(healed, runner) as cut_beats,
    ):
        await healed.tool_running(turn)
        silences: list[str] = []  # the cut host's longest heartbeat silence so far
        for seconds in BLIPS:
            healed.network.cut_service(runner.name, "data", POSTGRES_PORT)
            await asyncio.sleep(seconds)
            healed.network.heal_service(runner.name, "data", POSTGRES_PORT)
            await asyncio.sleep(BETWEEN_SECONDS)
            silences.append(f"{seconds} s cut: {cut_beats.longest:.1f} s")
        recovery = await healed.settle(turn, user, phone, runner)
        await healed.assert_clean(turn, phone)
    assert await healed.run_status(turn) == ("completed", None)
    timeout = float(SERVER_SETTINGS["RUNNER_HEARTBEAT_TIMEOUT_SECONDS"])
    period = float(SERVER_SETTINGS["RUNNER_HEARTBEAT_SECONDS"])
    assert beats.longest < timeout, f"the other host's heartbeat stopped {beats.longest:.1f} s"
    report(
        "app host cut from PostgreSQL 1 s, 2 s, 4 s",
        healed.transport,
        recovery,
        f"settled after the last heal; cut host's heartbeat silent at most "
        f"{', '.join(silences)}; other host's at most {beats.longest:.1f} s (period {period} s)",
    )
