"""Partitions between hosts, mid-turn: nothing lost, nothing written twice.

Each scenario starts a turn whose tool runs for a few seconds, finds the host whose
runner claimed it, applies a fault while the tool's cell is `in_progress`, lifts it, and
then requires (tests/hosts/turns.py): every run ended, no cell left `in_progress`, the
phone's state equal to a fresh fetch, no write to a run or its messages after the run
ended, no frame twice. The time from the fault to that state is printed (RECOVERY …).
"""

from __future__ import annotations

import asyncio

from tests.hosts.turns import Deployment, execution_over, report, runs_ended_on

CUT_SECONDS = 10


async def test_an_app_host_cut_from_postgresql_mid_turn(healed: Deployment) -> None:
    """The runner's host loses the database for 10 s: the other host sees its heartbeat
    stop and fails the run (its cell ends as `failure`); when the link heals, the cut
    runner writes nothing more into the ended run."""
    user = await healed.user()
    turn = await healed.start_turn(user, healed.host("app1"), "slow 4")
    runner = await healed.runner_of(turn)
    survivor = healed.other(runner)
    before = await runs_ended_on(runner)
    async with healed.phone(turn, user, runner) as phone:
        await healed.tool_running(turn)
        healed.network.cut(runner.name, "data")
        settled = asyncio.create_task(healed.settle(turn, user, phone, survivor))
        await asyncio.sleep(CUT_SECONDS)  # the scenario: a 10 s partition
        healed.network.heal(runner.name, "data")
        recovery = await settled
        await execution_over(runner, before, timeout=45)
        await healed.settle(turn, user, phone, survivor)  # still, after the heal
        await healed.assert_clean(turn, phone)
    status, error = await healed.run_status(turn)
    assert status == "failed", error
    report("app host cut from PostgreSQL 10 s", healed.transport, recovery)
