"""Partitions between hosts, mid-turn: nothing lost, nothing written twice.

Each scenario starts a turn whose tool runs for a few seconds, finds the host whose
runner claimed it, applies a fault while the tool's cell is `in_progress`, lifts it, and
then requires (tests/hosts/turns.py): every run ended, no cell left `in_progress`, the
phone's state equal to a fresh fetch, no write to a run or its messages after the run
ended, no frame twice. The time from the fault to that state is printed (RECOVERY …).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.hosts.deployment import SERVER_SETTINGS
from tests.hosts.turns import (
    Deployment,
    HeartbeatWatch,
    Turn,
    execution_over,
    report,
    runs_ended_on,
)
from tests.support.processes import until

CUT_SECONDS = 15  # past the heartbeat timeout and the lease (tests/hosts/deployment.py)
LONG_CUT_SECONDS = 3 * float(SERVER_SETTINGS["RUN_LEASE_SECONDS"])
REDIS_CUT_SECONDS = 6
REDIS_PORT = 6379
POSTGRES_PORT = 5432  # only PostgreSQL: Redis, on the same data host, still answers
PUSH_POLL_SECONDS = 1  # the servers' PUSH_POLL_SECONDS (tests/hosts/conftest.py)


# On the LISTEN/NOTIFY transport only: its wake-ups are cut with the database (with Redis
# they are not, and the Redis cut below has a test of its own); one transport keeps the
# suite's time (three leases of cut each).
@pytest.mark.parametrize("deployment", ["wake-pg"], indirect=True)
async def test_an_app_host_cut_from_postgresql_mid_turn(healed: Deployment) -> None:
    """The runner's host loses the database for three leases: the other host sees its heartbeat
    stop and fails the run (its cell ends as `failure`); when the link heals, the cut
    runner writes nothing more into the ended run. Meanwhile the other host beats on and
    a turn it runs during the cut completes."""
    user = await healed.user()
    turn = await healed.start_turn(user, healed.host("app1"), "slow 4")
    runner = await healed.runner_of(turn)
    survivor = healed.other(runner)
    before = await runs_ended_on(runner)
    async with healed.phone(turn, user, runner) as phone, HeartbeatWatch(healed, survivor) as beats:
        await healed.tool_running(turn)
        healed.network.cut_service(runner.name, "data", POSTGRES_PORT)
        settled = asyncio.create_task(healed.settle(turn, user, phone, survivor))
        during = await healed.start_turn(user, survivor, "slow 2")  # only it can claim now
        await asyncio.sleep(LONG_CUT_SECONDS)
        healed.network.heal_service(runner.name, "data", POSTGRES_PORT)
        recovery = await settled
        await execution_over(runner, before, timeout=45)
        await healed.settle(turn, user, phone, survivor)  # still, after the heal
        await healed.assert_clean(turn, phone)
    status, error = await healed.run_status(turn)
    assert status == "failed", error
    assert await healed.run_status(during) == ("completed", None)
    assert beats.longest < float(SERVER_SETTINGS["RUNNER_HEARTBEAT_TIMEOUT_SECONDS"])
    report(
        f"app host cut from PostgreSQL {LONG_CUT_SECONDS:.0f} s (three leases)",
        healed.transport,
        recovery,
        f"other host's heartbeat at most {beats.longest:.1f} s old",
    )


@pytest.mark.parametrize("deployment", ["wake-redis"], indirect=True)
async def test_an_app_host_cut_from_redis_mid_turn(healed: Deployment) -> None:
    """The runner's host loses Redis (not PostgreSQL) for 6 s: its run goes on and ends,
    its frames are lost to pub/sub, and the phone gets them from the database once Redis
    answers again. (The PostgreSQL transport has no Redis to lose.)"""
    user = await healed.user()
    turn = await healed.start_turn(user, healed.host("app1"), "slow 3")
    runner = await healed.runner_of(turn)
    async with healed.phone(turn, user, runner) as phone:
        await healed.tool_running(turn)
        started = time.monotonic()
        healed.network.cut_service(runner.name, "data", REDIS_PORT)
        await asyncio.sleep(REDIS_CUT_SECONDS)
        healed.network.heal_service(runner.name, "data", REDIS_PORT)
        healed_at = time.monotonic()
        await healed.settle(turn, user, phone, runner)
        await healed.assert_clean(turn, phone)
    assert await healed.run_status(turn) == ("completed", None)
    report(
        f"app host cut from Redis {REDIS_CUT_SECONDS} s",
        healed.transport,
        time.monotonic() - healed_at,
        f"after the heal; {time.monotonic() - started:.1f} s after the cut",
    )


async def test_an_app_host_cut_from_its_clients_mid_turn(healed: Deployment) -> None:
    """The phones lose the runner's host (the host still reaches the database, Redis and
    the model): the phone's pings go unanswered, it resumes on the other host with its
    last seq, and the run, untouched, ends there for it."""
    user = await healed.user()
    turn = await healed.start_turn(user, healed.host("app1"), "slow 4")
    runner = await healed.runner_of(turn)
    survivor = healed.other(runner)
    async with healed.phone(turn, user, runner) as phone:
        await healed.tool_running(turn)
        started = time.monotonic()
        healed.network.cut(runner.name, "clients")
        await healed.settle(turn, user, phone, survivor)
        recovery = time.monotonic() - started
        healed.network.heal(runner.name, "clients")
        await healed.assert_clean(turn, phone)
        assert phone.host_url == survivor.ws_url
    assert await healed.run_status(turn) == ("completed", None)
    report("app host cut from its clients", healed.transport, recovery)


# Push is claimed and sent from the database by each host's sender, whatever carries the
# wake-ups: one transport is enough (the cut mid-turn above runs on both).
@pytest.mark.parametrize("deployment", ["wake-pg"], indirect=True)
async def test_an_unwatched_turn_cut_from_postgresql_is_pushed_once(healed: Deployment) -> None:
    """Nobody watches the thread, a phone is registered for push: the survivor's failing
    the run is one alert; when the link heals the cut runner, fenced, ends nothing and
    pushes nothing more, and neither host's push sender sends that alert again."""
    user = await healed.user()
    await healed.register_device(user, healed.host("app1"))
    turn = await healed.start_turn(user, healed.host("app1"), "slow 4")
    runner = await healed.runner_of(turn)
    survivor = healed.other(runner)
    before = await runs_ended_on(runner)
    await healed.tool_running(turn)
    started = time.monotonic()
    healed.network.cut_service(runner.name, "data", POSTGRES_PORT)
    await until(lambda: _pushed(healed, turn), timeout=CUT_SECONDS)
    pushed = time.monotonic() - started
    await asyncio.sleep(CUT_SECONDS - pushed)  # the rest of the partition
    healed.network.heal_service(runner.name, "data", POSTGRES_PORT)
    await execution_over(runner, before, timeout=45)
    await asyncio.sleep(3 * PUSH_POLL_SECONDS)  # both senders poll their outbox meanwhile
    async with healed.phone(turn, user, survivor) as phone:
        await healed.settle(turn, user, phone, survivor)
        await healed.assert_clean(turn, phone)
    assert healed.pushes(turn) == [(turn.run_id, "run_failed")]
    report("unwatched turn cut from PostgreSQL: its one push", healed.transport, pushed)


async def _pushed(deployment: Deployment, turn: Turn) -> bool:
    return bool(deployment.pushes(turn))
