"""`uv run python -m bench.push [--devices 500] [--turns 300] [--dialect postgresql]`

1. Pushes per second: one test event fanned out to N devices and sent through the fake
   APNs server of the tests (HTTP/2, TLS, JWT checked), until every delivery is `sent`.
2. The extra cost per turn of push when no push is due: a run ended through the runner's
   `finish_run` with the push hook registered against the same without, with the user
   having no device, and with a device but watching the thread. Reported: the ending
   transaction's p50, CPU per turn, and how often the sender was woken (a fan-out round
   each, which would be background cost per turn).
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from app.db.models import Device, PushDelivery, PushEvent, Run, Thread, push_presence
from app.db.models.run import RunStatus
from app.lib.time import utcnow
from app.orchestrator.scheduling.runs import finish_run
from app.push import events
from app.push.apns import ApnsClient
from app.push.events import PushHook
from app.push.sender import PushSender
from app.settings import Settings
from app.threads import changes
from app.threads.fence import Lease
from bench.common import add_user_with_agent
from tests.push.conftest import BUNDLE, apns_overrides
from tests.support.databases import (
    create_postgres_database,
    drop_postgres_database,
    migrate,
    sqlite_url,
)
from tests.support.fake_apns import FakeApns


async def pushes_per_second(sessions, settings, postgres: bool, devices: int) -> float:
    async with sessions() as session:
        user, _ = await add_user_with_agent(
            session,
            email="push@bench",
            password_hash="x",
            token=secrets.token_hex(8),
            agent_type="general",
        )
        for _ in range(devices):
            session.add(
                Device(
                    user_id=user.id,
                    token=secrets.token_hex(32),
                    environment="sandbox",
                    bundle_id=BUNDLE,
                )
            )
        session.add(PushEvent(kind="test", event_key="test:bench", user_id=user.id))
        await session.commit()
    client = ApnsClient(settings)
    sender = PushSender(settings, sessions, client, postgres=postgres)
    started = time.perf_counter()
    while await sender.cycle():
        pass
    elapsed = time.perf_counter() - started
    await client.aclose()
    async with sessions() as session:
        sent = await session.scalar(
            select(func.count()).select_from(PushDelivery).where(PushDelivery.status == "sent")
        )
    assert sent == devices, (sent, devices)
    return devices / elapsed


@dataclass
class EndCost:
    wall: list[float]  # the ending transaction (UPDATE ... RETURNING + commit), seconds
    cpu: float  # process CPU per turn, seconds (includes the SQLite driver's thread)
    wakes: int  # times the push sender was woken (each wake is a fan-out round)


async def turn_end_cost(sessions, turns: int, hooked: bool, scene: str) -> EndCost:
    """End `turns` runs through the runner's own `finish_run`, push hook on or off.

    scene "no device": push is on, the user has no device. "watching": the user has a
    device and a live socket on the thread (a presence row, as another process writes)."""
    async with sessions() as session:
        user, agent = await add_user_with_agent(
            session,
            email=f"turn-{hooked}-{scene}@bench",
            password_hash="x",
            token=secrets.token_hex(8),
            agent_type="general",
        )
        thread = Thread(owner_id=user.id, agent_id=agent.id, last_activity_at=utcnow())
        session.add(thread)
        await session.flush()
        if scene == "watching":
            session.add(Device(user_id=user.id, token=secrets.token_hex(32), bundle_id=BUNDLE))
            await session.execute(
                insert(push_presence).values(
                    owner="bench",
                    user_id=user.id,
                    thread_id=thread.id,
                    expires_at=utcnow() + timedelta(hours=1),
                )
            )
        await session.commit()
    hook, wakes = PushHook(), []
    if hooked:
        changes.register_hook(hook)
        events.add_waker(lambda: wakes.append(1))
    times, cpu = [], 0.0
    try:
        for _ in range(turns):
            async with sessions() as session:
                run = Run(
                    thread_id=thread.id, agent_id=agent.id, status="running", lease_owner="bench"
                )
                session.add(run)
                await session.commit()
                started, cpu_started = time.perf_counter(), time.process_time()
                assert await finish_run(session, Lease(run.id, "bench", 0), RunStatus.COMPLETED)
                await session.commit()
                times.append(time.perf_counter() - started)
                cpu += time.process_time() - cpu_started
    finally:
        changes.unregister_hook(hook)
        events._wakers.clear()
    return EndCost(times, cpu / turns, len(wakes))


def report(dialect: str, scene: str, plain: EndCost, hooked: EndCost) -> None:
    p50 = statistics.median
    extra = (p50(hooked.wall) - p50(plain.wall)) * 1000
    print(
        f"{dialect}, {scene}: run-ending transaction p50 {p50(plain.wall) * 1000:.2f} ms "
        f"push off, {p50(hooked.wall) * 1000:.2f} ms push on: {extra:+.2f} ms per turn; "
        f"CPU {plain.cpu * 1000:.2f} -> {hooked.cpu * 1000:.2f} ms "
        f"({(hooked.cpu - plain.cpu) * 1000:+.2f}); sender woken {hooked.wakes} times"
    )


async def main(args: argparse.Namespace, url: str, directory: Path) -> None:
    async with FakeApns(directory) as apns:
        settings = Settings(database_url=url, **apns_overrides(apns))
        engine = create_async_engine(url)
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        postgres = args.dialect == "postgresql"
        rate = await pushes_per_second(sessions, settings, postgres, args.devices)
        print(f"{args.dialect}: {args.devices} pushes at {rate:.0f}/s through the fake APNs")
        for scene in ("no device", "watching"):
            await turn_end_cost(sessions, 20, hooked=False, scene=f"warm {scene}")
            # alternate so drift (caches, WAL growth) hits both sides alike
            plain, hooked = EndCost([], 0.0, 0), EndCost([], 0.0, 0)
            for round_ in range(4):
                for on, total in ((False, plain), (True, hooked)):
                    cost = await turn_end_cost(
                        sessions, args.turns // 4, hooked=on, scene=f"{scene} {round_}"
                    )
                    total.wall += cost.wall
                    total.cpu += cost.cpu / 4
                    total.wakes += cost.wakes
            report(args.dialect, scene, plain, hooked)
        await engine.dispose()


def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as directory:
        name = None
        if args.dialect == "postgresql":
            url, name = create_postgres_database()
        else:
            url = sqlite_url(Path(directory))
        try:
            migrate(url)
            asyncio.run(main(args, url, Path(directory)))
        finally:
            if name:
                drop_postgres_database(name)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=500)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--dialect", choices=("sqlite", "postgresql"), default="sqlite")
    run(parser.parse_args())
